// DDPMODE entry points behind the shims: option handling and the socket state machine.
#include "esock/ddpmode/ops.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <utility>

#include "esock/esock.h"
#include "esock/process/config.h"
#include "esock/process/libc.h"
#include "esock/process/rules.h"
#include "esock/providers/provider.h"
#include "esock/runtime/fd_table.h"
#include "esock/runtime/runtime.h"
#include "esock/runtime/socket.h"

namespace esock::sockets {

namespace {

int fail(int err) {
  errno = err;
  return -1;
}

// DDPMODE can only be switched on for a TCP stream socket that is neither connected (nor
// connecting) nor listening: after that the byte stream already belongs to plain TCP.
int check_can_arm(int fd) {
  int type = 0, proto = 0;
  socklen_t l = sizeof type;
  if (ESOCK_LIBC(getsockopt)(fd, SOL_SOCKET, SO_TYPE, &type, &l) < 0) return errno;
  l = sizeof proto;
  if (ESOCK_LIBC(getsockopt)(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &l) < 0) return errno;
  if (type != SOCK_STREAM || proto != IPPROTO_TCP) return EOPNOTSUPP;
  // The TCP state says whether the stream is still unused (a non-blocking connect in
  // progress has no peer name yet but is already past the point).
  tcp_info ti{};
  l = sizeof ti;
  if (ESOCK_LIBC(getsockopt)(fd, IPPROTO_TCP, TCP_INFO, &ti, &l) < 0) return errno;
  if (ti.tcpi_state == TCP_LISTEN) return EINVAL;
  if (ti.tcpi_state == TCP_SYN_SENT) return EALREADY;
  if (ti.tcpi_state != TCP_CLOSE) return EISCONN;
  return 0;
}

// ESOCK_ZCOPY_MODE (esock.h): any time on a DDPMODE byte-stream socket.
int set_zcopy_mode(int fd, const void* val, socklen_t len) {
  if (val == nullptr || len != sizeof(int)) return fail(EINVAL);
  int mode = 0;
  std::memcpy(&mode, val, sizeof mode);
  if (mode < ESOCK_ZCOPY_COPY || mode > ESOCK_ZCOPY_ASYNC_COW) return fail(EINVAL);
  const auto s = fd_get(fd);
  // MSGMODE sends a message whole, so its writes always wait; RAWMODE has no stream.
  if (!s || s->rawmode() || s->msgmode()) return fail(EOPNOTSUPP);
  s->zcopy.store(mode, std::memory_order_relaxed);
  return 0;
}

}  // namespace

int ddp_setsockopt(int fd, int level, int name, const void* val, socklen_t len) {
  if (level != SOL_ESOCK) {
    // SO_*/TCP_* options apply to the kernel socket behind the descriptor.
    return ddp_set_option(fd, level, name, val, len);
  }
  if (name == ESOCK_ZCOPY_MODE) return set_zcopy_mode(fd, val, len);
  if (name != ESOCK_DDPMODE && name != ESOCK_MSGMODE && name != ESOCK_RAWMODE)
    return fail(ENOPROTOOPT);
  if (val == nullptr || len != sizeof(int)) return fail(EINVAL);
  int on = 0;
  std::memcpy(&on, val, sizeof on);
  auto s = fd_get(fd);
  if (s) {
    std::lock_guard lock(s->mu);
    if (s->state() != Socket::State::armed) return fail(on ? EISCONN : EINVAL);
    if (!on && name == ESOCK_DDPMODE) return fail(EINVAL);  // one-way switch (docs/sockets.md)
    if (name == ESOCK_DDPMODE) s->implicit = false;         // now the application's own choice
    // MSGMODE and RAWMODE exclude each other (RAWMODE has no ESTP stream to delimit).
    if (on && ((name == ESOCK_MSGMODE && s->rawmode()) || (name == ESOCK_RAWMODE && s->msgmode())))
      return fail(EINVAL);
    if (name == ESOCK_MSGMODE) s->set_msgmode(on != 0);
    if (name == ESOCK_RAWMODE) s->set_rawmode(on != 0);
    return 0;
  }
  if (!on) {
    // Turning off something that is off: accepted when the socket could have been armed.
    const int err = check_can_arm(fd);
    return err ? fail(err) : 0;
  }
  if (const int err = check_can_arm(fd); err != 0) return fail(err);
  if (static_cast<unsigned>(fd) >= static_cast<unsigned>(max_ddp_fd)) return fail(EMFILE);
  auto sock = std::make_shared<Socket>();
  // Options set before this one are not known to esock unless the socket shows none.
  if (!holds_more_than_fresh(fd)) sock->option_calls.emplace();
  if (name == ESOCK_MSGMODE) sock->set_msgmode(true);
  if (name == ESOCK_RAWMODE) sock->set_rawmode(true);
  fd_set(fd, std::move(sock));
  return 0;
}

// This program's name (its comm, as ps shows it), for the ddpmode_programs rule.
const std::string& program_name() {
  static const std::string name = [] {
    std::ifstream f("/proc/self/comm");
    std::string n;
    std::getline(f, n);
    return n;
  }();
  return name;
}

void ddp_socket_created(int fd, int domain) {
  if (!config().ddpmode_all || static_cast<unsigned>(fd) >= static_cast<unsigned>(max_ddp_fd))
    return;
  if (!rules_allow_program(config(), program_name())) return;  // rules.h
  if (domain == AF_INET6) {
    // Over kernel TCP (ksock) MPA runs on IPv6 as on IPv4; an own stack (dpdk, lib/tcp) is
    // IPv4 only, so the program's IPv6 socket stays the kernel's, and says so once.
    Provider* p = configured_provider();
    if (p == nullptr || p->own_stack()) {
      static std::once_flag told;
      std::call_once(told, [p] {
        std::fprintf(stderr,
                     "esock: IPv6 sockets stay plain kernel TCP: the %s provider is IPv4 only\n",
                     p != nullptr ? p->name() : "configured");
      });
      return;
    }
  }
  auto s = std::make_shared<Socket>();
  s->implicit = true;
  s->option_calls.emplace();  // fresh: every option set on it comes through esock
  fd_set(fd, std::move(s));
}

int ddp_getsockopt(int fd, int level, int name, void* val, socklen_t* len) {
  auto s = fd_get(fd);
  if (s && level == SOL_SOCKET && name == SO_ERROR && val != nullptr && len != nullptr &&
      *len >= sizeof(int)) {
    // A connect that ended (or goes on) in the runtime (conn_async.cc): its error once, as
    // the kernel reports and clears sk_err; 0 while it is in progress.
    std::lock_guard lk(DdpRuntime::get().mu);
    int err = -1;
    if (s->state() == Socket::State::connecting) err = 0;
    if (s->state() == Socket::State::failed && s->error != 0)
      err = std::exchange(s->error_reported, true) ? 0 : s->error;
    if (err >= 0) {
      std::memcpy(val, &err, sizeof err);
      *len = sizeof err;
      return 0;
    }
  }
  if (level != SOL_ESOCK) return ddp_get_option(fd, level, name, val, len);
  if (name != ESOCK_DDPMODE && name != ESOCK_MSGMODE && name != ESOCK_RAWMODE &&
      name != ESOCK_ZCOPY_MODE)
    return fail(ENOPROTOOPT);
  // As the kernel: no place for the length or the value is EFAULT, one too small EINVAL.
  if (val == nullptr || len == nullptr) return fail(EFAULT);
  if (*len < sizeof(int)) return fail(EINVAL);
  // A descriptor that is not a socket fails the way SOL_SOCKET options would.
  int type = 0;
  socklen_t tl = sizeof type;
  if (!s && ESOCK_LIBC(getsockopt)(fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0) return -1;
  if (name == ESOCK_ZCOPY_MODE && (!s || s->rawmode() || s->msgmode())) return fail(EOPNOTSUPP);
  int on = 0;
  if (name == ESOCK_ZCOPY_MODE)
    on = zcopy_mode(*s);
  else if (s)
    on =
        name == ESOCK_DDPMODE ? 1 : ((name == ESOCK_MSGMODE ? s->msgmode() : s->rawmode()) ? 1 : 0);
  std::memcpy(val, &on, sizeof on);
  *len = sizeof on;
  return 0;
}

}  // namespace esock::sockets
