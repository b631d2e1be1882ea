// connect(2) on a DDPMODE socket, both provider kinds: the application's number becomes the
// signal A at once (docs/sockets.md, "fd model"), and TCP, then MPA as the initiator, move on
// in the runtime's rounds (runtime/socket.h, Connecting). So a non-blocking connect returns
// EINPROGRESS at once and its number polls writable when the connection is up or failed
// (SO_ERROR says which), as a kernel TCP connect's does; a blocking one waits for the same
// end, interruptibly (EINTR leaves the connect going on, as in the kernel).
//
// A peer without esock (docs/sockets.md, "Peers without esock"): the number is handed to a
// fresh plain TCP connection to the same address (kernel TCP: a kernel socket; an own stack:
// a connection in the stack relayed to an AF_UNIX end, Provider::open_plain), and the epoll
// sets the application added it to are moved along (Socket::epoll_watches).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "esock/ddpmode/conn.h"
#include "esock/process/addr_text.h"
#include "esock/process/config.h"
#include "esock/process/libc.h"
#include "esock/process/log.h"
#include "esock/process/option_socket.h"
#include "esock/runtime/fd_table.h"
#include "esock/runtime/relayed_names.h"
#include "esock/runtime/runtime.h"

namespace esock::sockets {

namespace {

class AsyncConnect final : public Connecting {
 public:
  struct Setup {
    Provider* provider = nullptr;
    int app_fd = -1;  // the application's number (now a readiness socket)
    ReadinessState ready;
    int tcp_fd = -1;                           // kernel TCP: the socket, connecting or connected
    std::unique_ptr<ProviderConn> pc;          // own stack: TCP and MPA in the stack
    std::shared_ptr<const OptionSet> options;  // own stack: where its options are kept
    sockaddr_storage peer{};
    socklen_t peer_len = 0;
    bool may_fall_back = false;
  };

  AsyncConnect(Setup s, Instant now) : s_(std::move(s)) {
    deadline_ = now + std::chrono::milliseconds(config().timeout_ms);
    if (s_.tcp_fd >= 0) {
      // The application's TCP_NODELAY, for a plain socket after a fallback (initiate()
      // turns it on for iWARP).
      socklen_t l = sizeof nodelay_;
      ESOCK_LIBC(getsockopt)(s_.tcp_fd, IPPROTO_TCP, TCP_NODELAY, &nodelay_, &l);
    }
  }
  ~AsyncConnect() override {
    if (s_.tcp_fd >= 0) ESOCK_LIBC(close)(s_.tcp_fd);
  }

  int poll_fd() const override {
    if (s_.tcp_fd >= 0) return s_.tcp_fd;
    return s_.pc ? s_.pc->poll_fd() : -1;
  }
  short poll_events() const override {
    if (s_.tcp_fd >= 0) return POLLOUT;
    return s_.pc ? s_.pc->poll_events() : 0;
  }
  void on_ready(short revents) override {
    if (s_.tcp_fd < 0 && s_.pc) s_.pc->on_ready(revents);
  }
  Instant due() const override {
    return silent_watch() && silent_since_ ? std::min(deadline_, *silent_since_ + fallback_after())
                                           : deadline_;
  }
  int option_fd() const override {
    if (s_.tcp_fd >= 0) return s_.tcp_fd;
    if (s_.pc && s_.pc->option_fd() >= 0) return s_.pc->option_fd();
    return s_.options ? s_.options->fd() : fresh_option_socket();
  }
  std::shared_ptr<const OptionSet>* own_options() override {
    return s_.tcp_fd < 0 && s_.pc && s_.pc->option_fd() < 0 ? &s_.options : nullptr;
  }
  int local_name(sockaddr* addr, socklen_t* len) const override {
    if (s_.pc) return s_.pc->name(false, addr, len);
    return ESOCK_LIBC(getsockname)(s_.tcp_fd, addr, len);
  }
  void set_waiter(bool on) override { waiter_ = on; }
  void drop_descriptors() override {
    if (s_.tcp_fd >= 0) ESOCK_LIBC(close)(s_.tcp_fd);
    s_.tcp_fd = -1;
    if (s_.pc && s_.pc->poll_fd() >= 0) ESOCK_LIBC(close)(s_.pc->poll_fd());
    (void)s_.pc.release();  // the parent's
  }

  bool step(Socket& s, Instant now) override {
    if (s_.tcp_fd >= 0) {
      pollfd p{s_.tcp_fd, POLLOUT, 0};
      if (ESOCK_LIBC(poll)(&p, 1, 0) <= 0) return now >= deadline_ && fail(s, ETIMEDOUT);
      int err = 0;
      socklen_t l = sizeof err;
      ESOCK_LIBC(getsockopt)(s_.tcp_fd, SOL_SOCKET, SO_ERROR, &err, &l);
      if (err != 0) return fail(s, err);  // refused, unreachable: as kernel TCP reports it
      s_.pc = s_.provider->initiate(
          s_.tcp_fd, mpa_config(true, s.msgmode(), s.rawmode(), s_.provider->software_rnic()));
      if (!s_.pc) return fail(s, EOPNOTSUPP);
      s_.tcp_fd = -1;  // the transport's now
      // MPA gets its own time.
      deadline_ = now + std::chrono::milliseconds(config().timeout_ms);
    }
    const int st = s_.pc->setup_state();
    if (st == 0) return finish(s);
    if (st == EINPROGRESS) {
      // A peer silent for fallback_ms once TCP is up (peer_silent says so from then on)
      // does not speak esock.
      if (silent_watch() && !silent_since_) silent_since_ = now;
      if (silent_watch() && now >= *silent_since_ + fallback_after())
        return fall_back(s, "the peer sent nothing (no MPA Reply)");
      if (now < deadline_) return false;
      // (An own stack's connection may still be opening TCP: that times out as TCP does.)
      const bool negotiating = !s_.provider->own_stack() || s_.pc->peer_silent();
      return s_.may_fall_back && negotiating ? fall_back(s, "MPA negotiation timed out")
                                             : fail(s, ETIMEDOUT);
    }
    if (s_.may_fall_back && (st == EPROTO || st == ECONNRESET))
      return fall_back(s, s_.pc->setup_error());
    return fail(s, st, s_.pc->setup_error());
  }

 private:
  bool silent_watch() const {
    return s_.may_fall_back && s_.tcp_fd < 0 && s_.pc && s_.pc->peer_silent();
  }
  static Duration fallback_after() { return std::chrono::milliseconds(config().fallback_ms); }

  // MPA is done: the stream starts, and the number's readiness and the option socket
  // become the connection's. Its first round (right after this one) makes the number
  // writable.
  bool finish(Socket& s) {
    if (const int err = attach(std::move(s_.pc), true, s); err != 0) return fail(s, err);
    Conn& c = *s.conn;
    c.number = s_.app_fd;
    c.ready = s_.ready;
    c.options = std::move(s_.options);
    s.set_state(Socket::State::connected);
    s.connect_unreported = true;
    log(LogLevel::info, "connected to %s (%s provider)", address_text(s_.peer).c_str(),
        s_.provider->name());
    return true;
  }

  // The number polls readable (EOF), writable and hung up; calls report err, SO_ERROR once.
  bool fail(Socket& s, int err, const std::string& why = {}) {
    log(LogLevel::warn, "connect to %s: %s%s%s", address_text(s_.peer).c_str(), std::strerror(err),
        why.empty() ? "" : ": ", why.c_str());
    s.error = err;
    s.error_reported = false;
    s.set_state(Socket::State::failed);
    s_.pc.reset();
    const ReadinessHub& hub = *ReadinessHub::process();  // (it made the number)
    int number = s_.app_fd;
    (void)fd_with_number(&s, &number, [&](int fd) {
      if (hub.set_writable(fd, s_.ready, true)) (void)ReadinessHub::hang_up(fd);
    });
    return true;
  }

  // The number becomes a fresh kernel socket connecting to the same address, and leaves
  // DDPMODE. The probe closes (FIN when the transport is released): its peer saw only the
  // MPA Request on it, and the application nothing yet.
  bool fall_back(Socket& s, const std::string& why) {
    const int app = s_.app_fd;
    if (s.fd_refs.load() != 1) return fail(s, ECONNREFUSED);  // a dup: no single number
    const bool in_stack = s_.provider->own_stack() && !s_.provider->kernel_addresses();
    const int n = in_stack ? open_plain() : plain_socket();
    if (n < 0) return fail(s, errno);
    int flags = 0;
    int err = ECONNREFUSED;  // the number no longer names this socket alone (closed, dup2)
    std::lock_guard watches(epoll_watch_mutex());
    // The swap under the table's lock (fd_swap_out): the epoll sets the number is in move
    // to the new file, a close racing it closes either nothing of ours or the new socket.
    const bool swapped = fd_swap_out(app, &s, [&] {
      // Only a set that still watches A here is moved: an epoll number the application
      // closed, and perhaps reused for another set, has none (DEL fails), and is left alone.
      flags = ESOCK_LIBC(fcntl)(app, F_GETFL);  // the application's (O_NONBLOCK)
      std::vector<EpollWatch> moved;
      for (const EpollWatch& w : s.epoll_watches)
        if (w.fd == app && ESOCK_LIBC(epoll_ctl)(w.epfd, EPOLL_CTL_DEL, app, nullptr) == 0)
          moved.push_back(w);
      // A poll or select already waiting on the number waits on its old file: that file,
      // kept open across the swap, is made writable and hung up after it, which wakes them
      // to look at the number again (now the plain socket).
      const int old = ESOCK_LIBC(fcntl)(app, F_DUPFD_CLOEXEC, 0);
      const bool ok = take_number(app, n) == 0;
      if (ok) ESOCK_LIBC(fcntl)(app, F_SETFL, flags);
      err = ok ? 0 : errno;
      if (old >= 0) {
        if (ok && ReadinessHub::process()->set_writable(old, s_.ready, true))
          (void)ReadinessHub::hang_up(old);
        ESOCK_LIBC(close)(old);
      }
      for (const EpollWatch& w : moved) {
        epoll_event ev{};
        ev.events = w.events;
        ev.data.u64 = w.data;
        ESOCK_LIBC(epoll_ctl)(w.epfd, EPOLL_CTL_ADD, app, &ev);
      }
      return ok;
    });
    ESOCK_LIBC(close)(n);
    s.epoll_watches.clear();
    if (!swapped) return fail(s, err);
    tell_plain_tcp(address_text(s_.peer) + " does not speak esock (" + why + ")");
    s.set_state(Socket::State::plain);
    return true;
  }

  // Kernel TCP: a fresh kernel socket with the options a client sets before connect and
  // that matter after it. A connect() waiting in this process connects it itself (blocking,
  // as the application asked); otherwise it starts here and the number polls writable when
  // done. -1 with errno.
  int plain_socket() {
    const int n =
        ESOCK_LIBC(socket)(s_.peer.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (n < 0) return -1;
    const int probe = s_.pc->option_fd();
    for (auto [level, name] : {std::pair{SOL_SOCKET, SO_KEEPALIVE},
                               {SOL_SOCKET, SO_REUSEADDR},
                               {SOL_SOCKET, SO_PRIORITY}}) {
      int v = 0;
      socklen_t l = sizeof v;
      if (probe >= 0 && ESOCK_LIBC(getsockopt)(probe, level, name, &v, &l) == 0)
        ESOCK_LIBC(setsockopt)(n, level, name, &v, l);
    }
    ESOCK_LIBC(setsockopt)(n, IPPROTO_TCP, TCP_NODELAY, &nodelay_, sizeof nodelay_);
    if (!waiter_ &&
        ESOCK_LIBC(connect)(n, reinterpret_cast<const sockaddr*>(&s_.peer), s_.peer_len) < 0 &&
        errno != EINPROGRESS) {
      const int err = errno;
      ESOCK_LIBC(close)(n);
      errno = err;
      return -1;
    }
    return n;
  }

  // An own stack: a plain connection in the stack, relayed to the AF_UNIX end returned
  // (utcp/plain_relay.h). What the application writes before it is up waits in the pair.
  int open_plain() {
    sockaddr_in dst{}, local{};
    std::memcpy(&dst, &s_.peer, sizeof dst);
    int ends[2];
    if (plain_pair(ends) < 0) return -1;
    int err = 0;
    if (!s_.provider->open_plain(dst, ends[1], &local, &err)) {  // (it owns ends[1])
      ESOCK_LIBC(close)(ends[0]);
      return errno_fail(err);
    }
    relayed_add(ends[0], local, dst);  // shows as the TCP socket it stands for
    return ends[0];
  }

  Setup s_;
  Instant deadline_{};
  std::optional<Instant> silent_since_;
  int nodelay_ = 0;
  bool waiter_ = false;
};

}  // namespace

int begin_connect(std::unique_lock<RuntimeMutex>& lk, Provider& p, int fd,
                  const std::shared_ptr<Socket>& sp, std::unique_ptr<ProviderConn> pc,
                  const sockaddr* addr, socklen_t len, int tcp_err) {
  Socket& s = *sp;
  DdpRuntime& rt = DdpRuntime::get();
  // Another thread's connect on the same socket got here first.
  if (s.state() != Socket::State::armed)
    return errno_fail(s.state() == Socket::State::connecting ? EALREADY : EISCONN);
  AsyncConnect::Setup set;
  set.provider = &p;
  set.app_fd = fd;
  std::memcpy(&set.peer, addr, std::min<std::size_t>(len, sizeof set.peer));
  set.peer_len = std::min<socklen_t>(len, sizeof set.peer);
  // Only a socket no other number names can turn plain (as ddp_give_back_implicit).
  set.may_fall_back = falls_back(s.implicit) && s.fd_refs.load() == 1;
  const int flflags = ESOCK_LIBC(fcntl)(fd, F_GETFL);
  // Handover: the kernel socket moves to a private number (kernel TCP: the transport; own
  // stack: the holder of SO_*/TCP_* options, kept only if some were set), and a readiness
  // socket takes the application's number, polling not writable until the connect ends.
  const int priv = move_high(fd);
  const ReadinessHub* hub = ReadinessHub::process();
  const int a = hub != nullptr ? hub->create(&set.ready) : -1;
  if (priv < 0 || a < 0 || !hub->set_writable(a, set.ready, false) || take_number(fd, a) < 0) {
    const int err = errno;
    for (int x : {priv, a})
      if (x >= 0) ESOCK_LIBC(close)(x);
    return errno_fail(err);
  }
  ESOCK_LIBC(close)(a);
  if (pc) {
    set.pc = std::move(pc);
    // Its options: shared with the connections that set the same (every setsockopt on it
    // went through esock since it was fresh), or its own (some set before it was DDPMODE,
    // or a bound port it reserves), or none (a fresh socket's).
    if (s.option_calls && !bound_to_port(priv))
      set.options = s.option_calls->empty() ? (ESOCK_LIBC(close)(priv), nullptr)
                                            : OptionSet::adopt(priv, *s.option_calls);
    else if (holds_more_than_fresh(priv))
      set.options = OptionSet::keep(priv);
    else
      ESOCK_LIBC(close)(priv);
  } else {
    set.tcp_fd = priv;
    ESOCK_LIBC(fcntl)(priv, F_SETFL, ESOCK_LIBC(fcntl)(priv, F_GETFL) | O_NONBLOCK);
  }
  s.nonblocking = (flflags & O_NONBLOCK) != 0;
  s.error = 0;
  s.connecting = std::make_unique<AsyncConnect>(std::move(set), rt.now());
  s.set_state(Socket::State::connecting);
  rt.add(sp);
  if (s.nonblocking) return errno_fail(EINPROGRESS);
  if (tcp_err == EINTR) return errno_fail(EINTR);  // the kernel's connect goes on
  return await_connect(lk, fd, sp, addr, len);
}

int await_connect(std::unique_lock<RuntimeMutex>& lk, int fd, const std::shared_ptr<Socket>& sp,
                  const sockaddr* addr, socklen_t len) {
  Socket& s = *sp;
  DdpRuntime& rt = DdpRuntime::get();
  while (s.state() == Socket::State::connecting) {
    s.connecting->set_waiter(true);
    const int r = rt.wait_interruptible(lk);
    if (s.connecting) s.connecting->set_waiter(false);
    if (r == EINTR && s.state() == Socket::State::connecting) return errno_fail(EINTR);
  }
  switch (s.state()) {
    case Socket::State::connected:
      s.connect_unreported = false;
      return 0;
    case Socket::State::plain: {
      // Kernel TCP: the number is a fresh kernel socket now, left for this call to connect.
      // An own stack: the relay's end, whose connection the stack opens (conn_async's
      // open_plain).
      const Provider* p = configured_provider();
      if (p != nullptr && p->own_stack() && !p->kernel_addresses()) return 0;
      lk.unlock();
      return ESOCK_LIBC(connect)(fd, addr, len);
    }
    case Socket::State::closed:
      return errno_fail(EBADF);
    default:
      s.error_reported = true;
      return errno_fail(s.error != 0 ? s.error : ECONNREFUSED);
  }
}

}  // namespace esock::sockets
