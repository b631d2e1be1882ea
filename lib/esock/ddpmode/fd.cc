// DDPMODE descriptor bookkeeping: close/dup follow the numbers, fcntl flags, names.
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <string>

#include "esock/ddpmode/conn.h"
#include "esock/ddpmode/ops.h"
#include "esock/process/config.h"
#include "esock/process/libc.h"
#include "esock/process/option_socket.h"
#include "esock/providers/provider.h"
#include "esock/runtime/fd_table.h"
#include "esock/runtime/runtime.h"
#include "esock/runtime/socket.h"

namespace esock::sockets {

void ddp_release(std::shared_ptr<Socket> s) {
  if (!s || s->fd_refs.fetch_sub(1) != 1) return;
  // The last number naming this socket went away: the connection closes (FIN, drain).
  DdpRuntime& rt = DdpRuntime::get();
  std::unique_lock lk(rt.mu);
  // An asynchronous read returned already: its octets are the application's, which may use
  // them after the close (read_async.h).
  rt.finish_async_read(lk, *s);
  rt.close(s);
}

void ddp_duplicated(int oldfd, int newfd) {
  if (auto s = fd_get(oldfd)) {
    s->fd_refs.fetch_add(1);
    fd_set(newfd, std::move(s));
  }
}

int ddp_fcntl_setfl(int fd, int flags) {
  const int r = ESOCK_LIBC(fcntl)(fd, F_SETFL, flags);
  if (r == 0) {
    if (auto s = fd_get(fd)) {
      DdpRuntime& rt = DdpRuntime::get();
      std::lock_guard lk(rt.mu);
      s->nonblocking = (flags & O_NONBLOCK) != 0;
      rt.after_op(*s);
    }
  }
  return r;
}

int ddp_ioctl(int fd, unsigned long request, void* arg) {
  if (request != FIONBIO && request != FIONREAD && request != SIOCOUTQ)
    return ESOCK_LIBC(ioctl)(fd, request, arg);
  auto s = fd_get(fd);
  if (!s) return ESOCK_LIBC(ioctl)(fd, request, arg);
  if (arg == nullptr) {
    errno = EFAULT;
    return -1;
  }
  DdpRuntime& rt = DdpRuntime::get();
  if (request == FIONBIO) {
    // The kernel descriptor too, so F_GETFL reads back what was set, as after fcntl.
    if (ESOCK_LIBC(ioctl)(fd, request, arg) < 0) return -1;
    std::lock_guard lk(rt.mu);
    int on = 0;
    std::memcpy(&on, arg, sizeof on);
    s->nonblocking = on != 0;
    rt.after_op(*s);
    return 0;
  }
  std::lock_guard lk(rt.mu);
  std::size_t n = 0;
  if (s->state() == Socket::State::connected && s->conn && s->conn->stream)
    n = request == FIONREAD ? s->conn->stream->readable_octets() : s->conn->stream->unsent_octets();
  const int v = n > INT_MAX ? INT_MAX : static_cast<int>(n);
  std::memcpy(arg, &v, sizeof v);
  return 0;
}

int ddp_getname(int fd, bool peer, sockaddr* addr, socklen_t* len) {
  // A connected socket's names are its connection's (the private TCP descriptor's, or the
  // provider stack's); an own-stack listener's is the stack's address and port.
  int tcp = fd;
  if (auto s = fd_get(fd)) {
    std::lock_guard lk(DdpRuntime::get().mu);
    if (s->state() == Socket::State::connected && s->conn && s->conn->pc)
      return s->conn->pc->name(peer, addr, len);
    if (s->lis && !peer) return s->lis->pl->name(addr, len);
    if (s->connecting) {
      if (!peer) return s->connecting->local_name(addr, len);
      tcp = -1;  // no peer name until connected
    }
    if (s->orphaned || s->lis) tcp = -1;
  }
  if (tcp < 0) {
    errno = ENOTCONN;
    return -1;
  }
  return peer ? ESOCK_LIBC(getpeername)(tcp, addr, len) : ESOCK_LIBC(getsockname)(tcp, addr, len);
}

namespace {

// The kernel socket a DDPMODE socket's SO_*/TCP_* options are read from (runtime lock
// held): the private TCP descriptor once connected; an own stack's connection's option set
// (a fresh socket while it has none); the number itself while armed.
int option_fd(const Socket& s, int fd) {
  if (s.state() == Socket::State::connected && s.conn && s.conn->pc) {
    const Conn& c = *s.conn;
    if (c.pc->option_fd() >= 0) return c.pc->option_fd();
    return c.options ? c.options->fd() : fresh_option_socket();  // (an own stack's)
  }
  if (s.lis) return s.lis->opt_fd;
  if (s.connecting) return s.connecting->option_fd();
  return fd;
}

}  // namespace

int ddp_get_option(int fd, int level, int name, void* val, socklen_t* len) {
  auto s = fd_get(fd);
  if (!s) return ESOCK_LIBC(getsockopt)(fd, level, name, val, len);
  // Under the lock: another thread's setsockopt may replace (and close) the option set.
  std::lock_guard lk(DdpRuntime::get().mu);
  return ESOCK_LIBC(getsockopt)(option_fd(*s, fd), level, name, val, len);
}

int ddp_set_option(int fd, int level, int name, const void* val, socklen_t len) {
  auto s = fd_get(fd);
  if (!s) return ESOCK_LIBC(setsockopt)(fd, level, name, val, len);
  std::lock_guard lk(DdpRuntime::get().mu);
  std::shared_ptr<const OptionSet>* own = nullptr;  // an own stack's connection's options
  int kernel = fd;
  if (s->state() == Socket::State::connected && s->conn && s->conn->pc) {
    Conn& c = *s->conn;
    if (c.pc->option_fd() >= 0)
      kernel = c.pc->option_fd();
    else
      own = &c.options;
  } else if (s->lis) {
    kernel = s->lis->opt_fd;
  } else if (s->connecting) {
    own = s->connecting->own_options();
    kernel = s->connecting->option_fd();
  }
  if (own == nullptr) {
    const int r = ESOCK_LIBC(setsockopt)(kernel, level, name, val, len);
    if (r == 0 && kernel == fd && s->option_calls && s->state() == Socket::State::armed)
      s->option_calls =
          replayable(level, name)
              ? std::optional(with_call(std::move(*s->option_calls), level, name, val, len))
              : std::nullopt;  // its socket stays its own at connect
    return r;
  }
  // A set of its own is changed in place; a shared one (or none) gives way to the set the
  // calls so far and this one make (process/option_socket.h): the kernel validates the
  // option there, and a refusal leaves the connection's options as they were.
  if (*own && (*own)->calls() == nullptr)
    return ESOCK_LIBC(setsockopt)((*own)->fd(), level, name, val, len);
  if (!replayable(level, name)) {  // (a filter program's pointer): a socket of its own
    auto set = OptionSet::own(*own ? *(*own)->calls() : OptionCalls{});
    if (!set || ESOCK_LIBC(setsockopt)(set->fd(), level, name, val, len) != 0) return -1;
    *own = std::move(set);
    return 0;
  }
  auto set =
      OptionSet::of(with_call(*own ? *(*own)->calls() : OptionCalls{}, level, name, val, len));
  if (!set) return -1;
  *own = std::move(set);
  return 0;
}

void ddp_wait_readable(int fd) {
  auto s = fd_get(fd);
  if (s && s->fork_queue) ask_parent(fd, *s);
}

int ddp_epoll_ctl(int epfd, int op, int fd, epoll_event* ev) {
  auto s = fd_get(fd);
  if (!s) return ESOCK_LIBC(epoll_ctl)(epfd, op, fd, ev);
  // An event-driven worker accepts only once its listener polls readable: adding a fork
  // child's copy to an epoll set asks the parent for a connection (listen_relay.cc).
  if (s->fork_queue && op == EPOLL_CTL_ADD) ask_parent(fd, *s);
  // The same for a ksock child's dormant copy of a shared listener: it starts taking
  // connections, so workers that wait in epoll keep a server going whose parent closed
  // its listener after forking them (runtime/listen_queue.h).
  if (op == EPOLL_CTL_ADD) {
    std::lock_guard lk(DdpRuntime::get().mu);
    if (s->lis && s->lis->dormant) DdpRuntime::get().activate(*s->lis);
  }
  // The kernel call and its record together under the watch lock, which a connect falling
  // back to plain TCP holds while it moves the sets to the new file (conn_async.cc): a
  // registration is either moved or made on the new file, never lost.
  std::lock_guard lk(epoll_watch_mutex());
  const int r = ESOCK_LIBC(epoll_ctl)(epfd, op, fd, ev);
  if (r != 0) return r;
  auto& w = s->epoll_watches;
  const auto it = std::find_if(w.begin(), w.end(),
                               [&](const EpollWatch& x) { return x.epfd == epfd && x.fd == fd; });
  if (op == EPOLL_CTL_DEL) {
    if (it != w.end()) w.erase(it);
  } else if (ev != nullptr) {
    const EpollWatch x{epfd, fd, ev->events, ev->data.u64};
    if (it != w.end()) {
      *it = x;
    } else if (op == EPOLL_CTL_ADD) {
      w.push_back(x);
    }
  }
  return r;
}

int ddp_give_back_implicit(int fd, int refuse) {
  auto s = fd_get(fd);
  // (Another number naming it, from dup, would keep it DDPMODE there: refused too.)
  if (!s || !s->implicit || s->fd_refs.load() > 1) return refuse;
  {
    std::lock_guard lk(s->mu);
    if (s->state() != Socket::State::armed) return EINVAL;  // listening or connected
  }
  (void)fd_take(fd);
  return 0;
}

// The own stack's address (ESOCK_DPDK_IP, "A.B.C.D/NN"), network order; 0 if unset.
in_addr_t stack_address() {
  const std::string& text = config().dpdk_ip;
  in_addr a{};
  if (::inet_pton(AF_INET, text.substr(0, text.find('/')).c_str(), &a) != 1) return 0;
  return a.s_addr;
}

int ddp_bind(int fd, const sockaddr* addr, socklen_t len) {
  // An own-stack provider's addresses are not the kernel's: the kernel socket binds the
  // port on all addresses instead (reserving it, and choosing one for port 0), and the
  // stack listens on that port (docs/sockets.md, "Providers").
  Provider* p = configured_provider();
  if (p == nullptr || !p->own_stack() || p->kernel_addresses() || addr == nullptr ||
      len < sizeof(sockaddr_in) || addr->sa_family != AF_INET)
    return ESOCK_LIBC(bind)(fd, addr, len);
  sockaddr_in a;
  std::memcpy(&a, addr, sizeof a);
  if (a.sin_addr.s_addr != htonl(INADDR_ANY) && a.sin_addr.s_addr != stack_address()) {
    // An address the stack does not have (127.0.0.1, a kernel interface's): listening on
    // the stack would expose on the DPDK link a service its program meant for that address
    // only (a loopback-only one, typically). A socket esockrun --ddp made DDPMODE goes back
    // to being the plain kernel socket the program asked for; one the application made
    // DDPMODE itself cannot have iWARP there: EADDRNOTAVAIL.
    if (const int err = ddp_give_back_implicit(fd, EADDRNOTAVAIL); err != 0) {
      errno = err;
      return -1;
    }
    return ESOCK_LIBC(bind)(fd, addr, len);
  }
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  return ESOCK_LIBC(bind)(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a);
}

}  // namespace esock::sockets
