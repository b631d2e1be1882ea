// Connections across fork (docs/sockets.md, "fork"): which process of a family owns a
// connection that fork copied into several, decided through one word per connection in
// memory every process of the family shares (a MAP_SHARED anonymous mapping made before the
// first fork that copies a connection, so parent and children see the same words).
//
// A kernel-TCP connection's state (engine, ESTP stream, buffers) is process memory; fork
// copies it, and the kernel socket is shared. Two processes driving it would each read half
// the stream. So exactly one does:
//   * At fork the parent's connections become `deciding`: its progress thread leaves them
//     alone, so the child's copy stays exactly what the kernel socket continues.
//   * The parent then keeps one (its application uses it, or a grace period passes) or gives
//     it up (its application closes it, as a forking server does right after fork).
//   * A child whose parent gave a connection up claims it (the first to ask, if several);
//     one whose parent kept it has an orphaned copy (close works, data calls ENOTCONN).
// Only direct children of the deciding process may claim, so a grandchild (a child's
// fork+exec) never takes its parent's connection.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>

namespace esock::sockets {

class ForkHandover {
 public:
  struct Slot {
    int index = -1;
    std::uint32_t generation = 0;
    explicit operator bool() const { return index >= 0; }
  };
  enum class Claim { claimed, waiting, orphaned };

  // The process family's table (created on first use); words[] from tests instead.
  static ForkHandover& get();
  ForkHandover(std::atomic<std::uint64_t>* words, std::size_t n) : words_(words), n_(n) {}

  // A slot owned by `pid` for a new connection; an empty Slot when all are taken (the
  // connection then does not survive fork: children get orphaned copies, as before).
  // Slots of processes that are gone (is_alive) are taken back.
  Slot acquire(pid_t pid, bool (*is_alive)(pid_t) = alive);
  // The owner's connection is gone.
  void free(Slot s, pid_t owner);
  // Before fork (the parent): owned -> deciding. False if the slot is not ours.
  bool start_deciding(Slot s, pid_t me);
  // The parent keeps it (deciding -> owned) or gives it up for a child (-> released).
  bool keep(Slot s, pid_t me);
  bool give_up(Slot s, pid_t me);
  // A released slot nobody claimed is freed after a while by its releaser (give_up's caller).
  bool take_back(Slot s, pid_t me);
  // The child: claims a connection its parent gave up; waits while the parent decides
  // (unless the parent is gone: then the child claims it).
  Claim claim(Slot s, pid_t me, pid_t parent, bool (*is_alive)(pid_t) = alive);

  static bool alive(pid_t pid);

 private:
  // word: generation (32) | kind (2) | pid (30). Pids fit in 22 bits (PID_MAX_LIMIT).
  enum Kind : std::uint32_t { free_ = 0, owned = 1, deciding_ = 2, released = 3 };
  static std::uint64_t word(std::uint32_t gen, Kind k, pid_t pid) {
    return (std::uint64_t{gen} << 32) | (std::uint64_t{k} << 30) |
           (static_cast<std::uint32_t>(pid) & 0x3fffffffu);
  }
  static std::uint32_t gen_of(std::uint64_t w) { return static_cast<std::uint32_t>(w >> 32); }
  static Kind kind_of(std::uint64_t w) { return static_cast<Kind>((w >> 30) & 3u); }
  static pid_t pid_of(std::uint64_t w) { return static_cast<pid_t>(w & 0x3fffffffu); }
  bool move(Slot s, Kind from, pid_t from_pid, Kind to, pid_t to_pid);

  std::atomic<std::uint64_t>* words_;
  std::size_t n_;
  std::size_t next_ = 0;  // where acquire looks first (per process: a hint only)
};

}  // namespace esock::sockets
