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

rnic::ConnectionConfig connection_config(Context& ctx, Options& opts, int fd) {
  rnic::ConnectionConfig cfg;
  cfg.mpa = opts.mpa;
  cfg.qp = opts.qp;
  cfg.qp.pd = ctx.pd();
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
      send_cq_(opts.cq_depth),
      recv_cq_(opts.cq_depth),
      conn_(connection_config(ctx, opts, fd), ctx.stags(), send_cq_, recv_cq_) {}

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
  while (conn_.state() == rnic::Connection::State::negotiating) {
    if (eof_) {
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
  if (conn_.state() != rnic::Connection::State::established) {
    flush();  // a responder's Reject still goes out (RFC 5044 section 7.1)
    *why = conn_.error();
    return false;
  }
  return true;
}

bool Endpoint::alive() const {
  return !eof_ && conn_.state() == rnic::Connection::State::established;
}

int Endpoint::post_send(std::uint64_t wr_id, std::span<const ddp::Sge> sg, bool solicited,
                        ddp::stag_t invalidate) {
  int rc = conn_.qp().post_send(wr_id, sg, solicited, invalidate);
  if (rc == 0) flush();
  return rc;
}

int Endpoint::post_recv(std::uint64_t wr_id, std::span<const ddp::Sge> sg) {
  return conn_.qp().post_recv(wr_id, sg);
}

int Endpoint::post_write(std::uint64_t wr_id, std::span<const ddp::Sge> sg, ddp::stag_t rkey,
                         std::uint64_t remote_to) {
  int rc = conn_.qp().post_write(wr_id, sg, rkey, remote_to);
  if (rc == 0) flush();
  return rc;
}

int Endpoint::post_read(std::uint64_t wr_id, std::span<const ddp::Sge> sink, ddp::stag_t rkey,
                        std::uint64_t remote_to) {
  int rc = conn_.qp().post_read(wr_id, sink, rkey, remote_to);
  if (rc == 0) flush();
  return rc;
}

void Endpoint::flush() {
  for (;;) {
    conn_.pump();
    const bytes_view out = conn_.output();
    if (out.empty()) return;
    const ssize_t n = ::send(fd_, out.data(), out.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      conn_.consume(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    // The kernel reports the stream broken (RST, EPIPE): the LLP is gone.
    eof_ = true;
    conn_.on_transport_closed(false);
    return;
  }
}

void Endpoint::read_available() {
  // Bounded so one busy peer cannot starve our own transmissions.
  std::array<std::uint8_t, 256 * 1024> buf;
  for (int i = 0; i < 16 && !eof_; ++i) {
    const ssize_t n = ::recv(fd_, buf.data(), buf.size(), MSG_DONTWAIT);
    if (n > 0) {
      conn_.on_bytes({buf.data(), static_cast<std::size_t>(n)});
      if (static_cast<std::size_t>(n) < buf.size()) return;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    eof_ = true;
    conn_.on_transport_closed(n == 0);
  }
}

bool Endpoint::progress(int timeout_ms) {
  if (eof_) return false;
  flush();
  pollfd p{fd_, static_cast<short>(POLLIN | (conn_.output().empty() ? 0 : POLLOUT)), 0};
  const int r = ::poll(&p, 1, timeout_ms);
  if (r > 0) {
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) read_available();
    flush();
  }
  return !eof_;
}

bool Endpoint::wait(ddp::CompletionQueue& cq, ddp::Completion& out, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    if (cq.poll({&out, 1}) == 1) return true;
    const int left = remaining_ms(deadline);
    if (left == 0) return false;
    if (!progress(left)) return cq.poll({&out, 1}) == 1;  // the close may have flushed WRs
  }
}

void Endpoint::close(int timeout_ms) {
  if (fd_ < 0) return;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!eof_ && !conn_.output().empty() && remaining_ms(deadline) > 0) progress(1);
  ::shutdown(fd_, SHUT_WR);
  // Drain until the peer's FIN so the peer sees an orderly close rather than a reset.
  while (!eof_ && remaining_ms(deadline) > 0) progress(remaining_ms(deadline));
  if (!eof_) conn_.on_transport_closed(true);
  ::close(fd_);
  fd_ = -1;
  eof_ = true;
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
