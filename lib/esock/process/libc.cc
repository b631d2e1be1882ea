#include "esock/process/libc.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>

namespace esock::sockets {

Libc libc;

void resolve_libc() {
  // RTLD_NEXT: the definition after ours in the lookup order, i.e. libc's whether esock
  // was preloaded or linked with -lesock. Assigning through a void* cast is the dlsym idiom.
  Libc l;
#define ESOCK_LIBC_RESOLVE(name, ret, params) \
  l.name = reinterpret_cast<ret(*) params>(::dlsym(RTLD_NEXT, #name));
  ESOCK_LIBC_FUNCTIONS(ESOCK_LIBC_RESOLVE)
#undef ESOCK_LIBC_RESOLVE
  libc = l;
}

namespace {
[[gnu::constructor(101)]] void resolve_at_load() {
  resolve_libc();
}
}  // namespace

namespace {
std::atomic<int> lowest_private{INT_MAX};
std::atomic<pid_t> own_pid{0};
[[gnu::constructor(102)]] void pid_at_load() {
  note_pid();
  // A fork() child runs this (vfork and posix_spawn do not), before anything else of
  // esock's: without it a process that forked before its first DDPMODE socket (so before
  // the runtime registered its own handlers) took itself for a vfork child for good, and
  // its close() left DDPMODE numbers in the table for the next kernel socket to inherit.
  ::pthread_atfork(nullptr, nullptr, note_pid);
}
}  // namespace

void note_pid() {
  own_pid.store(::getpid(), std::memory_order_relaxed);
}

bool in_vfork_child() {
  return ::getpid() != own_pid.load(std::memory_order_relaxed);
}

int lowest_private_fd() {
  return lowest_private.load(std::memory_order_relaxed);
}

int move_high(int fd) {
  rlimit rl{};
  int base = 64;
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur > 256)
    base = static_cast<int>(std::min<rlim_t>(rl.rlim_cur / 2, 1 << 15));
  int r = ESOCK_LIBC(fcntl)(fd, F_DUPFD_CLOEXEC, base);
  // Only numbers from the private region count for close_range/closefrom (shim/fd.cc); a
  // fallback low number is not spared there.
  for (int low = lowest_private.load(); r >= 0 && r < low;)
    if (lowest_private.compare_exchange_weak(low, r)) break;
  if (r < 0) r = ESOCK_LIBC(fcntl)(fd, F_DUPFD_CLOEXEC, 3);
  return r;
}

int private_pair(int type, int fds[2]) {
  int sp[2];
  if (::socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sp) < 0) return -1;
  fds[0] = move_high(sp[0]);
  fds[1] = move_high(sp[1]);
  const int err = errno;
  ESOCK_LIBC(close)(sp[0]);
  ESOCK_LIBC(close)(sp[1]);
  if (fds[0] >= 0 && fds[1] >= 0) return 0;
  for (int fd : {fds[0], fds[1]})
    if (fd >= 0) ESOCK_LIBC(close)(fd);
  errno = err;
  return -1;
}

}  // namespace esock::sockets
