// The process's table of DDPMODE descriptors, indexed by fd number. Pass-through calls pay
// one relaxed atomic load of a flag here (fd_is_ddp); everything else takes the lock.
// Process-global by nature: the shims are global functions interposed on libc's.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/function_ref.h"

namespace esock::sockets {

class Socket;

// Descriptors at or above this are never DDPMODE (setsockopt fails with EMFILE there).
inline constexpr int max_ddp_fd = 1 << 16;

extern std::atomic<std::uint8_t> fd_flags[max_ddp_fd];

inline bool fd_is_ddp(int fd) {
  return static_cast<unsigned>(fd) < static_cast<unsigned>(max_ddp_fd) &&
         fd_flags[fd].load(std::memory_order_relaxed) != 0;
}

// Shared ownership: dup()ed numbers share one Socket; the last reference closes it.
std::shared_ptr<Socket> fd_get(int fd);
void fd_set(int fd, std::shared_ptr<Socket> s);
// Drops the number's reference and returns it (null if it was not DDPMODE).
std::shared_ptr<Socket> fd_take(int fd);
// Under the table's lock: when fd still names s, runs swap() (which gives the number
// another file) and, if it succeeded, drops the number from the table. False when fd no
// longer names s (nothing run) or swap() failed. A close or dup2 of the number by another
// thread is thereby either before (nothing to swap) or after (it closes the new file).
bool fd_swap_out(int fd, const Socket* s, function_ref<bool()> swap);
// Runs use(fd) with a number that names s, under the table's lock, and returns true; false
// (nothing run) when no number names it. *hint is the number tried first and is updated to
// the one used; -1 (a socket never numbered) returns false at once. (A hint that names
// nothing costs a scan of the table: only while a dup2 or close_range that will fail has
// taken the entry, or after the application closed every number, when the socket is
// closing and nothing signals it any more.) A close, dup2 or close_range of the number takes its
// entry under this lock before the kernel call, so the number cannot close (and be reused for
// another file) while use() works on it: the runtime signals readiness through the application's
// own number this way instead of keeping a private duplicate of it (issue 18).
bool fd_with_number(const Socket* s, int* hint, function_ref<void(int)> use);
// The numbers that name s (fork).
std::vector<int> fd_numbers_of(const Socket* s);
// Number of DDPMODE descriptors (fork and tests).
int fd_count();
// Creates the table and registers its fork handlers; the runtime calls it before registering
// its own, so fork takes the runtime lock first and the table's second (fd_table.cc).
void fd_table_init();

}  // namespace esock::sockets
