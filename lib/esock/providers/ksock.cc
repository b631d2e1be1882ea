// The kernel-socket provider: the software RNIC over a connected kernel TCP socket (the ksock
// transport), driven without blocking by the runtime's progress thread.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <vector>

#include "esock/ksock/stream_io.h"
#include "esock/process/libc.h"
#include "esock/providers/provider.h"
#include "esock/rnic/byte_stream_engine.h"
#include "esock/rnic/engine_verbs.h"

namespace esock::sockets {

namespace {

class KsockConn final : public ProviderConn {
 public:
  KsockConn(int fd, const mpa::Config& cfg)
      : fd_(fd),
        conn_(config(fd, cfg), ctx_),
        io_(fd, conn_, ksock::SocketCalls{ESOCK_LIBC(send), ESOCK_LIBC(recv)}, 64 * 1024),
        verbs_(conn_.engine()) {}
  ~KsockConn() override {
    if (fd_ >= 0) ESOCK_LIBC(close)(fd_);
  }

  rnic::Verbs& verbs() override { return verbs_; }
  const mpa::Negotiated& negotiated() const override { return conn_.negotiated(); }
  ConnCounters counters() const override {
    ConnCounters c;
    const rnic::EngineStats& e = conn_.engine().stats();
    c.fpdus_tx = e.fpdus_tx;
    c.fpdus_rx = e.fpdus_rx;
    c.ooo_segments = e.ooo_segments;  // kernel TCP delivers in order: 0
    c.ooo_placed = e.ooo_segments_placed;
    c.terminated = conn_.engine().terminated();
    tcp_info ti{};
    socklen_t len = sizeof ti;
    if (fd_ >= 0 && ::getsockopt(fd_, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0)
      c.tcp_retransmits = ti.tcpi_total_retrans;
    return c;
  }
  int poll_fd() const override { return fd_; }
  short poll_events() const override {
    if (io_.stream() != Stream::open || not_mpa_) return 0;
    const bool read = !hold_ || negotiating();  // held: the MPA frame is still read
    return static_cast<short>((read ? POLLIN : 0) | (output_pending() ? POLLOUT : 0));
  }
  bool output_pending() const override { return !conn_.output().empty(); }
  TransportState transport_state() const override {
    switch (io_.stream()) {
      case Stream::broken:
        return TransportState::broken;
      case Stream::ended:
        return TransportState::ended;
      case Stream::open:
        break;
    }
    // A Terminate (sent or received, RFC 5040 section 5.3) ends the stream as a reset does.
    const bool failed = conn_.state() == rnic::Engine::State::failed || terminated_;
    return failed ? TransportState::broken : TransportState::open;
  }

  void on_ready(short revents) override {
    if (revents & (POLLIN | POLLHUP | POLLERR)) {
      if (negotiating() && !check_key()) return;  // not MPA: left unread (fallback)
      if (negotiating() && hold_)
        read_mpa_frame();
      else if (!hold_)
        io_.read_available();
    }
    flush();
  }

  // Set-up in the runtime's rounds (initiate, adopt_listener): EINPROGRESS until MPA is done.
  int setup_state() const override {
    if (conn_.state() == rnic::Engine::State::established && io_.stream() == Stream::open) return 0;
    if (not_mpa_) return EPROTO;  // a peer without esock: nothing of what it sent was read
    if (negotiating()) return EINPROGRESS;
    return conn_.state() == rnic::Engine::State::failed && io_.stream() == Stream::open
               ? ECONNREFUSED
               : ECONNRESET;
  }
  std::string setup_error() const override {
    if (not_mpa_) return "the peer's first octets are not MPA's";
    return conn_.error().empty() ? "peer closed the connection during MPA negotiation"
                                 : conn_.error();
  }

  void flush() override {
    io_.flush();
    terminated_ = terminated_ || conn_.engine().terminated();
  }

  void hold_input(bool on) override { hold_ = on; }
  bytes_view mpa_request() const override {
    return conn_.state() == rnic::Engine::State::established ? bytes_view(request_) : bytes_view{};
  }
  // adopt_negotiated: the responder's side of the negotiation again, from the Request that
  // arrived in another process; the Reply it makes was sent there and is dropped here.
  bool replay(bytes_view request) {
    const std::size_t used = conn_.engine().feed(request);
    conn_.pump();
    conn_.consume(conn_.output().size());
    received_ = key_seen_ = true;
    return used == request.size() && conn_.state() == rnic::Engine::State::established;
  }
  bool peer_not_mpa() const override { return not_mpa_; }
  bool peer_silent() const override { return !received_; }
  int take_plain() override {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  bool survives_fork() const override { return true; }  // a kernel socket and heap memory

  int name(bool peer, sockaddr* addr, socklen_t* len) const override {
    return peer ? ESOCK_LIBC(getpeername)(fd_, addr, len) : ESOCK_LIBC(getsockname)(fd_, addr, len);
  }

  void shutdown() override {
    flush();
    ESOCK_LIBC(shutdown)(fd_, SHUT_WR);
  }

 private:
  using Stream = ksock::StreamIo::Stream;

  bool negotiating() const {
    return conn_.state() == rnic::Engine::State::negotiating && io_.stream() == Stream::open;
  }

  // RFC 5044 section 7.1: an MPA start frame begins with its 16-octet key, "MPA ID Req
  // Frame" from the initiator, "MPA ID Rep Frame" back. Peeks at what has arrived of it: false
  // (and peer_not_mpa()) once an octet differs, so a peer that speaks something else finds
  // everything it sent still unread in the kernel socket.
  bool check_key() {
    if (key_seen_ || not_mpa_) return !not_mpa_;
    static constexpr char req[] = "MPA ID Req Frame", rep[] = "MPA ID Rep Frame";
    const char* key = conn_.engine().initiator() ? rep : req;
    char buf[16];
    const ssize_t n = ESOCK_LIBC(recv)(fd_, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
    if (n <= 0) return true;  // nothing yet, or the end: the stream reads and records it
    received_ = true;
    not_mpa_ = std::memcmp(buf, key, static_cast<std::size_t>(n)) != 0;
    key_seen_ = n == 16 && !not_mpa_;
    return !not_mpa_;
  }

  // With input held (hold_input): only the peer's MPA frame is taken from the socket; what
  // follows it (the peer's first FPDUs) stays in the kernel's receive buffer until the
  // stream's receives are posted (a Send before that is an error, RFC 5040 section 7.1).
  // Peeks, lets the engine take its frame, then consumes exactly that much.
  void read_mpa_frame() {
    std::array<std::uint8_t, 1024> buf;  // an MPA frame is at most 20 + 512 octets
    while (negotiating()) {
      const ssize_t n = ESOCK_LIBC(recv)(fd_, buf.data(), buf.size(), MSG_PEEK | MSG_DONTWAIT);
      if (n <= 0) {
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        if (n < 0 && errno == EINTR) continue;
        io_.read_available();  // end of stream or an error: the stream records it
        return;
      }
      const std::size_t used =
          conn_.engine().feed(bytes_view(buf.data(), static_cast<std::size_t>(n)));
      if (used == 0) return;
      request_.insert(request_.end(), buf.data(), buf.data() + used);  // for a handover
      ESOCK_LIBC(recv)(fd_, buf.data(), used, MSG_DONTWAIT);           // what the engine took
      conn_.pump();
    }
  }

  static rnic::ByteStreamConfig config(int fd, const mpa::Config& m) {
    rnic::ByteStreamConfig c;
    c.engine.mpa = m;
    int mss = 0;
    socklen_t l = sizeof mss;
    if (ESOCK_LIBC(getsockopt)(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &l) == 0 && mss >= 536)
      c.emss = static_cast<std::size_t>(mss);
    return c;
  }

  int fd_;
  bool terminated_ = false;  // the queue pair reached the error state (Terminate)
  bool hold_ = false;
  bool received_ = false;              // the peer sent something
  bool key_seen_ = false;              // ... and it began with the MPA key
  bool not_mpa_ = false;               // ... and it did not
  std::vector<std::uint8_t> request_;  // the peer's MPA Request (responder, input held)
  rnic::Context ctx_;                  // one protection domain and STag table per connection
  rnic::ByteStreamEngine conn_;
  ksock::StreamIo io_;
  rnic::EngineVerbs verbs_;
};

// A kernel listening socket whose connections negotiate in the runtime's rounds.
class KsockListener final : public ProviderListener {
 public:
  explicit KsockListener(int fd) : fd_(fd) {}
  ~KsockListener() override { ESOCK_LIBC(close)(fd_); }
  bool pending() const override {
    pollfd p{fd_, POLLIN, 0};
    return ESOCK_LIBC(poll)(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0;
  }
  int poll_fd() const override { return fd_; }
  std::unique_ptr<ProviderConn> accept(const mpa::Config& cfg) override {
    const int t = ESOCK_LIBC(accept4)(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (t < 0) return nullptr;
    const int fd = move_high(t);
    ESOCK_LIBC(close)(t);
    if (fd < 0) return nullptr;
    const int one = 1;
    ESOCK_LIBC(setsockopt)(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return std::make_unique<KsockConn>(fd, cfg);  // the responder waits for the Request
  }
  int name(sockaddr* addr, socklen_t* len) const override {
    return ESOCK_LIBC(getsockname)(fd_, addr, len);  // IPv4 or IPv6, as the kernel's
  }

 private:
  int fd_;
};

class KsockProvider final : public Provider {
 public:
  const char* name() const override { return "ksock"; }
  std::unique_ptr<ProviderListener> adopt_listener(int fd, int*) override {
    return std::make_unique<KsockListener>(fd);
  }
  std::unique_ptr<ProviderConn> adopt_negotiated(int fd, const mpa::Config& cfg,
                                                 bytes_view request) override {
    auto c = std::make_unique<KsockConn>(fd, cfg);
    c->hold_input(true);  // until attach() posted the stream's receives
    if (!c->replay(request)) return nullptr;
    return c;
  }
  std::unique_ptr<ProviderConn> initiate(int fd, const mpa::Config& cfg) override {
    const int one = 1;
    ESOCK_LIBC(setsockopt)(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto c = std::make_unique<KsockConn>(fd, cfg);
    c->hold_input(true);  // until attach() posted the stream's receives
    c->flush();           // the MPA Request (RFC 5044 section 7.1)
    return c;
  }
};

}  // namespace

std::unique_ptr<Provider> make_ksock_provider() {
  return std::make_unique<KsockProvider>();
}

}  // namespace esock::sockets
