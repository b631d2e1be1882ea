// Write guards on an application's buffer while the peer may still read it: AZ-SDP's
// asynchronous write (../shared/seeds/000_*, docs/sockets.md "Zero-copy modes") returns
// before the peer pulled the data, so the pages are made read-only (mprotect) until its
// RDMADONE. A thread that writes to a guarded page faults; esock's fault handler
// (fault_signal.h) holds it there until the guard is released, then the write runs again
// and lands (block-on-write). Copy-on-write releases early: the owner copies the pages
// aside, points the transfer at the copy, and releases once nothing reads the pages
// (awaited() tells it someone waits, and the wait hook wakes it).
//
// Read guards (AZ-SDP's asynchronous read, ddpmode/read_async.cc) make pages no-access
// instead, while the data they will hold is still arriving: any touch waits. The kernel
// reading from such a buffer (write(2) from it) would fail with EFAULT, so those calls wait
// first (wait_readable). Guards of the two kinds never overlap: each caller waits for the
// other kind's guards over its buffer first.
//
// The table is fixed (max_guards) and lock-free for the handler: it only reads the slots,
// adds itself to a waiter count and sleeps on a futex, all async-signal-safe. protect() and
// release() are for threads, not signal handlers.
//
// A fault on a page whose guard was released between the fault and the handler's look is
// run again once (the page is writable by then); a second fault at the same address with
// no guard is not esock's and goes on to the application's handler.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>

namespace esock::sockets::page_guard {

constexpr int max_guards = 256;

enum class Access : std::uint8_t {
  read_only,  // a write guard: the pages are sent from
  none        // a read guard: the pages are about to be replaced by arriving data
};

// Makes the whole pages of [begin, begin + len) read-only (or no-access). begin and len are
// multiples of the page size, len > 0, and the pages are readable and writable now, or guarded
// already (guards may overlap: a page gets its write permission back, both, when no guard covers it
// any more). Returns a guard number >= 0, or -1 with errno: ENOSPC (max_guards are out), EINVAL, or
// mprotect's error.
int protect(void* begin, std::size_t len, Access access = Access::read_only);
// Gives the pages their write permission back and wakes the threads that faulted on them.
// Returns how many faults the guard held (for the socket's counters; one that raced the
// release may count for the slot's next guard instead).
std::uint32_t release(int guard);
// A thread waits for this guard now: held in a fault on it, or in wait_unguarded().
bool awaited(int guard);
// Threads waiting for a guard, all guards (one relaxed load).
int waiting();
// A thread that waits for guards its own way (a DDPMODE read into the pages runs the
// stack's rounds meanwhile, io.cc) marks them awaited as wait_unguarded() does: mark()
// every guard over [p, p + len) not marked yet (again after new guards came), unmark()
// all when done. The wait hook runs at the first mark.
struct Awaiting {
  std::uint64_t slots[max_guards / 64] = {};
  bool counted = false;  // in waiting()
};
void mark_awaited(const void* p, std::size_t len, Awaiting* a);
void unmark_awaited(Awaiting* a);
// Called by a thread that starts to wait for a guard (also from the fault handler, so it
// must be async-signal-safe): the owner's progress thread wakes to release or copy. One
// hook per process; null removes it.
void set_wait_hook(void (*hook)());
// Counts of faults held (for the socket's counters) since the process started.
std::uint64_t faults_taken();
// Whether any guard is on: one relaxed load, for the interposed free() (shim/memory.cc).
bool any();
// Whether any guard covers an octet of [p, p + len).
bool overlaps(const void* p, std::size_t len);
// Whether f(begin, len) holds for every piece of [p, p + len) no guard covers (in address
// order; true if none is left). A guarded piece was writable when it was guarded.
bool all_unguarded(const void* p, std::size_t len, bool (*f)(const void* begin, std::size_t len));
// Whether a no-access guard covers an octet of [p, p + len).
bool overlaps_no_access(const void* p, std::size_t len);
// Blocks until no no-access guard covers an octet of [p, p + len): a system call about to
// read from the buffer (write(2) from it) waits first. One relaxed load with no no-access
// guard on (write guards alone do not count).
void wait_readable(const void* p, std::size_t len);
void wait_readable(const iovec* iov, std::size_t n);
// Blocks until no guard covers an octet of [p, p + len): a system call about to write into
// the buffer (read(2) into it would fail with EFAULT, not fault) waits first.
void wait_unguarded(const void* p, std::size_t len);
// The same for every piece of an iovec array (one relaxed load when no guard is on).
void wait_unguarded(const iovec* iov, std::size_t n);
// A fork child: the guards stay on its copy of the pages but nothing there will release
// them (its connections are the parent's), so every page gets its write permission back.
void forget_all_in_child();

}  // namespace esock::sockets::page_guard
