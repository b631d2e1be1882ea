// The descriptor-creating calls DPDK's EAL, its interrupt thread and the memif driver make,
// interposed so that, on a thread in a PrivateFdScope or one such a thread created, what
// they return lives in esock's private range (process/private_fds.h says why). Everywhere
// else they pass straight through for the price of a thread-local load.
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "esock/process/libc.h"
#include "esock/process/private_fds.h"

using esock::sockets::private_fds_here;
using esock::sockets::privatize;

namespace {

int privatize_pair(int r, int fds[2]) {
  if (r == 0 && private_fds_here()) [[unlikely]] {
    fds[0] = privatize(fds[0]);
    fds[1] = privatize(fds[1]);
  }
  return r;
}

struct PrivateStart {
  void* (*fn)(void*);
  void* arg;
};

// The start routines in flight, in a fixed table rather than on the heap: start_private
// runs before whatever start routine it wraps (a sanitizer's, which sets the thread up),
// so it allocates nothing. DPDK starts a few control threads; should more be in flight at
// once, the others start unwrapped (their descriptors stay where the kernel puts them).
constexpr int slots = 16;
PrivateStart slot[slots];
std::atomic<bool> slot_used[slots];

void* start_private(void* p) {
  auto* s = static_cast<PrivateStart*>(p);
  const PrivateStart copy = *s;
  slot_used[s - slot].store(false, std::memory_order_release);
  esock::sockets::private_fds_for_life();
  return copy.fn(copy.arg);
}

}  // namespace

extern "C" {

int pipe(int fds[2]) {
  return privatize_pair(ESOCK_LIBC(pipe)(fds), fds);
}

int pipe2(int fds[2], int flags) {
  return privatize_pair(ESOCK_LIBC(pipe2)(fds, flags), fds);
}

int eventfd(unsigned int count, int flags) {
  return privatize(ESOCK_LIBC(eventfd)(count, flags));
}

int epoll_create(int size) {
  return privatize(ESOCK_LIBC(epoll_create)(size));
}

int epoll_create1(int flags) {
  return privatize(ESOCK_LIBC(epoll_create1)(flags));
}

int timerfd_create(int clock, int flags) {
  return privatize(ESOCK_LIBC(timerfd_create)(clock, flags));
}

int memfd_create(const char* name, unsigned int flags) {
  return privatize(ESOCK_LIBC(memfd_create)(name, flags));
}

// DPDK's control threads (its interrupt thread, which runs the memif driver's connection
// handling) are created inside the scope and open descriptors for as long as they live.
int pthread_create(pthread_t* t, const pthread_attr_t* attr, void* (*fn)(void*), void* arg) {
  if (!private_fds_here()) [[likely]]
    return ESOCK_LIBC(pthread_create)(t, attr, fn, arg);
  for (int i = 0; i < slots; ++i) {
    bool free = false;
    if (!slot_used[i].compare_exchange_strong(free, true, std::memory_order_acquire)) continue;
    slot[i] = PrivateStart{fn, arg};
    const int r = ESOCK_LIBC(pthread_create)(t, attr, start_private, &slot[i]);
    if (r != 0) slot_used[i].store(false, std::memory_order_release);
    return r;
  }
  return ESOCK_LIBC(pthread_create)(t, attr, fn, arg);
}

}  // extern "C"
