// Interposed connection-management calls. Pass-through unless the descriptor is DDPMODE
// (or, for setsockopt/getsockopt, the level is SOL_ESOCK).
#include <netinet/in.h>

#include <cerrno>

#include "esock/ddpmode/ops.h"
#include "esock/esock.h"
#include "esock/process/libc.h"
#include "esock/runtime/fd_table.h"

using esock::sockets::fd_is_ddp;

extern "C" {

// ESOCK_DDPMODE_ALL (esockrun --ddp): every TCP socket an unmodified program creates starts
// in DDPMODE, as if it had called setsockopt(SOL_ESOCK, ESOCK_DDPMODE) itself (IPv6 ones
// only where the provider carries IPv6: ddp_socket_created).
int socket(int domain, int type, int protocol) {
  const int fd = ESOCK_LIBC(socket)(domain, type, protocol);
  if (fd >= 0 && (domain == AF_INET || domain == AF_INET6) &&
      (type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC)) == SOCK_STREAM &&
      (protocol == 0 || protocol == IPPROTO_TCP)) [[unlikely]]
    esock::sockets::ddp_socket_created(fd, domain);
  return fd;
}

int connect(int fd, const sockaddr* addr, socklen_t len) {
  if (fd_is_ddp(fd)) [[unlikely]]
    return esock::sockets::ddp_connect(fd, addr, len);
  return ESOCK_LIBC(connect)(fd, addr, len);
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
  return ESOCK_LIBC(accept)(fd, addr, len);
}

int accept4(int fd, sockaddr* addr, socklen_t* len, int flags) {
  if (fd_is_ddp(fd)) [[unlikely]]
    return esock::sockets::ddp_accept(fd, addr, len, flags);
  return ESOCK_LIBC(accept4)(fd, addr, len, flags);
}

int shutdown(int fd, int how) {
  if (fd_is_ddp(fd)) [[unlikely]]
    return esock::sockets::ddp_shutdown(fd, how);
  return ESOCK_LIBC(shutdown)(fd, how);
}

int setsockopt(int fd, int level, int name, const void* val, socklen_t len) {
  if (level == SOL_ESOCK || fd_is_ddp(fd)) [[unlikely]]
    return esock::sockets::ddp_setsockopt(fd, level, name, val, len);
  return ESOCK_LIBC(setsockopt)(fd, level, name, val, len);
}

int getsockopt(int fd, int level, int name, void* val, socklen_t* len) {
  if (level == SOL_ESOCK || fd_is_ddp(fd)) [[unlikely]]
    return esock::sockets::ddp_getsockopt(fd, level, name, val, len);
  return ESOCK_LIBC(getsockopt)(fd, level, name, val, len);
}

int getsockname(int fd, sockaddr* addr, socklen_t* len) {
  if (fd_is_ddp(fd)) [[unlikely]]
    return esock::sockets::ddp_getname(fd, false, addr, len);
  return ESOCK_LIBC(getsockname)(fd, addr, len);
}

int getpeername(int fd, sockaddr* addr, socklen_t* len) {
  if (fd_is_ddp(fd)) [[unlikely]]
    return esock::sockets::ddp_getname(fd, true, addr, len);
  return ESOCK_LIBC(getpeername)(fd, addr, len);
}

}  // extern "C"
