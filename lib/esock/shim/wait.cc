// Interposed readiness waits. A DDPMODE number is a kernel descriptor whose readiness the
// runtime keeps current, so these calls always work unchanged (sets that mix esock and
// kernel descriptors included). On an own-stack provider the waiting thread also runs the
// stack itself for the spin budget (DdpRuntime::wait_ready), as a blocking read does,
// instead of sleeping until the progress thread's round wakes it. Elsewhere (ksock, or
// before any own stack started) they cost one flag load; poll and select also pass
// straight through when none of their descriptors is DDPMODE (epoll_wait cannot tell). ppoll,
// pselect and epoll_pwait apply their signal mask on every look as on the final wait, so a
// signal it unblocks still ends the wait with EINTR; the fortified __poll_chk/__ppoll_chk
// take the same path after their check.
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>

#include <cstring>

#include "esock/ddpmode/ops.h"
#include "esock/process/libc.h"
#include "esock/runtime/fd_table.h"
#include "esock/runtime/runtime.h"

using esock::sockets::DdpRuntime;
using esock::sockets::fd_is_ddp;
using esock::sockets::readiness_spins;

namespace {

// Only waits that involve a DDPMODE number spin: esock's own waits on its private
// descriptors, and a program's on kernel descriptors only, go straight to the kernel.
bool any_ddp(const pollfd* fds, nfds_t n) {
  for (nfds_t i = 0; i < n; ++i)
    if (fd_is_ddp(fds[i].fd)) return true;
  return false;
}

bool any_ddp(int nfds, fd_set* const sets[3]) {
  for (int fd = 0; fd < nfds; ++fd)
    for (int i = 0; i < 3; ++i)
      if (sets[i] && FD_ISSET(fd, sets[i]) && fd_is_ddp(fd)) return true;
  return false;
}

// A pre-forked worker waiting for its listener copy to poll readable asks the parent for a
// connection first (ddp_wait_readable), or it would wait for good.
void ask_for_connections(const pollfd* fds, nfds_t n) {
  for (nfds_t i = 0; i < n; ++i)
    if ((fds[i].events & POLLIN) && fd_is_ddp(fds[i].fd))
      esock::sockets::ddp_wait_readable(fds[i].fd);
}

void ask_for_connections(int nfds, const fd_set* rd) {
  if (rd == nullptr || nfds < 0 || nfds > FD_SETSIZE) return;
  for (int fd = 0; fd < nfds; ++fd)
    if (FD_ISSET(fd, rd) && fd_is_ddp(fd)) esock::sockets::ddp_wait_readable(fd);
}

bool fork_children_listen() {
  return esock::sockets::fork_queue_listeners.load(std::memory_order_relaxed);
}

// select's timeout as poll's milliseconds (rounded up, as the kernel rounds a sleep up).
int select_ms(const timeval* t) {
  if (t == nullptr) return -1;
  if (t->tv_sec < 0 || t->tv_usec < 0) return 0;  // the kernel says EINVAL; the call will
  const long long ms = static_cast<long long>(t->tv_sec) * 1000 + (t->tv_usec + 999) / 1000;
  return ms > 0x7fffffff ? 0x7fffffff : static_cast<int>(ms);
}

int timespec_ms(const timespec* t) {
  if (t == nullptr) return -1;
  if (t->tv_sec < 0 || t->tv_nsec < 0) return 0;  // EINVAL from the kernel's own call
  const long long ms = static_cast<long long>(t->tv_sec) * 1000 + (t->tv_nsec + 999999) / 1000000;
  return ms > 0x7fffffff ? 0x7fffffff : static_cast<int>(ms);
}

timespec ms_timespec(int t) {
  return timespec{t / 1000, static_cast<long>(t % 1000) * 1000000};
}

// select and pselect: every look starts from the caller's sets, and only the answer that
// ends the wait (or the final wait's) is written back. look(sets, t) makes the kernel call
// with timeout t (ms, -1 forever).
template <class Look>
int select_like(fd_set* const user[3], int timeout_ms, const sigset_t* mask, Look look) {
  fd_set in[3];
  for (int i = 0; i < 3; ++i)
    if (user[i]) in[i] = *user[i];
  return DdpRuntime::get().wait_ready(
      [&](int t) {
        fd_set work[3];
        fd_set* arg[3] = {nullptr, nullptr, nullptr};
        for (int i = 0; i < 3; ++i)
          if (user[i]) {
            work[i] = in[i];
            arg[i] = &work[i];
          }
        const int r = look(arg, t);
        if (r != 0 || t != 0)  // the answer (or the final wait's): the caller's to see
          for (int i = 0; i < 3; ++i)
            if (user[i]) *user[i] = work[i];
        return r;
      },
      timeout_ms, mask);
}

}  // namespace

extern "C" {

int poll(pollfd* fds, nfds_t n, int timeout) {
  if (fork_children_listen()) [[unlikely]]
    ask_for_connections(fds, n);
  if (!readiness_spins() || !any_ddp(fds, n)) [[likely]]
    return ESOCK_LIBC(poll)(fds, n, timeout);
  return DdpRuntime::get().wait_ready([&](int t) { return ESOCK_LIBC(poll)(fds, n, t); }, timeout);
}

int epoll_wait(int epfd, epoll_event* events, int max, int timeout) {
  if (!readiness_spins()) [[likely]]
    return ESOCK_LIBC(epoll_wait)(epfd, events, max, timeout);
  return DdpRuntime::get().wait_ready(
      [&](int t) { return ESOCK_LIBC(epoll_wait)(epfd, events, max, t); }, timeout);
}

// The epoll sets a DDPMODE number is in are remembered, so they keep watching it should a
// connect fall back to plain TCP and another file take the number (ddpmode/conn_async.cc).
int epoll_ctl(int epfd, int op, int fd, epoll_event* ev) {
  if (fd_is_ddp(fd)) [[unlikely]]
    return esock::sockets::ddp_epoll_ctl(epfd, op, fd, ev);
  return ESOCK_LIBC(epoll_ctl)(epfd, op, fd, ev);
}

// select rewrites its sets (and Linux its timeout, with the time not slept: a look during
// the spin slept none, so only the final wait's remainder is written back).
int select(int nfds, fd_set* rd, fd_set* wr, fd_set* ex, timeval* timeout) {
  fd_set* const user[3] = {rd, wr, ex};
  if (fork_children_listen()) [[unlikely]]
    ask_for_connections(nfds, rd);
  if (!readiness_spins() || nfds < 0 || nfds > FD_SETSIZE || !any_ddp(nfds, user)) [[likely]]
    return ESOCK_LIBC(select)(nfds, rd, wr, ex, timeout);
  return select_like(user, select_ms(timeout), nullptr, [&](fd_set* const* arg, int t) {
    timeval tv{t / 1000, (t % 1000) * 1000};
    const int r = ESOCK_LIBC(select)(nfds, arg[0], arg[1], arg[2], t < 0 ? nullptr : &tv);
    if (timeout && t > 0) *timeout = tv;
    return r;
  });
}

int pselect(int nfds, fd_set* rd, fd_set* wr, fd_set* ex, const timespec* timeout,
            const sigset_t* mask) {
  fd_set* const user[3] = {rd, wr, ex};
  if (fork_children_listen()) [[unlikely]]
    ask_for_connections(nfds, rd);
  if (!readiness_spins() || nfds < 0 || nfds > FD_SETSIZE || !any_ddp(nfds, user)) [[likely]]
    return ESOCK_LIBC(pselect)(nfds, rd, wr, ex, timeout, mask);
  return select_like(user, timespec_ms(timeout), mask, [&](fd_set* const* arg, int t) {
    const timespec ts = ms_timespec(t);
    return ESOCK_LIBC(pselect)(nfds, arg[0], arg[1], arg[2], t < 0 ? nullptr : &ts, mask);
  });
}

int ppoll(pollfd* fds, nfds_t n, const timespec* timeout, const sigset_t* mask) {
  if (fork_children_listen()) [[unlikely]]
    ask_for_connections(fds, n);
  if (!readiness_spins() || !any_ddp(fds, n)) [[likely]]
    return ESOCK_LIBC(ppoll)(fds, n, timeout, mask);
  return DdpRuntime::get().wait_ready(
      [&](int t) {
        const timespec ts = ms_timespec(t);
        return ESOCK_LIBC(ppoll)(fds, n, t < 0 ? nullptr : &ts, mask);
      },
      timespec_ms(timeout), mask);
}

int epoll_pwait(int epfd, epoll_event* events, int max, int timeout, const sigset_t* mask) {
  if (!readiness_spins()) [[likely]]
    return ESOCK_LIBC(epoll_pwait)(epfd, events, max, timeout, mask);
  return DdpRuntime::get().wait_ready(
      [&](int t) { return ESOCK_LIBC(epoll_pwait)(epfd, events, max, t, mask); }, timeout, mask);
}

// _FORTIFY_SOURCE's poll and ppoll: glibc's check, then the calls above.
int __poll_chk(pollfd* fds, nfds_t n, int timeout, size_t fdslen) {
  if (fdslen / sizeof(*fds) < n) __builtin_trap();  // what glibc's __chk_fail amounts to
  return poll(fds, n, timeout);
}

int __ppoll_chk(pollfd* fds, nfds_t n, const timespec* timeout, const sigset_t* mask,
                size_t fdslen) {
  if (fdslen / sizeof(*fds) < n) __builtin_trap();
  return ppoll(fds, n, timeout, mask);
}

}  // extern "C"
