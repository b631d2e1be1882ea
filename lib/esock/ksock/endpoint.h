// An iWARP endpoint over a connected kernel TCP socket: the portable "user-level DDP"
// transport. Verbs-like: post work requests, then drive progress() and poll the completion
// queues. Progress happens only inside calls (no threads), so one thread owns an endpoint.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "ddp/cq.h"
#include "ddp/qp.h"
#include "esock/ksock/context.h"
#include "esock/rnic/connection.h"
#include "mpa/negotiator.h"

namespace esock::ksock {

struct Options {
  mpa::Config mpa;         // initiator/responder is set by connect()/accept()
  ddp::QpConfig qp;        // pd is taken from the context
  int timeout_ms = 10000;  // TCP connect and MPA negotiation
  std::size_t cq_depth = 4096;
};

class Endpoint {
 public:
  // Connects over TCP and negotiates MPA as the initiator. On failure returns null and sets *why.
  static std::unique_ptr<Endpoint> connect(Context& ctx, const std::string& host,
                                           std::uint16_t port, Options opts, std::string* why);
  // Takes a connected TCP socket and negotiates MPA as the responder (used by Listener).
  static std::unique_ptr<Endpoint> accept_fd(Context& ctx, int fd, Options opts, std::string* why);
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  // Work requests: 0 or an errno value (see ddp::Qp).
  int post_send(std::uint64_t wr_id, std::span<const ddp::Sge> sg, bool solicited = false,
                ddp::stag_t invalidate = 0);
  int post_recv(std::uint64_t wr_id, std::span<const ddp::Sge> sg);
  int post_write(std::uint64_t wr_id, std::span<const ddp::Sge> sg, ddp::stag_t rkey,
                 std::uint64_t remote_to);
  int post_read(std::uint64_t wr_id, std::span<const ddp::Sge> sink, ddp::stag_t rkey,
                std::uint64_t remote_to);

  std::size_t poll_send_cq(std::span<ddp::Completion> out) { return send_cq_.poll(out); }
  std::size_t poll_recv_cq(std::span<ddp::Completion> out) { return recv_cq_.poll(out); }

  // Reads what the socket has, writes what the queue pair has framed, waiting up to
  // timeout_ms for the socket when there is nothing to do. False once the stream is over.
  bool progress(int timeout_ms);
  // Drives progress until a completion arrives on the send (or receive) queue.
  bool wait_send(ddp::Completion& out, int timeout_ms) { return wait(send_cq_, out, timeout_ms); }
  bool wait_recv(ddp::Completion& out, int timeout_ms) { return wait(recv_cq_, out, timeout_ms); }

  // Orderly close: sends what is queued, then FIN; waits up to timeout_ms for the peer's FIN.
  void close(int timeout_ms = 1000);

  int fd() const { return fd_; }
  const mpa::Negotiated& negotiated() const { return conn_.negotiated(); }
  rnic::Connection& connection() { return conn_; }
  const std::string& error() const { return conn_.error(); }
  bool alive() const;

 private:
  Endpoint(Context& ctx, int fd, Options opts);
  bool negotiate(int timeout_ms, std::string* why);
  bool wait(ddp::CompletionQueue& cq, ddp::Completion& out, int timeout_ms);
  void read_available();
  void flush();

  int fd_;
  bool eof_ = false;
  ddp::CompletionQueue send_cq_, recv_cq_;
  rnic::Connection conn_;
};

class Listener {
 public:
  static std::unique_ptr<Listener> listen(const std::string& addr, std::uint16_t port,
                                          std::string* why);
  ~Listener();
  // Accepts one TCP connection and negotiates MPA as the responder.
  std::unique_ptr<Endpoint> accept(Context& ctx, Options opts, std::string* why);
  std::uint16_t port() const;
  int fd() const { return fd_; }

 private:
  explicit Listener(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace esock::ksock
