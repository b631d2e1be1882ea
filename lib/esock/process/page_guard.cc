#include "esock/process/page_guard.h"

#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <mutex>
#include <new>
#include <utility>

#include "esock/process/fault_signal.h"

namespace esock::sockets::page_guard {

namespace {

// One guard. seq is odd while the guard is on (a seqlock for the handler's reads of the
// bounds, and the futex word its waiters sleep on).
struct Slot {
  std::atomic<std::uint32_t> seq{0};
  std::atomic<std::uintptr_t> begin{0}, end{0};
  std::atomic<std::uint32_t> waiters{0};
  std::atomic<std::uint32_t> faults{0};  // held on this guard (release() hands them out)
  std::atomic<bool> no_access{false};    // Access::none
};

Slot g_slots[max_guards];
std::mutex g_mu;  // protect/release/forget (threads only)
std::atomic<std::uint64_t> g_faults{0};
std::atomic<int> g_active{0};  // guards on
// No-access guards on: the kernel calls that read from a buffer (wait_readable, on every
// pass-through write) look no further while asynchronous writes alone hold guards.
std::atomic<int> g_no_access{0};

std::atomic<int> g_waiting{0};                 // threads waiting for a guard
std::atomic<void (*)()> g_wait_hook{nullptr};  // set_wait_hook

std::atomic<std::uint64_t> g_releases{0};  // guards turned off so far
// The last fault this thread ran again with no guard found: its address, and how many
// guards had been released then.
__thread std::uintptr_t t_retried __attribute__((tls_model("initial-exec"))) = 0;
__thread std::uint64_t t_retried_at __attribute__((tls_model("initial-exec"))) = 0;

long futex(std::atomic<std::uint32_t>* word, int op, std::uint32_t val) {
  return ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), op, val, nullptr, nullptr, 0);
}

// A thread waits on slot s until its sequence leaves q (async-signal-safe).
void wait_on(Slot& s, std::uint32_t q) {
  s.waiters.fetch_add(1, std::memory_order_acq_rel);
  g_waiting.fetch_add(1, std::memory_order_acq_rel);
  if (void (*hook)() = g_wait_hook.load(std::memory_order_acquire)) hook();
  while (s.seq.load(std::memory_order_acquire) == q)
    futex(&s.seq, FUTEX_WAIT_PRIVATE, q);  // EAGAIN when it changed already, EINTR
  g_waiting.fetch_sub(1, std::memory_order_acq_rel);
  s.waiters.fetch_sub(1, std::memory_order_acq_rel);
}

// The guard covering a, or -1; *seq gets its sequence number (odd).
int find(std::uintptr_t a, std::uint32_t* seq) {
  for (int i = 0; i < max_guards; ++i) {
    Slot& s = g_slots[i];
    const std::uint32_t q = s.seq.load(std::memory_order_acquire);
    if ((q & 1) == 0) continue;
    const std::uintptr_t b = s.begin.load(std::memory_order_relaxed);
    const std::uintptr_t e = s.end.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (s.seq.load(std::memory_order_relaxed) != q) continue;  // released meanwhile
    if (a >= b && a < e) {
      *seq = q;
      return i;
    }
  }
  return -1;
}

// Held until the guard is released, then the faulting write runs again.
bool claim_guard_fault(int sig, siginfo_t* info, void* /*uc*/) {
  if (sig != SIGSEGV || info->si_code != SEGV_ACCERR) return false;
  const auto a = reinterpret_cast<std::uintptr_t>(info->si_addr);
  std::uint32_t seq = 0;
  const int i = find(a, &seq);
  if (i < 0) {
    // Maybe released since the fault: run it again once. Again at the same address with
    // no release in between: not ours.
    const std::uint64_t released = g_releases.load(std::memory_order_acquire);
    if (t_retried == a && t_retried_at == released) return false;
    t_retried = a;
    t_retried_at = released;
    return true;
  }
  t_retried = 0;
  const int saved = errno;
  Slot& s = g_slots[i];
  g_faults.fetch_add(1, std::memory_order_relaxed);
  s.faults.fetch_add(1, std::memory_order_relaxed);
  wait_on(s, seq);
  errno = saved;
  return true;
}

void init_once() {
  static std::once_flag once;
  std::call_once(once, [] { add_fault_claim(claim_guard_fault); });
}

std::uintptr_t page_size() {
  static const auto p = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  return p;
}

// Gives write permission back to the pages of [b, e) no other guard covers (mu held):
// guards may overlap (one buffer written twice before the first was pulled).
void unprotect_uncovered(int self, std::uintptr_t b, std::uintptr_t e) {
  while (b < e) {
    // The first other guard that covers b pushes b past it; else the gap up to the next
    // guard that starts inside [b, e) is given back.
    std::uintptr_t next = e;
    bool covered = false;
    for (int j = 0; j < max_guards; ++j) {
      const Slot& o = g_slots[j];
      if (j == self || (o.seq.load(std::memory_order_relaxed) & 1) == 0) continue;
      const std::uintptr_t ob = o.begin.load(std::memory_order_relaxed);
      const std::uintptr_t oe = o.end.load(std::memory_order_relaxed);
      if (ob <= b && b < oe) {
        b = oe;
        covered = true;
        break;
      }
      if (b < ob && ob < next) next = ob;
    }
    if (covered) continue;
    ::mprotect(reinterpret_cast<void*>(b), next - b, PROT_READ | PROT_WRITE);
    b = next;
  }
}

// Turns slot i off (mu held): the pages are writable again before any waiter wakes.
void unguard(int i) {
  Slot& s = g_slots[i];
  unprotect_uncovered(i, s.begin.load(std::memory_order_relaxed),
                      s.end.load(std::memory_order_relaxed));
  g_releases.fetch_add(1, std::memory_order_release);
  s.seq.fetch_add(1, std::memory_order_release);
  g_active.fetch_sub(1, std::memory_order_relaxed);
  if (s.no_access.load(std::memory_order_relaxed))
    g_no_access.fetch_sub(1, std::memory_order_relaxed);
  futex(&s.seq, FUTEX_WAKE_PRIVATE, INT32_MAX);
}

bool overlapping(const void* p, std::size_t len, bool no_access_only) {
  if (len == 0) return false;
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  for (const Slot& s : g_slots) {
    if ((s.seq.load(std::memory_order_acquire) & 1) == 0) continue;
    if (no_access_only && !s.no_access.load(std::memory_order_relaxed)) continue;
    if (a < s.end.load(std::memory_order_relaxed) &&
        s.begin.load(std::memory_order_relaxed) < a + len)
      return true;
  }
  return false;
}

// Blocks until no guard (no no-access guard, if no_access_only) covers an octet of
// [p, p + len). Async-signal-safe, and keeps errno (free() does, glibc 2.33).
void wait_for(const void* p, std::size_t len, bool no_access_only) {
  if (len == 0) return;
  const int saved = errno;
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  for (Slot& s : g_slots) {
    for (;;) {
      const std::uint32_t q = s.seq.load(std::memory_order_acquire);
      if ((q & 1) == 0) break;
      if (no_access_only && !s.no_access.load(std::memory_order_relaxed)) break;
      if (!(a < s.end.load(std::memory_order_relaxed) &&
            s.begin.load(std::memory_order_relaxed) < a + len))
        break;
      wait_on(s, q);
    }
  }
  errno = saved;
}

}  // namespace

int protect(void* begin, std::size_t len, Access access) {
  const auto b = reinterpret_cast<std::uintptr_t>(begin);
  if (len == 0 || b % page_size() != 0 || len % page_size() != 0 || b + len < b) {
    errno = EINVAL;
    return -1;
  }
  init_once();
  const std::lock_guard lk(g_mu);
  for (int i = 0; i < max_guards; ++i) {
    Slot& s = g_slots[i];
    if ((s.seq.load(std::memory_order_relaxed) & 1) != 0) continue;
    // A handler may still read this slot's old bounds: the new ones become visible only
    // after the slot's sequence left the old guard's (the seqlock writer's fence).
    std::atomic_thread_fence(std::memory_order_release);
    s.begin.store(b, std::memory_order_relaxed);
    s.end.store(b + len, std::memory_order_relaxed);
    s.faults.store(0, std::memory_order_relaxed);  // a fork child's forgotten guard's
    s.no_access.store(access == Access::none, std::memory_order_relaxed);
    // On before the pages turn read-only: a fault in between finds its guard.
    s.seq.fetch_add(1, std::memory_order_release);
    if (::mprotect(begin, len, access == Access::none ? PROT_NONE : PROT_READ) != 0) {
      const int err = errno;
      s.seq.fetch_add(1, std::memory_order_release);
      futex(&s.seq, FUTEX_WAKE_PRIVATE, INT32_MAX);  // a wait_unguarded() that saw it on
      errno = err;
      return -1;
    }
    g_active.fetch_add(1, std::memory_order_relaxed);
    if (access == Access::none) g_no_access.fetch_add(1, std::memory_order_relaxed);
    return i;
  }
  errno = ENOSPC;
  return -1;
}

std::uint32_t release(int guard) {
  if (guard < 0 || guard >= max_guards) return 0;
  const std::lock_guard lk(g_mu);
  if ((g_slots[guard].seq.load(std::memory_order_relaxed) & 1) == 0) return 0;
  unguard(guard);
  return g_slots[guard].faults.exchange(0, std::memory_order_relaxed);
}

bool awaited(int guard) {
  if (guard < 0 || guard >= max_guards) return false;
  const Slot& s = g_slots[guard];
  return (s.seq.load(std::memory_order_acquire) & 1) != 0 &&
         s.waiters.load(std::memory_order_acquire) != 0;
}

int waiting() {
  return g_waiting.load(std::memory_order_relaxed);
}

void set_wait_hook(void (*hook)()) {
  g_wait_hook.store(hook, std::memory_order_release);
}

void mark_awaited(const void* p, std::size_t len, Awaiting* a) {
  if (len == 0) return;
  const auto b = reinterpret_cast<std::uintptr_t>(p);
  for (int i = 0; i < max_guards; ++i) {
    Slot& s = g_slots[i];
    const std::uint64_t bit = std::uint64_t{1} << (i % 64);
    if ((a->slots[i / 64] & bit) != 0 || (s.seq.load(std::memory_order_acquire) & 1) == 0) continue;
    if (!(b < s.end.load(std::memory_order_relaxed) &&
          s.begin.load(std::memory_order_relaxed) < b + len))
      continue;
    a->slots[i / 64] |= bit;
    s.waiters.fetch_add(1, std::memory_order_acq_rel);
    if (!a->counted) {
      a->counted = true;
      g_waiting.fetch_add(1, std::memory_order_acq_rel);
      if (void (*hook)() = g_wait_hook.load(std::memory_order_acquire)) hook();
    }
  }
}

void unmark_awaited(Awaiting* a) {
  for (int i = 0; i < max_guards; ++i)
    if ((a->slots[i / 64] & (std::uint64_t{1} << (i % 64))) != 0)
      g_slots[i].waiters.fetch_sub(1, std::memory_order_acq_rel);
  if (a->counted) g_waiting.fetch_sub(1, std::memory_order_acq_rel);
  *a = Awaiting{};
}

bool any() {
  return g_active.load(std::memory_order_relaxed) != 0;
}

std::uint64_t faults_taken() {
  return g_faults.load(std::memory_order_relaxed);
}

bool all_unguarded(const void* p, std::size_t len, bool (*f)(const void* begin, std::size_t len)) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t e = a + len;
  std::pair<std::uintptr_t, std::uintptr_t> cover[max_guards];  // guards inside, clipped
  int n = 0;
  for (const Slot& s : g_slots) {
    if ((s.seq.load(std::memory_order_acquire) & 1) == 0) continue;
    const std::uintptr_t b = std::max(a, s.begin.load(std::memory_order_relaxed));
    const std::uintptr_t c = std::min(e, s.end.load(std::memory_order_relaxed));
    if (b < c) cover[n++] = {b, c};
  }
  std::sort(cover, cover + n);
  std::uintptr_t at = a;
  for (int i = 0; i < n; ++i) {
    if (cover[i].first > at && !f(reinterpret_cast<const void*>(at), cover[i].first - at))
      return false;
    at = std::max(at, cover[i].second);
  }
  return at >= e || f(reinterpret_cast<const void*>(at), e - at);
}

bool overlaps(const void* p, std::size_t len) {
  return overlapping(p, len, false);
}

void wait_unguarded(const iovec* iov, std::size_t n) {
  if (!any()) return;
  for (std::size_t i = 0; i < n; ++i) wait_unguarded(iov[i].iov_base, iov[i].iov_len);
}

void wait_unguarded(const void* p, std::size_t len) {
  wait_for(p, len, false);
}

void wait_readable(const void* p, std::size_t len) {
  if (g_no_access.load(std::memory_order_relaxed) != 0) [[unlikely]]
    wait_for(p, len, true);
}

void wait_readable(const iovec* iov, std::size_t n) {
  if (g_no_access.load(std::memory_order_relaxed) == 0) return;
  for (std::size_t i = 0; i < n; ++i) wait_for(iov[i].iov_base, iov[i].iov_len, true);
}

bool overlaps_no_access(const void* p, std::size_t len) {
  return g_no_access.load(std::memory_order_relaxed) != 0 && overlapping(p, len, true);
}

void forget_all_in_child() {
  // The child has one thread (this one); the lock may have been held by another thread of
  // the parent at the fork, so it starts afresh.
  new (&g_mu) std::mutex;
  for (int i = 0; i < max_guards; ++i)
    if ((g_slots[i].seq.load(std::memory_order_relaxed) & 1) != 0) unguard(i);
  // The parent's threads that waited are not here: their counts would keep every new
  // guard awaited (copied at once) and the progress thread from resting.
  for (Slot& s : g_slots) s.waiters.store(0, std::memory_order_relaxed);
  g_waiting.store(0, std::memory_order_relaxed);
}

}  // namespace esock::sockets::page_guard
