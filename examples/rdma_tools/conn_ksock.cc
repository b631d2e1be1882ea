// The kernel-socket transport (esock::ksock) behind the tools' Conn: a thin forwarding layer.
#include <chrono>
#include <thread>

#include "conn_backends.h"
#include "esock/ksock/endpoint.h"
#include "tool_common.h"

namespace esock::tools {

namespace {

class KsockConn final : public ForwardingConn<ksock::Endpoint> {
 public:
  using ForwardingConn::ForwardingConn;
  bool progress(int timeout_ms) override { return ep_->progress(timeout_ms); }
  void close(int timeout_ms) override { ep_->close(timeout_ms); }
  bool alive() const override { return ep_->alive(); }
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
