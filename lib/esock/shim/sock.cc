// Interposed connection-management calls. Pass-through unless the descriptor is DDPMODE
// (or, for setsockopt/getsockopt, the level is SOL_ESOCK).
#include <netinet/in.h>

#include <cerrno>

#include "esock/ddpmode/ops.h"
#include "esock/esock.h"
#include "esock/process/libc.h"
#include "esock/process/private_fds.h"
#include "esock/runtime/fd_table.h"
#include "esock/runtime/relayed_names.h"

using esock::sockets::fd_is_ddp;

namespace {

int name_call(int fd, bool peer, sockaddr* addr, socklen_t* len) {
  const socklen_t room = len != nullptr ? *len : 0;  // the kernel's answer shortens *len
  const int r =
      peer ? ESOCK_LIBC(getpeername)(fd, addr, len) : ESOCK_LIBC(getsockname)(fd, addr, len);
  int out = r;
  if (r == 0 && esock::sockets::relayed_any() && addr != nullptr && room >= sizeof(sa_family_t) &&
      *len >= sizeof(sa_family_t) && addr->sa_family == AF_UNIX) [[unlikely]] {
    const socklen_t kernel_len = *len;
    *len = room;
    if (!esock::sockets::relayed_name(fd, peer, addr, len, &out)) *len = kernel_len;
  }
  return out;
}

}  // namespace

extern "C" {

// ESOCK_DDPMODE_ALL (esockrun --ddp): every TCP socket an unmodified program creates starts
// in DDPMODE, as if it had called setsockopt(SOL_ESOCK, ESOCK_DDPMODE) itself (IPv6 ones
// only where the provider carries IPv6: ddp_socket_created).
int socket(int domain, int type, int protocol) {
  const int fd = ESOCK_LIBC(socket)(domain, type, protocol);
  if (esock::sockets::private_fds_here()) [[unlikely]]  // the stack's own (private_fds.h)
    return esock::sockets::privatize(fd);
  if (fd >= 0 && (domain == AF_INET || domain == AF_INET6) &&
      (type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC)) == SOCK_STREAM &&
      (protocol == 0 || protocol == IPPROTO_TCP)) [[unlikely]]
    esock::sockets::ddp_socket_created(fd, domain);
  return fd;
}

int connect(int fd, const sockaddr* addr, socklen_t len) {
  if (fd_is_ddp(fd)) [[unlikely]]
    return esock::sockets::ddp_connect(fd, addr, len);
  const int r = ESOCK_LIBC(connect)(fd, addr, len);
  // A relay's end (a connection that fell back, already connected): as TCP says again.
  if (r < 0 && errno != EISCONN && esock::sockets::relayed_any() && addr != nullptr &&
      addr->sa_family != AF_UNIX && esock::sockets::relayed_is(fd)) [[unlikely]]
    errno = EISCONN;
  return r;
}

int bind(int fd, const sockaddr* addr, socklen_t len) {
  if (fd_is_ddp(fd)) [[unlikely]]
    return esock::sockets::ddp_bind(fd, addr, len);
  return ESOCK_LIBC(bind)(fd, addr, len);
}

int listen(int fd, int backlog) {
  if (fd_is_ddp(fd)) [[unlikely]]
    return esock::sockets::ddp_listen(fd, backlog);
  return ESOCK_LIBC(listen)(fd, backlog);
}

int accept(int fd, sockaddr* addr, socklen_t* len) {
  if (fd_is_ddp(fd)) [[unlikely]]
    return esock::sockets::ddp_accept(fd, addr, len, 0);
  return esock::sockets::privatize(ESOCK_LIBC(accept)(fd, addr, len));
}

int accept4(int fd, sockaddr* addr, socklen_t* len, int flags) {
  if (fd_is_ddp(fd)) [[unlikely]]
    return esock::sockets::ddp_accept(fd, addr, len, flags);
  return esock::sockets::privatize(ESOCK_LIBC(accept4)(fd, addr, len, flags));
}

int shutdown(int fd, int how) {
  if (fd_is_ddp(fd)) [[unlikely]]
    return esock::sockets::ddp_shutdown(fd, how);
  return ESOCK_LIBC(shutdown)(fd, how);
}

// A plain relay's end (runtime/relayed_names.h) is asked about only after the kernel's
// answer showed an AF_UNIX socket or refused a TCP option, so other calls pay nothing.
int setsockopt(int fd, int level, int name, const void* val, socklen_t len) {
  if (level == SOL_ESOCK || fd_is_ddp(fd)) [[unlikely]]
    return esock::sockets::ddp_setsockopt(fd, level, name, val, len);
  int r = ESOCK_LIBC(setsockopt)(fd, level, name, val, len);
  if (r < 0 && errno == EOPNOTSUPP && esock::sockets::relayed_any()) [[unlikely]] {
    const int err = errno;
    if (!esock::sockets::relayed_setsockopt(fd, level, name, val, len, &r)) errno = err;
  }
  return r;
}

int getsockopt(int fd, int level, int name, void* val, socklen_t* len) {
  if (level == SOL_ESOCK || fd_is_ddp(fd)) [[unlikely]]
    return esock::sockets::ddp_getsockopt(fd, level, name, val, len);
  int r = ESOCK_LIBC(getsockopt)(fd, level, name, val, len);
  if (esock::sockets::relayed_any()) [[unlikely]] {
    const bool unix_family = r == 0 && level == SOL_SOCKET && val != nullptr &&
                             *len >= sizeof(int) &&
                             ((name == SO_DOMAIN && *static_cast<int*>(val) == AF_UNIX) ||
                              (name == SO_PROTOCOL && *static_cast<int*>(val) == 0));
    const int err = errno;
    if ((unix_family || (r < 0 && err == EOPNOTSUPP)) &&
        !esock::sockets::relayed_getsockopt(fd, level, name, val, len, &r))
      errno = err;
  }
  return r;
}

int getsockname(int fd, sockaddr* addr, socklen_t* len) {
  if (fd_is_ddp(fd)) [[unlikely]]
    return esock::sockets::ddp_getname(fd, false, addr, len);
  return name_call(fd, false, addr, len);
}

int getpeername(int fd, sockaddr* addr, socklen_t* len) {
  if (fd_is_ddp(fd)) [[unlikely]]
    return esock::sockets::ddp_getname(fd, true, addr, len);
  return name_call(fd, true, addr, len);
}

}  // extern "C"
