// Interposed descriptor calls: the kernel does the work, then the DDPMODE table follows the
// numbers (a dup shares the Socket, a close drops a reference, dup2 over a DDPMODE number
// drops that one's).
#include <fcntl.h>

#include <cerrno>
#include <cstdarg>

#include "esock/ddpmode/ops.h"
#include "esock/process/libc.h"
#include "esock/runtime/fd_table.h"

using esock::sockets::fd_is_ddp;

namespace {

// fcntl's third argument is an int or a pointer depending on cmd; reading it as a pointer-
// sized integer and passing it on is what every fcntl wrapper does (the ABI passes both in
// the same register).
int fcntl_common(int (*real)(int, int, ...), int fd, int cmd, unsigned long arg) {
  const bool ddp = fd_is_ddp(fd);
  if (ddp && cmd == F_SETFL) return esock::sockets::ddp_fcntl_setfl(fd, static_cast<int>(arg));
  const int r = real(fd, cmd, arg);
  if (ddp && r >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC))
    esock::sockets::ddp_duplicated(fd, r);
  return r;
}

}  // namespace

extern "C" {

int close(int fd) {
  if (fd_is_ddp(fd)) [[unlikely]] {
    const int r = ESOCK_LIBC(close)(fd);
    // Linux releases the number even when close reports an error (EINTR included).
    esock::sockets::ddp_closed(fd);
    return r;
  }
  return ESOCK_LIBC(close)(fd);
}

int dup(int fd) {
  const int r = ESOCK_LIBC(dup)(fd);
  if (r >= 0 && fd_is_ddp(fd)) [[unlikely]]
    esock::sockets::ddp_duplicated(fd, r);
  return r;
}

int dup2(int oldfd, int newfd) {
  const bool replaced = oldfd != newfd && fd_is_ddp(newfd);
  const int r = ESOCK_LIBC(dup2)(oldfd, newfd);
  if (r >= 0 && oldfd != newfd) {
    if (replaced) esock::sockets::ddp_closed(newfd);
    if (fd_is_ddp(oldfd)) esock::sockets::ddp_duplicated(oldfd, newfd);
  }
  return r;
}

int dup3(int oldfd, int newfd, int flags) {
  const bool replaced = oldfd != newfd && fd_is_ddp(newfd);
  const int r = ESOCK_LIBC(dup3)(oldfd, newfd, flags);
  if (r >= 0) {
    if (replaced) esock::sockets::ddp_closed(newfd);
    if (fd_is_ddp(oldfd)) esock::sockets::ddp_duplicated(oldfd, newfd);
  }
  return r;
}

int fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  const unsigned long arg = va_arg(ap, unsigned long);
  va_end(ap);
  return fcntl_common(ESOCK_LIBC(fcntl), fd, cmd, arg);
}

int fcntl64(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  const unsigned long arg = va_arg(ap, unsigned long);
  va_end(ap);
  return fcntl_common(ESOCK_LIBC(fcntl64), fd, cmd, arg);
}

}  // extern "C"
