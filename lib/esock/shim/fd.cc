// Interposed descriptor calls: the kernel does the work, then the DDPMODE table follows the
// numbers (a dup shares the Socket, a close drops a reference, dup2 over a DDPMODE number
// drops that one's).
#include <fcntl.h>

#include <cerrno>
#include <cstdarg>
#include <memory>

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

// dup2/dup3 over a DDPMODE number: its table entry goes first (fd_take) and comes back if
// the call fails, so the number never names the old socket once it names the new file.
template <class Dup>
int dup_over(int oldfd, int newfd, Dup dup) {
  std::shared_ptr<esock::sockets::Socket> replaced;
  if (oldfd != newfd && fd_is_ddp(newfd)) replaced = esock::sockets::fd_take(newfd);
  const int r = dup();
  if (r < 0) {
    if (replaced) esock::sockets::fd_set(newfd, std::move(replaced));
    return r;
  }
  if (oldfd != newfd && fd_is_ddp(oldfd)) esock::sockets::ddp_duplicated(oldfd, newfd);
  esock::sockets::ddp_release(std::move(replaced));
  return r;
}

}  // namespace

extern "C" {

int close(int fd) {
  if (fd_is_ddp(fd)) [[unlikely]] {
    auto s = esock::sockets::fd_take(fd);
    const int r = ESOCK_LIBC(close)(fd);
    // Linux releases the number even when close reports an error (EINTR included).
    esock::sockets::ddp_release(std::move(s));
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
  return dup_over(oldfd, newfd, [&] { return ESOCK_LIBC(dup2)(oldfd, newfd); });
}

int dup3(int oldfd, int newfd, int flags) {
  return dup_over(oldfd, newfd, [&] { return ESOCK_LIBC(dup3)(oldfd, newfd, flags); });
}

int fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  const unsigned long arg = va_arg(ap, unsigned long);
  va_end(ap);
  return fcntl_common(ESOCK_LIBC(fcntl), fd, cmd, arg);
}

// ioctl's third argument is a pointer for every request esock handles (FIONBIO, FIONREAD)
// and an int or pointer-sized value otherwise, passed on unchanged as fcntl's is.
int ioctl(int fd, unsigned long request, ...) {
  va_list ap;
  va_start(ap, request);
  void* const arg = va_arg(ap, void*);
  va_end(ap);
  if (fd_is_ddp(fd)) [[unlikely]]
    return esock::sockets::ddp_ioctl(fd, request, arg);
  return ESOCK_LIBC(ioctl)(fd, request, arg);
}

int fcntl64(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  const unsigned long arg = va_arg(ap, unsigned long);
  va_end(ap);
  return fcntl_common(ESOCK_LIBC(fcntl64), fd, cmd, arg);
}

}  // extern "C"
