#include "esock/ksock/endpoint.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "esock/ksock/socket_util.h"

namespace esock::ksock {

namespace {

rnic::ByteStreamConfig stream_config(const Options& opts, int fd) {
  rnic::ByteStreamConfig cfg;
  cfg.engine.mpa = opts.mpa;
  cfg.engine.qp = opts.qp;
  cfg.engine.cq_depth = opts.cq_depth;
  cfg.emss = effective_mss(fd, 1460);
  return cfg;
}

// Milliseconds left until deadline (for loops that call poll repeatedly).
int remaining_ms(std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

}  // namespace

Endpoint::Endpoint(Context& ctx, int fd, Options opts)
    : fd_(fd),
      conn_(stream_config(opts, fd), ctx),
      io_(fd, conn_, kernel_socket_calls(), 256 * 1024) {}

Endpoint::~Endpoint() {
  if (fd_ >= 0) ::close(fd_);
}

std::unique_ptr<Endpoint> Endpoint::connect(Context& ctx, const std::string& host,
                                            std::uint16_t port, Options opts, std::string* why) {
  SockResult s = tcp_connect(host, port, opts.timeout_ms);
  if (s.fd < 0) {
    *why = s.why;
    return nullptr;
  }
  if (int err = prepare_stream_socket(s.fd); err != 0) {
    *why = std::string("socket options: ") + std::strerror(err);
    ::close(s.fd);
    return nullptr;
  }
  opts.mpa.initiator = true;
  std::unique_ptr<Endpoint> ep(new Endpoint(ctx, s.fd, opts));
  if (!ep->negotiate(opts.timeout_ms, why)) return nullptr;
  return ep;
}

std::unique_ptr<Endpoint> Endpoint::accept_fd(Context& ctx, int fd, Options opts,
                                              std::string* why) {
  if (int err = prepare_stream_socket(fd); err != 0) {
    *why = std::string("socket options: ") + std::strerror(err);
    ::close(fd);
    return nullptr;
  }
  opts.mpa.initiator = false;
  std::unique_ptr<Endpoint> ep(new Endpoint(ctx, fd, opts));
  if (!ep->negotiate(opts.timeout_ms, why)) return nullptr;
  return ep;
}

bool Endpoint::negotiate(int timeout_ms, std::string* why) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (conn_.state() == rnic::Engine::State::negotiating) {
    if (eof()) {
      *why = "peer closed the connection during MPA negotiation";
      return false;
    }
    const int left = remaining_ms(deadline);
    if (left == 0) {
      *why = "MPA negotiation timed out";
      return false;
    }
    progress(left);
  }
  if (conn_.state() != rnic::Engine::State::established) {
    flush();  // a responder's Reject still goes out (RFC 5044 section 7.1)
    *why = conn_.error();
    return false;
  }
  return true;
}

bool Endpoint::alive() const {
  return !eof() && conn_.state() == rnic::Engine::State::established;
}

bool Endpoint::progress(int timeout_ms) {
  if (eof()) return false;
  flush();
  pollfd p{fd_, static_cast<short>(POLLIN | (conn_.output().empty() ? 0 : POLLOUT)), 0};
  const int r = ::poll(&p, 1, timeout_ms);
  if (r > 0) {
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) io_.read_available();
    flush();
  }
  return !eof();
}

bool Endpoint::poll_one(bool recv_cq, ddp::Completion& out) {
  return (recv_cq ? poll_recv_cq({&out, 1}) : poll_send_cq({&out, 1})) == 1;
}

bool Endpoint::wait(bool recv_cq, ddp::Completion& out, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    if (poll_one(recv_cq, out)) return true;
    const int left = remaining_ms(deadline);
    if (left == 0) return false;
    if (!progress(left)) return poll_one(recv_cq, out);  // the close may have flushed WRs
  }
}

void Endpoint::close(int timeout_ms) {
  if (fd_ < 0) return;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!eof() && !conn_.output().empty() && remaining_ms(deadline) > 0) progress(1);
  ::shutdown(fd_, SHUT_WR);
  // Drain until the peer's FIN so the peer sees an orderly close rather than a reset.
  while (!eof() && remaining_ms(deadline) > 0) progress(remaining_ms(deadline));
  if (!eof()) conn_.on_transport_closed(true);
  ::close(fd_);
  fd_ = -1;
}

std::unique_ptr<Listener> Listener::listen(const std::string& addr, std::uint16_t port,
                                           std::string* why) {
  SockResult s = tcp_listen(addr, port, 64);
  if (s.fd < 0) {
    *why = s.why;
    return nullptr;
  }
  return std::unique_ptr<Listener>(new Listener(s.fd));
}

Listener::~Listener() {
  ::close(fd_);
}

std::uint16_t Listener::port() const {
  return local_port(fd_);
}

std::unique_ptr<Endpoint> Listener::accept(Context& ctx, Options opts, std::string* why) {
  SockResult s = tcp_accept(fd_, opts.timeout_ms);
  if (s.fd < 0) {
    *why = s.why;
    return nullptr;
  }
  return Endpoint::accept_fd(ctx, s.fd, opts, why);
}

}  // namespace esock::ksock
