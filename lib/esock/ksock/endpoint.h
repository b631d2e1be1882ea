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
#include "esock/ksock/stream_io.h"
#include "esock/rnic/byte_stream_engine.h"
#include "esock/rnic/engine_verbs.h"
#include "mpa/negotiator.h"

namespace esock::ksock {

struct Options {
  mpa::Config mpa;         // initiator/responder is set by connect()/accept()
  ddp::QpConfig qp;        // pd: 0 for the context's default, or Context::alloc_pd
  int timeout_ms = 10000;  // TCP connect and MPA negotiation
  std::size_t cq_depth = 4096;
};

class Endpoint final : public rnic::EndpointVerbs {
 public:
  // Connects over TCP and negotiates MPA as the initiator. On failure returns null and sets *why.
  static std::unique_ptr<Endpoint> connect(Context& ctx, const std::string& host,
                                           std::uint16_t port, Options opts, std::string* why);
  // Takes a connected TCP socket and negotiates MPA as the responder (used by Listener).
  static std::unique_ptr<Endpoint> accept_fd(Context& ctx, int fd, Options opts, std::string* why);
  ~Endpoint() override;
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  // Reads what the socket has, writes what the queue pair has framed, waiting up to
  // timeout_ms for the socket when there is nothing to do. False once the stream is over.
  bool progress(int timeout_ms);
  // Drives progress until a completion arrives on the send (or receive) queue.
  bool wait_send(ddp::Completion& out, int timeout_ms) { return wait(false, out, timeout_ms); }
  bool wait_recv(ddp::Completion& out, int timeout_ms) { return wait(true, out, timeout_ms); }

  // Orderly close: sends what is queued, then FIN; waits up to timeout_ms for the peer's FIN.
  void close(int timeout_ms = 1000);

  int fd() const { return fd_; }
  const mpa::Negotiated& negotiated() const { return conn_.negotiated(); }
  rnic::ByteStreamEngine& connection() { return conn_; }
  rnic::Engine& engine() override { return conn_.engine(); }
  const std::string& error() const { return conn_.error(); }
  bool alive() const;

 private:
  Endpoint(Context& ctx, int fd, Options opts);
  bool negotiate(int timeout_ms, std::string* why);
  bool wait(bool recv_cq, ddp::Completion& out, int timeout_ms);
  bool poll_one(bool recv_cq, ddp::Completion& out);
  void flush() { io_.flush(); }
  int posted(int rc) override {
    if (rc == 0) flush();
    return rc;
  }
  // The stream is over: the peer's FIN, a break, or our close.
  bool eof() const { return fd_ < 0 || io_.stream() != StreamIo::Stream::open; }

  int fd_;
  rnic::ByteStreamEngine conn_;
  StreamIo io_;
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
