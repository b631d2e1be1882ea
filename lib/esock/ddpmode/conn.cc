// DDPMODE connection set-up: connect (initiator) and accept (responder) over the configured
// provider, the ESTP Hello check, and the descriptor handover of docs/sockets.md ("fd model").
// This file: what both provider kinds share, and the kernel-TCP path (ksock).
#include "esock/ddpmode/conn.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "esock/ddpmode/ops.h"
#include "esock/ksock/socket_util.h"
#include "esock/process/config.h"
#include "esock/process/libc.h"
#include "esock/process/log.h"
#include "esock/process/rules.h"
#include "esock/runtime/fd_table.h"
#include "esock/runtime/relayed_names.h"
#include "esock/runtime/runtime.h"
#include "esock/runtime/socket.h"

namespace esock::sockets {

std::unique_ptr<Provider> load_provider_plugin(const std::string& name, std::string* why);

int errno_fail(int err) {
  errno = err;
  return -1;
}

void tell_plain_tcp(const std::string& who) {
  static std::atomic<int> told{0};
  if (told.fetch_add(1) < 8) std::fprintf(stderr, "esock: %s: plain TCP instead\n", who.c_str());
}

int plain_pair(int ends[2]) {
  if (private_pair(SOCK_STREAM, ends) < 0) return -1;
  ESOCK_LIBC(fcntl)(ends[1], F_SETFL, O_NONBLOCK);
  // Octets arrive in TCP's segments; a pair buffer of a MiB keeps a bulk transfer from
  // stalling on the relay's rounds.
  const int buf = 1 << 20;
  for (int i = 0; i < 2; ++i) {
    ESOCK_LIBC(setsockopt)(ends[i], SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    ESOCK_LIBC(setsockopt)(ends[i], SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
  }
  DdpRuntime::get().keep_relays_moving();
  return 0;
}

int take_plain_end(ProviderConn& pc) {
  const int k = pc.take_plain();
  if (k >= 0) return k;  // a kernel socket
  sockaddr_in local{}, peer{};
  socklen_t ll = sizeof local, pl = sizeof peer;
  const bool named = pc.name(false, reinterpret_cast<sockaddr*>(&local), &ll) == 0 &&
                     pc.name(true, reinterpret_cast<sockaddr*>(&peer), &pl) == 0 &&
                     peer.sin_family == AF_INET;
  int ends[2];
  if (plain_pair(ends) < 0) return -1;
  if (!pc.relay_plain(ends[1])) {  // (it owns ends[1] either way)
    ESOCK_LIBC(close)(ends[0]);
    return errno_fail(ECONNABORTED);
  }
  if (named) relayed_add(ends[0], local, peer);
  return ends[0];
}

namespace {

estp::Params local_params(bool msgmode) {
  const Config& c = config();
  estp::Params p{c.recv_buffers, c.recv_buffer_size, c.rndv_threshold, msgmode, c.sink_threshold};
  p.max_rndv_out = 8;  // asynchronous writes pipeline their sources (ESOCK_ZCOPY_ASYNC)
  return p;
}

}  // namespace

mpa::Config mpa_config(bool initiator, bool msgmode, bool raw, bool rdmap_ext) {
  const Config& c = config();
  mpa::Config m;
  m.initiator = initiator;
  m.revision = c.mpa_revision;
  m.markers = c.mpa_markers;
  m.crc = c.mpa_crc;
  estp::Hello h = estp::hello_of(local_params(msgmode));
  h.raw = raw;
  h.sink = h.sink && !raw;         // RAWMODE carries no ESTP messages
  h.rdmap_ext = raw && rdmap_ext;  // only the extension API posts them
  m.private_data = estp::emit_hello(h);
  // RAWMODE: RFC 6581 peer-to-peer mode, so the initiator's RTR (which the queue pair sends
  // and absorbs itself) lets the responder's application post the first message; without
  // it RFC 5044 section 7.1 would hold the responder until the initiator's application sent.
  m.p2p = raw && m.revision == 2;
  return m;
}

int attach(std::unique_ptr<ProviderConn> pc, bool initiator, Socket& s) {
  const bytes_view pd = pc->negotiated().peer_private_data;
  const auto hello = estp::parse_hello(pd);
  // Section 3 of docs/stream-protocol.md: no Hello at all is a refusal; a bad one or a
  // MSGMODE mismatch makes the connection unusable.
  if (!hello) return pd.empty() ? ECONNREFUSED : EPROTO;
  if (hello->msgmode != s.msgmode() || hello->raw != s.rawmode()) return EPROTO;
  auto c = std::make_unique<Conn>();
  if (pc->survives_fork()) c->fork_slot = ForkHandover::get().acquire(::getpid());
  if (s.rawmode()) {
    // RAWMODE: no ESTP stream; the application posts its own receives (esock.h).
    // RFC 7306 only where both Hellos offered it (ours did where set_rdmap_ext can say yes).
    if (hello->rdmap_ext) pc->verbs().set_rdmap_ext(true);
    c->raw = std::make_unique<RawQp>(pc->verbs());
    c->pc = std::move(pc);
    c->pc->flush();  // the RTR
    // Nothing is read until the application's first post or poll, so the receives it posts
    // first are in place before a peer Send can arrive (docs/sockets.md, "Start-up").
    c->pc->hold_input(true);
    c->raw_input_held = true;
    s.conn = std::move(c);
    return 0;
  }
  c->stream = std::make_unique<estp::Stream>(pc->verbs(), local_params(s.msgmode()), *hello);
  c->pc = std::move(pc);
  if (const int rc = c->stream->start(initiator); rc != 0) return rc;
  c->pc->hold_input(false);  // the stream's receives are posted
  c->pc->flush();
  s.conn = std::move(c);
  return 0;
}

int make_signal(int* sig_a, int* sig_l) {
  int sp[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) return -1;
  // The smallest send buffer the kernel allows: a few octets fill it (writability signal).
  const int small = 1;
  ESOCK_LIBC(setsockopt)(sp[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  *sig_a = move_high(sp[0]);
  *sig_l = move_high(sp[1]);
  ESOCK_LIBC(close)(sp[1]);
  if (*sig_a < 0 || *sig_l < 0) {
    ESOCK_LIBC(close)(sp[0]);
    return -1;
  }
  return sp[0];
}

int take_number(int fd, int a) {
  const int fdflags = ESOCK_LIBC(fcntl)(fd, F_GETFD);
  const int flflags = ESOCK_LIBC(fcntl)(fd, F_GETFL);
  if (ESOCK_LIBC(dup3)(a, fd, (fdflags & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0) return -1;
  if (flflags & O_NONBLOCK) ESOCK_LIBC(fcntl)(fd, F_SETFL, O_NONBLOCK);
  return 0;
}

// Whether a socket esockrun --ddp armed goes on as plain TCP to `addr`: the configuration
// has errors (config.h), or a ports or peers rule leaves it out (rules.h; an IPv6 peer
// passes a peers rule only as a v4-mapped address it allows).
bool implicit_stays_plain(const sockaddr* addr, socklen_t len) {
  if (!config_ok()) return true;
  if (addr == nullptr) return false;
  const Config& c = config();
  if (addr->sa_family == AF_INET && len >= sizeof(sockaddr_in)) {
    sockaddr_in a;
    std::memcpy(&a, addr, sizeof a);
    return !rules_allow_port(c, ntohs(a.sin_port)) ||
           !rules_allow_peer(c, ntohl(a.sin_addr.s_addr));
  }
  if (addr->sa_family == AF_INET6 && len >= sizeof(sockaddr_in6)) {
    sockaddr_in6 a;
    std::memcpy(&a, addr, sizeof a);
    if (!rules_allow_port(c, ntohs(a.sin6_port))) return true;
    if (c.ddpmode_peers.empty()) return false;
    if (!IN6_IS_ADDR_V4MAPPED(&a.sin6_addr)) return true;
    std::uint32_t v4;
    std::memcpy(&v4, &a.sin6_addr.s6_addr[12], sizeof v4);
    return !rules_allow_peer(c, ntohl(v4));
  }
  return false;
}

Provider* configured_provider() {
  static Provider* p = []() -> Provider* {
    if (!config_ok()) return nullptr;  // config.cc said why
    const std::string& name = config().provider;
    if (name == "ksock") return make_ksock_provider().release();
    std::string why;
    if (auto q = load_provider_plugin(name, &why)) return q.release();
    log(LogLevel::error, "provider '%s' is not available: %s", name.c_str(), why.c_str());
    return nullptr;
  }();
  return p;
}

int ddp_connect(int fd, const sockaddr* addr, socklen_t len) {
  auto s = fd_get(fd);
  if (!s) return errno_fail(EBADF);
  {
    std::unique_lock lk(DdpRuntime::get().mu);
    switch (s->state()) {
      case Socket::State::armed:
        break;
      case Socket::State::connecting:
        // A blocking socket waits again for the connect in progress (one a signal
        // interrupted), as Linux's does; a non-blocking one is told it is under way.
        if (s->nonblocking) return errno_fail(EALREADY);
        return await_connect(lk, fd, s, addr, len);
      case Socket::State::connected:
        // The first connect() after a non-blocking one completed returns 0, as Linux's.
        if (std::exchange(s->connect_unreported, false)) return 0;
        return errno_fail(EISCONN);
      case Socket::State::listening:
        return errno_fail(EINVAL);
      default:
        s->error_reported = true;
        return errno_fail(s->error ? s->error : EBADF);
    }
  }
  // A socket esockrun --ddp armed that its rules leave out, or under a configuration with
  // errors, is the kernel's: the program goes on as without esock.
  if (s->implicit && implicit_stays_plain(addr, len) && ddp_give_back_implicit(fd, EINVAL) == 0)
    return ESOCK_LIBC(connect)(fd, addr, len);
  Provider* p = configured_provider();
  if (p == nullptr) return errno_fail(config_ok() ? EOPNOTSUPP : EINVAL);
  if (p->own_stack() && addr != nullptr && len >= sizeof(sockaddr_in) &&
      addr->sa_family == AF_INET) {
    // The own stack has no loopback and cannot reach its own address (docs/sockets.md,
    // "Limits"): such a connect timed out after ESOCK_TIMEOUT_MS with no hint. A socket
    // esockrun --ddp armed is given back to the kernel, which connects it; one the
    // application made DDPMODE fails at once.
    sockaddr_in dst;
    std::memcpy(&dst, addr, sizeof dst);
    const in_addr_t d = dst.sin_addr.s_addr;
    const bool loopback = (ntohl(d) >> 24) == 127;
    if (loopback || (d != 0 && d == stack_address())) {
      // Its own address is no kernel address either: nothing to give back there.
      const int err = loopback ? ddp_give_back_implicit(fd, ENETUNREACH) : ENETUNREACH;
      if (err != 0) {
        if (log_on(LogLevel::warn)) {
          char text[INET_ADDRSTRLEN] = "?";
          ::inet_ntop(AF_INET, &dst.sin_addr, text, sizeof text);
          log(LogLevel::warn, "connect: the %s provider's stack cannot reach %s", p->name(), text);
        }
        return errno_fail(err);
      }
      return ESOCK_LIBC(connect)(fd, addr, len);
    }
  }
  if (p->own_stack()) return stack_connect(*p, fd, s, addr, len);
  // Kernel TCP: the kernel's connect first (a blocking socket waits here for TCP only);
  // what fails at once leaves the socket as it was, to be connected again.
  const int rc = ESOCK_LIBC(connect)(fd, addr, len);
  const int tcp_err = rc == 0 ? 0 : errno;
  if (rc < 0 && tcp_err != EINPROGRESS && tcp_err != EINTR) return -1;
  std::unique_lock lk(DdpRuntime::get().mu);
  return begin_connect(lk, *p, fd, s, nullptr, addr, len, tcp_err);
}

int ddp_listen(int fd, int backlog) {
  auto s = fd_get(fd);
  if (!s) return errno_fail(EBADF);
  if (s->state() != Socket::State::armed && s->state() != Socket::State::listening)
    return errno_fail(EINVAL);
  // The ports rule for a listener esockrun --ddp armed (rules.h); a configuration with
  // errors leaves it the kernel's too.
  if (s->implicit && !s->lis &&
      (!config_ok() || !rules_allow_port(config(), ksock::local_port(fd))) &&
      ddp_give_back_implicit(fd, EINVAL) == 0)
    return ESOCK_LIBC(listen)(fd, backlog);
  Provider* p = configured_provider();
  if (p == nullptr) return errno_fail(config_ok() ? EOPNOTSUPP : EINVAL);
  if (s->lis) return 0;  // listening already (a second listen() only changes the backlog)
  if (p->own_stack()) return stack_listen(*p, fd, s, backlog);
  return kernel_listen(*p, fd, s, backlog);
}

int ddp_accept(int fd, sockaddr* addr, socklen_t* len, int flags) {
  auto ls = fd_get(fd);
  if (!ls) return errno_fail(EBADF);
  if (ls->fork_queue) return accept_from_parent(fd, *ls, addr, len, flags);  // a fork child's
  if (ls->state() != Socket::State::listening) return errno_fail(EINVAL);
  if (flags & ~(SOCK_NONBLOCK | SOCK_CLOEXEC)) return errno_fail(EINVAL);
  // Every provider's listener hands out connections the runtime negotiated off the accept
  // path (conn_stack.cc); a fork child's copy of a listener accepts nothing (EOPNOTSUPP).
  return stack_accept(*ls, addr, len, flags);
}

}  // namespace esock::sockets
