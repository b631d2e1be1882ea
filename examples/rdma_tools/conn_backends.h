// The Transport implementations behind Transport::create (conn_ksock.cc, conn_utcp.cc).
#pragma once

#include <memory>
#include <string>

#include "conn.h"

namespace esock::tools {

struct ConnArgs;

// The verbs and CQ calls of a Conn, forwarded to an endpoint type with the same API
// (ksock::Endpoint, utcp::Endpoint); a backend adds progress, close and the state calls.
template <class Endpoint>
class ForwardingConn : public Conn {
 public:
  explicit ForwardingConn(std::unique_ptr<Endpoint> ep) : ep_(std::move(ep)) {}

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
  const mpa::Negotiated& negotiated() const override { return ep_->negotiated(); }
  const std::string& error() const override { return ep_->error(); }

 protected:
  std::unique_ptr<Endpoint> ep_;
};

std::unique_ptr<Transport> make_ksock_transport(const ConnArgs& a, std::string* why);
// Without DPDK in the build this fails with a message saying so.
std::unique_ptr<Transport> make_utcp_transport(const ConnArgs& a, std::string* why);

}  // namespace esock::tools
