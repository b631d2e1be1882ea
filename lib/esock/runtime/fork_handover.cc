#include "esock/runtime/fork_handover.h"

#include <signal.h>
#include <sys/mman.h>

#include <cerrno>
#include <new>

namespace esock::sockets {

namespace {
// 4096 connections alive at once in a process family survive fork; past that a connection
// is not handed over (its children's copies are orphaned). 32 KiB of shared memory.
constexpr std::size_t table_slots = 4096;
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);  // shared across processes
}  // namespace

ForkHandover& ForkHandover::get() {
  static ForkHandover* t = [] {
    void* m = ::mmap(nullptr, table_slots * sizeof(std::uint64_t), PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return new ForkHandover(nullptr, 0);       // nothing survives fork
    auto* words = new (m) std::atomic<std::uint64_t>[table_slots];  // zero: every slot free
    return new ForkHandover(words, table_slots);
  }();
  return *t;
}

bool ForkHandover::alive(pid_t pid) {
  return ::kill(pid, 0) == 0 || errno == EPERM;
}

ForkHandover::Slot ForkHandover::acquire(pid_t pid, bool (*is_alive)(pid_t)) {
  // A free slot first; failing that, one owned or being decided by a process that ended
  // without closing (a forking server's child exits holding its connection: the kernel
  // closed the socket). The second pass asks the kernel about each owner, so it comes last.
  for (const bool reclaim : {false, true}) {
    for (std::size_t k = 0; k < n_; ++k) {
      const std::size_t i = (next_ + k) % n_;
      std::uint64_t w = words_[i].load(std::memory_order_acquire);
      const bool usable =
          kind_of(w) == free_ || (reclaim && kind_of(w) != released && !is_alive(pid_of(w)));
      if (!usable) continue;
      const std::uint32_t gen = gen_of(w) + 1;
      if (words_[i].compare_exchange_strong(w, word(gen, owned, pid), std::memory_order_acq_rel)) {
        next_ = (i + 1) % n_;
        return Slot{static_cast<int>(i), gen};
      }
    }
  }
  return {};
}

bool ForkHandover::move(Slot s, Kind from, pid_t from_pid, Kind to, pid_t to_pid) {
  if (!s) return false;
  std::uint64_t w = word(s.generation, from, from_pid);
  return words_[s.index].compare_exchange_strong(w, word(s.generation, to, to_pid),
                                                 std::memory_order_acq_rel);
}

void ForkHandover::free(Slot s, pid_t owner) {
  (void)move(s, owned, owner, free_, 0);
}
bool ForkHandover::start_deciding(Slot s, pid_t me) {
  return move(s, owned, me, deciding_, me);
}
bool ForkHandover::keep(Slot s, pid_t me) {
  return move(s, deciding_, me, owned, me);
}
bool ForkHandover::give_up(Slot s, pid_t me) {
  return move(s, deciding_, me, released, me);
}
bool ForkHandover::take_back(Slot s, pid_t me) {
  return move(s, released, me, free_, 0);
}

ForkHandover::Claim ForkHandover::claim(Slot s, pid_t me, pid_t parent, bool (*is_alive)(pid_t)) {
  if (!s) return Claim::orphaned;
  const std::uint64_t w = words_[s.index].load(std::memory_order_acquire);
  if (gen_of(w) != s.generation || pid_of(w) != parent) return Claim::orphaned;
  switch (kind_of(w)) {
    case released:
      return move(s, released, parent, owned, me) ? Claim::claimed : Claim::orphaned;
    case deciding_:
      // A parent that ended while deciding left the connection to its children.
      if (is_alive(parent)) return Claim::waiting;
      return move(s, deciding_, parent, owned, me) ? Claim::claimed : Claim::orphaned;
    default:
      return Claim::orphaned;  // kept by the parent (or freed)
  }
}

}  // namespace esock::sockets
