// A connection of an own stack (dpdk) that a fork child serves through its parent
// (docs/sockets.md, "fork"). The stack cannot follow a child (its memory and its device are
// the parent's), so at fork the child's copy of the application's number becomes one end of
// an AF_UNIX stream pair, a plain socket there, and the parent keeps the other end:
// * the parent's application closes its copy (a forking server: socat fork, inetd): the
//   parent's runtime joins its end to the connection and moves octets both ways, the ends
//   of stream included (the child's EOF becomes the stream's FIN, the peer's FIN a
//   shutdown(SHUT_WR) towards the child);
// * the parent's application uses the connection instead (it forked for something else):
//   the pair closes, and the child's copy reads end of stream (what it wrote meanwhile is
//   dropped, as a connection it never had).
// No I/O but the pair's non-blocking calls; under the runtime lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "esock/estp/stream.h"

namespace esock::sockets {

class ForkRelay {
 public:
  explicit ForkRelay(int fd) : fd_(fd) {}  // the parent's end: non-blocking, close-on-exec
  ~ForkRelay();                            // closes it
  ForkRelay(const ForkRelay&) = delete;
  ForkRelay& operator=(const ForkRelay&) = delete;

  int fd() const { return fd_; }
  bool active() const { return active_; }
  void activate() { active_ = true; }
  // What the parent's end is waited on for (0: the stream is what it waits for).
  short poll_events(const estp::Stream& st) const;
  // Moves what it can both ways without blocking. True once the relay is over: the child
  // closed its end and the peer's FIN went on to it (or the child no longer reads), or the
  // stream failed; the connection then closes as after an application's close.
  bool pump(estp::Stream& st);

 private:
  static constexpr std::size_t chunk = 64 * 1024;
  int fd_;
  bool active_ = false;
  std::vector<std::uint8_t> to_child_, to_peer_;  // read from one side, not yet taken by the other
  std::size_t to_child_off_ = 0, to_peer_off_ = 0;
  bool child_eof_ = false;   // its end read 0: the stream's FIN is queued
  bool child_gone_ = false;  // it closed its end whole: nothing more goes to it
  bool fin_passed_ = false;  // the peer's FIN went on as shutdown(SHUT_WR)
};

}  // namespace esock::sockets
