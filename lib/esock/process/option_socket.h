// The kernel TCP sockets that keep an own-stack connection's SO_*/TCP_*/IP_* options
// (docs/sockets.md, "fd model"). Over an own stack nothing in the kernel carries the
// connection, yet its options must behave as on any socket (set, read back, validated by
// the kernel). So they live on kernel TCP sockets that are never connected, one per
// distinct set of options the applications made: every connection whose program set
// TCP_NODELAY and nothing else shares one, and a connection that set nothing reads a fresh
// socket's. 10,000 connections then need no 10,000 option sockets (issue 18).
#pragma once

#include <sys/socket.h>

#include <compare>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace esock::sockets {

// One option as the application last set it.
struct OptionCall {
  int level = 0, name = 0;
  std::vector<std::uint8_t> value;
  auto operator<=>(const OptionCall&) const = default;
};
// What made a set: each option once, in the order last set, with its last value (so a
// replay ends as the calls did where one option resets another: IP_TOS sets SO_PRIORITY).
using OptionCalls = std::vector<OptionCall>;
// calls with setsockopt(level, name, val, len) made after them.
OptionCalls with_call(OptionCalls calls, int level, int name, const void* val, socklen_t len);
// Whether an option's value means the same on another socket, so that it can be replayed:
// not one that carries a pointer (SO_ATTACH_FILTER's program) or names a descriptor.
bool replayable(int level, int name);

// A kernel TCP socket holding one set of options; shared (immutable) by the connections
// that have that set. Thread-safe; fork keeps the registry consistent (option_sets_init).
class OptionSet {
 public:
  // The set these calls make: the one a connection has already, or a new socket they are
  // replayed on, in order. Null with errno when the kernel refuses one (nothing is kept:
  // the caller's setsockopt fails as the kernel's would).
  static std::shared_ptr<const OptionSet> of(const OptionCalls& calls);
  // A client's own socket at connect, whose calls are known (every setsockopt on it went
  // through esock since it was fresh): it becomes the shared set for them, or closes if
  // there is one already.
  static std::shared_ptr<const OptionSet> adopt(int fd, const OptionCalls& calls);
  // A socket whose options are not all known (some were set before it was DDPMODE) or
  // that reserves a bound port: its connection's alone, changed in place.
  static std::shared_ptr<const OptionSet> keep(int fd);
  // A new socket of its own with these calls replayed (for an option that cannot be
  // replayed, set on it next, in place); null with errno.
  static std::shared_ptr<const OptionSet> own(const OptionCalls& calls);

  OptionSet(const OptionSet&) = delete;
  OptionSet& operator=(const OptionSet&) = delete;
  ~OptionSet();  // closes the socket (the last connection with the set went)

  int fd() const { return fd_; }
  // Null for a kept socket (set in place); else the calls, the registry's key.
  const OptionCalls* calls() const { return shared_ ? &calls_ : nullptr; }
  static std::size_t shared_count();  // sets in the registry (tests, esock-stat)

 private:
  OptionSet(int fd, OptionCalls calls, bool shared)
      : fd_(fd), calls_(std::move(calls)), shared_(shared) {}
  int fd_;
  OptionCalls calls_;
  bool shared_;
};

// Registers the registry's fork handlers (its lock is held across fork, so a child never
// inherits it held); the runtime calls it before registering its own, so fork takes the
// runtime lock first and this one after, the order every other path takes them in.
void option_sets_init();

// A TCP socket never connected nor changed: every option at its default. Made on first
// use, private (move_high, close-on-exec) and shared by the whole process; -1 if it cannot
// be made.
int fresh_option_socket();

// Whether fd is bound to a port (which it reserves).
bool bound_to_port(int fd);

// Whether the unconnected kernel TCP socket fd holds something a fresh one would not: an
// option set (among those programs set before connect: socket(7), tcp(7), ip(7)'s usual
// ones) or a bound port.
bool holds_more_than_fresh(int fd);

}  // namespace esock::sockets
