// The kernel-socket provider: rnic::Connection (MPA framing + DDP/RDMAP queue pair) over a
// connected kernel TCP socket, driven without blocking by the runtime's progress thread.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "esock/process/libc.h"
#include "esock/providers/provider.h"
#include "esock/rnic/connection.h"

namespace esock::sockets {

namespace {

class KsockConn final : public ProviderConn {
 public:
  KsockConn(int fd, const mpa::Config& cfg)
      : fd_(fd),
        pd_(stags_.alloc_pd()),
        conn_(config(fd, cfg, pd_), stags_, scq_, rcq_),
        verbs_(conn_.qp(), stags_, pd_, scq_, rcq_) {}
  ~KsockConn() override { ESOCK_LIBC(close)(fd_); }

  bool negotiate(int timeout_ms, int* err, std::string* why) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (conn_.state() == rnic::Connection::State::negotiating && state_ == 0) {
      flush();
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        *err = ETIMEDOUT;
        *why = "MPA negotiation timed out";
        return false;
      }
      pollfd p{fd_, static_cast<short>(POLLIN | (output_pending() ? POLLOUT : 0)), 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) > 0) on_ready(p.revents);
    }
    flush();  // a Reject still goes out (RFC 5044 section 7.1)
    if (conn_.state() == rnic::Connection::State::established) return true;
    *err = state_ > 0 || conn_.state() == rnic::Connection::State::negotiating ? ECONNRESET
                                                                               : ECONNREFUSED;
    *why =
        conn_.error().empty() ? "peer closed the connection during MPA negotiation" : conn_.error();
    return false;
  }

  rnic::Verbs& verbs() override { return verbs_; }
  const mpa::Negotiated& negotiated() const override { return conn_.negotiated(); }
  int poll_fd() const override { return fd_; }
  short poll_events() const override {
    if (state_ != 0) return 0;
    return static_cast<short>((hold_ ? 0 : POLLIN) | (output_pending() ? POLLOUT : 0));
  }
  bool output_pending() const override { return !conn_.output().empty(); }
  int transport_state() const override {
    // A Terminate (sent or received, RFC 5040 section 5.3) ends the stream as a reset does.
    if (state_ == 0 && (conn_.state() == rnic::Connection::State::failed || terminated_))
      return ECONNRESET;
    return state_;
  }

  void on_ready(short revents) override {
    if (!hold_ && (revents & (POLLIN | POLLHUP | POLLERR))) read_available();
    flush();
  }

  void flush() override {
    for (;;) {
      conn_.pump();
      terminated_ = terminated_ || conn_.qp().state() == ddp::QpState::error;
      const bytes_view out = conn_.output();
      if (out.empty() || state_ > 0) return;
      const ssize_t n = ESOCK_LIBC(send)(fd_, out.data(), out.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n > 0) {
        conn_.consume(static_cast<std::size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      broken(false);  // RST or EPIPE: the LLP is gone
      return;
    }
  }

  void hold_input(bool on) override { hold_ = on; }

  int name(bool peer, sockaddr* addr, socklen_t* len) const override {
    return peer ? ESOCK_LIBC(getpeername)(fd_, addr, len) : ESOCK_LIBC(getsockname)(fd_, addr, len);
  }

  void shutdown() override {
    flush();
    ESOCK_LIBC(shutdown)(fd_, SHUT_WR);
  }

 private:
  static rnic::ConnectionConfig config(int fd, const mpa::Config& m, std::uint32_t pd) {
    rnic::ConnectionConfig c;
    c.mpa = m;
    c.qp.pd = pd;
    int mss = 0;
    socklen_t l = sizeof mss;
    if (ESOCK_LIBC(getsockopt)(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &l) == 0 && mss >= 536)
      c.emss = static_cast<std::size_t>(mss);
    return c;
  }

  void read_available() {
    std::array<std::uint8_t, 64 * 1024> buf;
    for (int i = 0; i < 16 && state_ == 0; ++i) {  // bounded: never starve the others
      const ssize_t n = ESOCK_LIBC(recv)(fd_, buf.data(), buf.size(), MSG_DONTWAIT);
      if (n > 0) {
        conn_.on_bytes({buf.data(), static_cast<std::size_t>(n)});
        if (static_cast<std::size_t>(n) < buf.size()) return;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      broken(n == 0);
    }
  }

  void broken(bool orderly) {
    state_ = orderly ? -1 : ECONNRESET;
    conn_.on_transport_closed(orderly);
  }

  int fd_;
  int state_ = 0;
  bool terminated_ = false;
  bool hold_ = false;  // the queue pair reached the error state (Terminate)
  ddp::StagTable stags_;
  std::uint32_t pd_;
  ddp::CompletionQueue scq_{4096}, rcq_{4096};
  rnic::Connection conn_;
  rnic::QpVerbs verbs_;
};

class KsockProvider final : public Provider {
 public:
  const char* name() const override { return "ksock"; }
  std::unique_ptr<ProviderConn> establish(int fd, const mpa::Config& cfg, int timeout_ms, int* err,
                                          std::string* why) override {
    const int one = 1;
    ESOCK_LIBC(setsockopt)(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto c = std::make_unique<KsockConn>(fd, cfg);
    if (!c->negotiate(timeout_ms, err, why)) return nullptr;
    return c;
  }
};

}  // namespace

std::unique_ptr<Provider> make_ksock_provider() {
  return std::make_unique<KsockProvider>();
}

}  // namespace esock::sockets
