// The kernel-socket transport (esock::ksock) behind the tools' Conn: a thin forwarding layer.
#include <chrono>
#include <thread>

#include "conn_backends.h"
#include "esock/ksock/endpoint.h"
#include "tool_common.h"

namespace esock::tools {

namespace {

class KsockConn final : public Conn {
 public:
  explicit KsockConn(std::unique_ptr<ksock::Endpoint> ep) : ep_(std::move(ep)) {}

  int post_send(std::uint64_t wr_id, std::span<const ddp::Sge> sg) override {
    return ep_->post_send(wr_id, sg);
  }
  int post_recv(std::uint64_t wr_id, std::span<const ddp::Sge> sg) override {
    return ep_->post_recv(wr_id, sg);
  }
  int post_write(std::uint64_t wr_id, std::span<const ddp::Sge> sg, ddp::stag_t rkey,
                 std::uint64_t remote_to) override {
    return ep_->post_write(wr_id, sg, rkey, remote_to);
  }
  int post_read(std::uint64_t wr_id, std::span<const ddp::Sge> sink, ddp::stag_t rkey,
                std::uint64_t remote_to) override {
    return ep_->post_read(wr_id, sink, rkey, remote_to);
  }
  std::size_t poll_send_cq(std::span<ddp::Completion> out) override {
    return ep_->poll_send_cq(out);
  }
  std::size_t poll_recv_cq(std::span<ddp::Completion> out) override {
    return ep_->poll_recv_cq(out);
  }
  bool progress(int timeout_ms) override { return ep_->progress(timeout_ms); }
  void close(int timeout_ms) override { ep_->close(timeout_ms); }
  const mpa::Negotiated& negotiated() const override { return ep_->negotiated(); }
  const std::string& error() const override { return ep_->error(); }
  bool alive() const override { return ep_->alive(); }

 private:
  std::unique_ptr<ksock::Endpoint> ep_;
};

class KsockTransport final : public Transport {
 public:
  explicit KsockTransport(const ConnArgs& a) {
    opts_.qp = a.qp;
    opts_.timeout_ms = a.timeout_ms;
    opts_.cq_depth = a.cq_depth;
  }

  std::unique_ptr<Conn> connect(const std::string& host, std::uint16_t port, const mpa::Config& cfg,
                                std::string* why) override {
    ksock::Options o = opts_;
    o.mpa = cfg;
    auto ep = ksock::Endpoint::connect(ctx_, host, port, o, why);
    return ep ? std::make_unique<KsockConn>(std::move(ep)) : nullptr;
  }
  bool listen(const std::string& addr, std::uint16_t port, std::string* why) override {
    listener_ = ksock::Listener::listen(addr, port, why);
    addr_ = addr;
    return listener_ != nullptr;
  }
  std::unique_ptr<Conn> accept(const mpa::Config& cfg, std::string* why) override {
    if (!listener_) {
      *why = "not listening";
      return nullptr;
    }
    ksock::Options o = opts_;
    o.mpa = cfg;
    auto ep = listener_->accept(ctx_, o, why);
    return ep ? std::make_unique<KsockConn>(std::move(ep)) : nullptr;
  }
  // The kernel answers the peer meanwhile.
  void idle(int ms) override { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }
  std::string describe() const override {
    return listener_ ? addr_ + ":" + std::to_string(listener_->port()) : "kernel TCP";
  }

 private:
  ksock::Options opts_;
  std::unique_ptr<ksock::Listener> listener_;
  std::string addr_;
};

}  // namespace

std::unique_ptr<Transport> make_ksock_transport(const ConnArgs& a, std::string*) {
  return std::make_unique<KsockTransport>(a);
}

}  // namespace esock::tools
