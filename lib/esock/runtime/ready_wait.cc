// Run to completion for readiness waits (docs/sockets.md, "Progress and locking"): a thread
// in poll/select/epoll_wait on an own-stack process runs the stack's rounds itself between
// non-blocking looks at the kernel's readiness, for the spin budget, before it sleeps in the
// kernel as before. A frame that makes a DDPMODE number readable then reaches the waiting
// thread in that thread, not through the progress thread and a wake-up.
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cerrno>

#include "esock/runtime/runtime.h"

namespace esock::sockets {
namespace {

// Set once an own stack runs in auto/inline mode: the shims' only cost before that is one
// relaxed load.
std::atomic<bool> g_spins{false};

// Synchronous signals stay deliverable while spinning: blocking them would turn a fault in
// the program's own handlers' code paths into a kill (and the spin itself does not fault).
sigset_t spin_mask() {
  sigset_t s;
  sigfillset(&s);
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS}) sigdelset(&s, sig);
  return s;
}

// A signal among `watched` (those held for the spin that the caller had not blocked) is
// pending: the kernel's wait would have returned EINTR for it (poll, select and epoll_wait
// are never restarted, signal(7)). One system call and a set intersection per look.
bool signal_waiting(const sigset_t& watched) {
  sigset_t pending;
  if (::sigpending(&pending) != 0) return false;
  sigandset(&pending, &pending, &watched);
  return sigisemptyset(&pending) == 0;
}

}  // namespace

bool readiness_spins() {
  return g_spins.load(std::memory_order_relaxed);
}

void DdpRuntime::enable_readiness_spin() {
  if (process_ && stack_ != nullptr && mode_ != ProgressMode::thread)
    g_spins.store(true, std::memory_order_relaxed);
}

int DdpRuntime::wait_ready(function_ref<int(int timeout_ms)> kernel, int timeout_ms,
                           const sigset_t* wait_mask) {
  if (timeout_ms == 0) return kernel(0);
  const auto start = CallClock::now();
  // Signals are held while spinning and looked for between rounds, so one that arrives
  // still ends the wait with EINTR after its handler ran, as the kernel's sleep would.
  const sigset_t hold = spin_mask();
  sigset_t callers;
  if (::pthread_sigmask(SIG_BLOCK, &hold, &callers) != 0) return kernel(timeout_ms);
  const auto unhold = [&] { ::pthread_sigmask(SIG_SETMASK, &callers, nullptr); };
  // Held now, deliverable during the caller's wait: not in its mask, or (ppoll, pselect,
  // epoll_pwait) not in the mask it gave for the wait, which each look applies too.
  const sigset_t& during = wait_mask != nullptr ? *wait_mask : callers;
  sigset_t watched = hold;
  for (int sig = 1; sig < NSIG; ++sig)
    if (sigismember(&during, sig) == 1) sigdelset(&watched, sig);
  // A watched signal is pending: the wait ends with EINTR once its handler ran.
  const auto interrupted = [&] {
    // A caller's wait mask (ppoll, pselect, epoll_pwait): the kernel's call with that
    // mask, while the rest is still held, delivers the signal it unblocks; else the
    // handler runs when the caller's own mask comes back. Either way EINTR.
    const int k = wait_mask != nullptr ? kernel(0) : 0;
    unhold();
    if (k > 0) return k;
    errno = EINTR;
    return -1;
  };
  auto idle_since = start;
  bool spun = false;
  for (;;) {
    const int r = kernel(0);
    if (r != 0) {
      unhold();
      return r;
    }
    if (signal_waiting(watched)) return interrupted();
    bool did = false;
    {
      std::unique_lock lk(mu);
      // One poller at a time (a thread in a blocking esock call may be it): then this one
      // only looks, and sleeps in the kernel once the budget is spent.
      if (stack_ == nullptr || stack_of_parent_ || poller_) break;
      poller_ = true;
      did = round();
      poller_ = false;
      ++inline_rounds_;
      spun = true;
    }
    // No clock read on a busy round of an unbounded wait (as poll_inline): the idle
    // stretch starts at the next empty round.
    if (did && timeout_ms < 0) {
      idle_since = {};
      continue;
    }
    const auto now = CallClock::now();
    if (did || idle_since == CallClock::time_point{}) idle_since = now;
    if (timeout_ms > 0 && now - start >= std::chrono::milliseconds(timeout_ms)) {
      unhold();
      return kernel(0);
    }
    if (now - idle_since >= spin_) break;
  }
  if (spun) {
    // The progress thread takes over at once (it rests while application threads poll).
    std::lock_guard lk(mu);
    rounds_seen_ = inline_rounds_;
    app_seen_ = CallClock::time_point{};
    wake();
  }
  // Signals stay held until the kernel's wait is next: one that came after the last look
  // (while this thread waited for the lock, above or in the loop) is pending now and ends
  // the wait here. Unheld earlier, its handler ran at once and the kernel's wait below
  // slept on for the whole timeout (DpdkFd.ASignal*: 1 run in 4 to 6 on this machine
  // before, about 1 in 12 after; what is left is not understood yet).
  if (signal_waiting(watched)) return interrupted();
  unhold();
  if (timeout_ms < 0) return kernel(-1);
  const auto left = std::chrono::milliseconds(timeout_ms) -
                    std::chrono::duration_cast<std::chrono::milliseconds>(CallClock::now() - start);
  return kernel(static_cast<int>(std::max<std::int64_t>(left.count(), 0)));
}

}  // namespace esock::sockets
