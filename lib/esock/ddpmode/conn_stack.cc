// DDPMODE connection set-up over an own-stack provider (dpdk, docs/sockets.md "Providers"):
// the TCP connection lives in the provider's stack, which the progress thread polls; connect
// starts it there and then settles like a kernel-TCP one (conn_async.cc). The application's
// number is handed over exactly as with kernel TCP (the "fd model"); the kernel socket it
// was stays behind as the holder of SO_*/TCP_* options.
//
// Listeners of every provider work this way (kernel_listen for ksock): the runtime takes
// TCP connections and negotiates MPA in its rounds, and accept() hands out negotiated ones
// only, so a slow, silent or non-esock peer delays nobody (issue 20, item 7).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#include "esock/ddpmode/conn.h"
#include "esock/ksock/socket_util.h"
#include "esock/process/addr_text.h"
#include "esock/process/config.h"
#include "esock/process/libc.h"
#include "esock/process/log.h"
#include "esock/runtime/fd_table.h"
#include "esock/runtime/listen_queue.h"
#include "esock/runtime/relayed_names.h"
#include "esock/runtime/runtime.h"

namespace esock::sockets {

namespace {

void failed(const char* what, const std::string& why) {
  log(LogLevel::warn, "%s: %s", what, why.c_str());
}

// The kernel port number a listener uses: the one bound, else (as listen() on an unbound
// socket does) an ephemeral one, so getsockname and the stack agree.
int kernel_address(int fd, sockaddr_in* out) {
  sockaddr_in a{};
  socklen_t l = sizeof a;
  if (ESOCK_LIBC(getsockname)(fd, reinterpret_cast<sockaddr*>(&a), &l) < 0) return -1;
  if (a.sin_family != AF_INET) return errno_fail(EAFNOSUPPORT);
  if (a.sin_port == 0) {
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    if (ESOCK_LIBC(bind)(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0) return -1;
    l = sizeof a;
    if (ESOCK_LIBC(getsockname)(fd, reinterpret_cast<sockaddr*>(&a), &l) < 0) return -1;
  }
  *out = a;
  return 0;
}

}  // namespace

int stack_connect(Provider& p, int fd, const std::shared_ptr<Socket>& sp, const sockaddr* addr,
                  socklen_t len) {
  Socket& s = *sp;
  if (addr == nullptr) return errno_fail(EFAULT);
  if (len < sizeof(sockaddr_in) || addr->sa_family != AF_INET)
    return errno_fail(addr->sa_family == AF_INET ? EINVAL : EAFNOSUPPORT);
  sockaddr_in dst;
  std::memcpy(&dst, addr, sizeof dst);
  DdpRuntime& rt = DdpRuntime::get();
  std::unique_lock lk(rt.mu);
  if (s.state() != Socket::State::armed)  // another thread's connect got here first
    return errno_fail(s.state() == Socket::State::connecting ? EALREADY : EISCONN);
  std::string why;
  int err = rt.use_stack(p, &why);
  std::unique_ptr<ProviderConn> pc;
  if (err == 0)
    pc = p.connect(dst, mpa_config(true, s.msgmode(), s.rawmode(), p.software_rnic()), &err, &why);
  if (!pc) {
    failed("connect", why);
    return errno_fail(err);  // nothing happened yet: the socket may try again
  }
  pc->hold_input(true);  // until attach() posted the stream's receives
  return begin_connect(lk, p, fd, sp, std::move(pc), addr, len, 0);
}

namespace {

// A listener's set-up state: MPA as the responder, its bounds (runtime/socket.h).
std::unique_ptr<StackListen> new_listen(const Provider& p, const Socket& s, int backlog) {
  auto l = std::make_unique<StackListen>();
  l->mpa = mpa_config(false, s.msgmode(), s.rawmode(), p.software_rnic());
  l->backlog = static_cast<std::size_t>(std::clamp(backlog, 1, 4096));
  l->setup_timeout = std::chrono::milliseconds(config().timeout_ms);
  l->fallback = falls_back(s.implicit);
  l->fallback_after = std::chrono::milliseconds(config().fallback_ms);
  return l;
}

// The handover (under the runtime lock): the kernel socket the application's number was
// stays behind on a private number for its options, and the number becomes the signal
// that is readable while a negotiated connection waits. 0 or -1 with errno.
int hand_over_listener(int fd, const std::shared_ptr<Socket>& s, std::unique_ptr<StackListen> l) {
  const int flflags = ESOCK_LIBC(fcntl)(fd, F_GETFL);
  l->opt_fd = move_high(fd);
  const int a = make_signal(&l->sig_a, &l->sig_l);
  if (l->opt_fd < 0 || a < 0 || take_number(fd, a) < 0) {
    const int err = errno;
    if (a >= 0) ESOCK_LIBC(close)(a);
    return errno_fail(err);
  }
  ESOCK_LIBC(close)(a);
  s->nonblocking = (flflags & O_NONBLOCK) != 0;
  s->lis = std::move(l);
  s->set_state(Socket::State::listening);
  DdpRuntime::get().add(s);
  return 0;
}

}  // namespace

int stack_listen(Provider& p, int fd, const std::shared_ptr<Socket>& s, int backlog) {
  sockaddr_in local{};
  if (kernel_address(fd, &local) < 0) return -1;
  const int port = ntohs(local.sin_port);
  if (p.kernel_addresses()) {
    // The provider's listener (siw's, an RNIC's port mapper's) binds this address and port
    // in the kernel too, with SO_REUSEADDR; the kernel lets it only if every socket bound
    // there has the option, and this one stays bound (it keeps the options).
    const int on = 1;
    ESOCK_LIBC(setsockopt)(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  }
  DdpRuntime& rt = DdpRuntime::get();
  std::unique_lock lk(rt.mu);
  std::string why;
  int err = rt.use_stack(p, &why);
  auto l = new_listen(p, *s, backlog);
  if (err == 0) l->pl = p.listen(local, backlog, &err, &why);
  // Pre-forked children accept through the parent (byte streams only: listen_relay.cc).
  if (l->pl && !s->msgmode() && !s->rawmode()) l->fork_relay = make_listen_relay();
  if (!l->pl) {
    failed("listen", why);
    return errno_fail(err);
  }
  if (hand_over_listener(fd, s, std::move(l)) < 0) return -1;
  log(LogLevel::info, "listening: port %d on the %s stack", port, p.name());
  return 0;
}

// ksock: the kernel listening socket moves to a private number the progress thread polls
// (Provider::adopt_listener), and the application's number becomes the receiving end of the
// accept queue the processes of a fork family share (runtime/listen_queue.h); a second
// private number holds the options.
int kernel_listen(Provider& p, int fd, const std::shared_ptr<Socket>& s, int backlog) {
  if (ESOCK_LIBC(listen)(fd, backlog) < 0) return -1;
  DdpRuntime& rt = DdpRuntime::get();
  std::unique_lock lk(rt.mu);
  const int lfd = move_high(fd);
  if (lfd < 0) return -1;
  int err = 0;
  auto l = new_listen(p, *s, backlog);
  l->pl = p.adopt_listener(lfd, &err);
  if (!l->pl) {
    ESOCK_LIBC(close)(lfd);
    return errno_fail(err);
  }
  int out = -1;
  if (listen_queue_pair(&l->queue_in, &out) < 0) return -1;
  l->queue_out = move_high(out);
  const int flflags = ESOCK_LIBC(fcntl)(fd, F_GETFL);
  l->opt_fd = move_high(fd);
  if (l->queue_out < 0 || l->opt_fd < 0 || take_number(fd, out) < 0) {
    err = errno;
    ESOCK_LIBC(close)(out);
    return errno_fail(err);
  }
  ESOCK_LIBC(close)(out);
  // The queue's receiving end is the application's description now: its status flags are
  // the application's (take_number), and esock reads it only with MSG_DONTWAIT.
  s->nonblocking = (flflags & O_NONBLOCK) != 0;
  s->lis = std::move(l);
  s->set_state(Socket::State::listening);
  rt.add(s);
  if (log_on(LogLevel::info))
    log(LogLevel::info, "listening: port %d (ksock)", static_cast<int>(ksock::local_port(lfd)));
  // The listening socket's description is esock's alone now (fd is the signal): the
  // progress thread's accept must never block, whatever the application's flags are.
  ESOCK_LIBC(fcntl)(lfd, F_SETFL, ESOCK_LIBC(fcntl)(lfd, F_GETFL) | O_NONBLOCK);
  return 0;
}

namespace {

// A peer without esock, on a listener that falls back (StackListen::fallback): accept(2)
// returns k itself, at the lowest free number as accept's is, with everything the peer sent
// unread: a plain kernel TCP socket (ksock), or the end of an AF_UNIX pair an own stack
// relays to its connection as plain TCP (utcp/plain_relay.h); peer: the peer's name (null:
// k's). One line on stderr, a few per process.
int accept_plain(int k, bool silent, const sockaddr_storage* peer_name, sockaddr* addr,
                 socklen_t* len, int flags) {
  if (k < 0) return errno_fail(ECONNABORTED);
  sockaddr_storage peer{};
  socklen_t plen = sizeof peer;
  if (peer_name != nullptr) {
    peer = *peer_name;
    plen = peer.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  } else if (ESOCK_LIBC(getpeername)(k, reinterpret_cast<sockaddr*>(&peer), &plen) != 0) {
    plen = 0;
  }
  const int zero = 0;  // the kernel's default again (set for iWARP when it was accepted)
  ESOCK_LIBC(setsockopt)(k, IPPROTO_TCP, TCP_NODELAY, &zero, sizeof zero);  // (fails on a pair)
  const int a = ESOCK_LIBC(fcntl)(k, (flags & SOCK_CLOEXEC) ? F_DUPFD_CLOEXEC : F_DUPFD, 0);
  const int err = errno;
  ESOCK_LIBC(close)(k);
  if (a < 0) return errno_fail(err);
  const int fl = ESOCK_LIBC(fcntl)(a, F_GETFL);
  ESOCK_LIBC(fcntl)(a, F_SETFL, (flags & SOCK_NONBLOCK) ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
  if (addr != nullptr && len != nullptr) {
    std::memcpy(addr, &peer, std::min<socklen_t>(*len, plen));
    *len = plen;
  }
  tell_plain_tcp(std::string("a client does not speak esock (") +
                 (silent ? "it sent nothing" : "its first octets are not an MPA Request") + ")");
  return a;
}

}  // namespace

int stack_accept(Socket& ls, sockaddr* addr, socklen_t* len, int flags) {
  DdpRuntime& rt = DdpRuntime::get();
  std::unique_lock lk(rt.mu);
  for (;;) {
    if (ls.state() != Socket::State::listening) return errno_fail(EBADF);  // closed meanwhile
    if (ls.orphaned || !ls.lis) return errno_fail(EOPNOTSUPP);             // a fork child's copy
    // Only set-up connections are here (negotiated, or fallen back to plain TCP): the
    // runtime runs MPA set-up in its rounds (DdpRuntime::service_listener), so a slow or
    // silent peer delays no accept.
    if (ls.lis->dormant) rt.activate(*ls.lis);  // a fork child's first accept there
    rt.service_listener(ls);
    std::unique_ptr<ProviderConn> pc;
    if (ls.lis->shared()) {
      // ksock: the family's queue (runtime/listen_queue.h), filled by this process's runtime
      // or another's; its receiving end is the application's number.
      std::optional<QueuedConn> q = listen_queue_pop(ls.lis->queue_out);
      if (!q) {
        if (errno == EPROTO) continue;  // not a message of ours: dropped
        if (errno != EAGAIN) return -1;
        if (ls.nonblocking) return errno_fail(EAGAIN);
        if (rt.wait_interruptible(lk, ls.lis->queue_out) == EINTR) return errno_fail(EINTR);
        continue;
      }
      if (q->kind != QueuedConn::Kind::negotiated)
        return accept_plain(q->fd, q->kind == QueuedConn::Kind::plain_silent, nullptr, addr, len,
                            flags);
      Provider* p = configured_provider();
      if (p != nullptr) pc = p->adopt_negotiated(q->fd, ls.lis->mpa, q->mpa_request);
      if (!pc) {
        ESOCK_LIBC(close)(q->fd);  // (the peer sees the connection reset)
        continue;
      }
    } else {
      if (ls.lis->ready.empty()) {
        if (ls.nonblocking) return errno_fail(EAGAIN);
        if (rt.wait_interruptible(lk) == EINTR) return errno_fail(EINTR);  // accept(2)
        continue;
      }
      pc = std::move(ls.lis->ready.front());
      ls.lis->ready.pop_front();
      rt.listener_taken(*ls.lis);
      if (pc->peer_not_mpa() || pc->peer_silent()) {
        sockaddr_storage peer{};
        socklen_t plen = sizeof peer;
        const bool named = pc->name(true, reinterpret_cast<sockaddr*>(&peer), &plen) == 0;
        const bool silent = pc->peer_silent();
        return accept_plain(take_plain_end(*pc), silent, named ? &peer : nullptr, addr, len, flags);
      }
    }
    auto s = std::make_shared<Socket>();
    s->set_msgmode(ls.msgmode());
    s->set_rawmode(ls.rawmode());
    s->zcopy.store(ls.zcopy.load(std::memory_order_relaxed), std::memory_order_relaxed);
    sockaddr_storage peer{};  // IPv6 too (ksock)
    socklen_t plen = sizeof peer;
    if (pc->name(true, reinterpret_cast<sockaddr*>(&peer), &plen) != 0) plen = 0;
    int err = attach(std::move(pc), false, *s);
    if (err != 0) {
      s->conn.reset();
      if (ls.nonblocking) return errno_fail(EAGAIN);
      continue;
    }
    // The application's number is the connection's readiness socket, its one descriptor
    // (an own stack's option socket comes only with a setsockopt: ddp_option_fd).
    Conn& c = *s->conn;
    const ReadinessHub* hub = ReadinessHub::process();
    const int a = hub != nullptr ? hub->create(&c.ready) : -1;
    if (a < 0) {
      err = errno;
      s->conn.reset();
      return errno_fail(err);
    }
    c.number = a;
    if (!(flags & SOCK_CLOEXEC)) ESOCK_LIBC(fcntl)(a, F_SETFD, 0);
    if (flags & SOCK_NONBLOCK) ESOCK_LIBC(fcntl)(a, F_SETFL, O_NONBLOCK);
    if (static_cast<unsigned>(a) >= static_cast<unsigned>(max_ddp_fd)) {
      ESOCK_LIBC(close)(a);
      s->conn.reset();
      return errno_fail(EMFILE);
    }
    if (addr != nullptr && len != nullptr) {  // accept(2): truncated to *len, full size back
      std::memcpy(addr, &peer, std::min<socklen_t>(*len, plen));
      *len = plen;
    }
    s->nonblocking = (flags & SOCK_NONBLOCK) != 0;
    s->set_state(Socket::State::connected);
    if (log_on(LogLevel::info))
      log(LogLevel::info, "accepted %s (%s provider)", plen ? address_text(peer).c_str() : "?",
          configured_provider() ? configured_provider()->name() : "?");
    fd_set(a, s);  // numbered first: its first round signals through the number
    rt.add(s);
    return a;
  }
}

}  // namespace esock::sockets
