// Interposed descriptor calls: the kernel does the work, then the DDPMODE table follows the
// numbers (a dup shares the Socket, a close drops a reference, dup2 over a DDPMODE number
// drops that one's).
#include <dirent.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdlib>
#include <memory>
#include <vector>

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

// close_range/closefrom over [lo, hi]:
// * the DDPMODE numbers there leave the table (as close does), so a number reused later is
//   never taken for the old socket, and come back if the kernel call fails;
// * esock's own descriptors (move_high: close-on-exec, from the lowest it made up) carry the
//   process's DDPMODE connections and stay open. Up there a descriptor closes when it is a
//   DDPMODE number (an application's) or not close-on-exec, looked up in /proc/self/fd; a
//   program's other close-on-exec descriptors that high stay open (an exec, what closefrom
//   usually precedes, closes them anyway).
int close_numbers(unsigned lo, unsigned hi, int flags) {
  std::vector<std::pair<int, std::shared_ptr<esock::sockets::Socket>>> taken;
  const unsigned top = std::min<unsigned>(hi, esock::sockets::max_ddp_fd - 1);
  for (unsigned fd = lo; fd <= top && lo < esock::sockets::max_ddp_fd; ++fd)
    if (fd_is_ddp(static_cast<int>(fd)))
      taken.emplace_back(static_cast<int>(fd), esock::sockets::fd_take(static_cast<int>(fd)));
  const auto priv = static_cast<unsigned>(esock::sockets::lowest_private_fd());
  int r = 0;
  if (lo < priv) r = ESOCK_LIBC(close_range)(lo, std::min(hi, priv - 1), flags);
  if (r != 0) {
    for (auto& [fd, s] : taken) esock::sockets::fd_set(fd, std::move(s));
    return r;
  }
  if (hi >= priv) {
    std::vector<int> high;
    if (DIR* d = ::opendir("/proc/self/fd")) {
      while (const dirent* e = ::readdir(d)) {
        const long fd = std::strtol(e->d_name, nullptr, 10);
        if (e->d_name[0] != '.' && fd >= std::max(lo, priv) && fd <= hi)
          high.push_back(static_cast<int>(fd));
      }
      ::closedir(d);
    }
    for (int fd : high) {
      const bool app_ddp =
          std::any_of(taken.begin(), taken.end(), [fd](const auto& t) { return t.first == fd; });
      if (app_ddp || (ESOCK_LIBC(fcntl)(fd, F_GETFD) & FD_CLOEXEC) == 0) ESOCK_LIBC(close)(fd);
    }
  }
  for (auto& t : taken) esock::sockets::ddp_release(std::move(t.second));
  return r;
}

}  // namespace

extern "C" {

int close_range(unsigned int lo, unsigned int hi, int flags) {
  if ((flags & CLOSE_RANGE_CLOEXEC) || lo > hi || esock::sockets::in_vfork_child())
    return ESOCK_LIBC(close_range)(lo, hi, flags);  // marks, EINVAL, or a vfork child's
  return close_numbers(lo, hi, flags);
}

void closefrom(int lo) {
  if (esock::sockets::in_vfork_child()) {  // the parent's tables are in this memory
    (void)ESOCK_LIBC(close_range)(static_cast<unsigned>(lo < 0 ? 0 : lo), ~0u, 0);
    return;
  }
  (void)close_numbers(static_cast<unsigned>(lo < 0 ? 0 : lo), ~0u, 0);
}

int close(int fd) {
  if (fd_is_ddp(fd) && !esock::sockets::in_vfork_child()) [[unlikely]] {
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
  if (esock::sockets::in_vfork_child()) return ESOCK_LIBC(dup2)(oldfd, newfd);
  return dup_over(oldfd, newfd, [&] { return ESOCK_LIBC(dup2)(oldfd, newfd); });
}

int dup3(int oldfd, int newfd, int flags) {
  if (esock::sockets::in_vfork_child()) return ESOCK_LIBC(dup3)(oldfd, newfd, flags);
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
