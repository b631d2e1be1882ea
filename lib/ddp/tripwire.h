// Tripwires (../shared/seeds/004, "Tripwire"): address ranges of registered regions that a
// local process arms to learn when a remote RDMA Write lands in them, without a message
// from the writer. RDMA Writes are silent at the Data Sink (RFC 5040 section 5.1), but
// every tagged segment passes through the Qp's in-order path, so a tripwire fires there:
// after the octets are in memory, in stream order (a segment placed early, ahead of a hole,
// fires when the stream reaches it), once per Write message (at its last segment, RFC 5041
// section 5.3 Delivery), and never for a Write the Qp finds bad (the stream terminates
// before its last segment). No I/O: the owner polls the fired events.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "ddp/stag.h"

namespace esock::ddp {

struct TripwireEvent {
  std::uint32_t id = 0;        // from arm()
  std::uint64_t cookie = 0;    // as given to arm()
  std::uint64_t to = 0;        // the first landed octet inside the armed range (its TO)
  std::uint64_t length = 0;    // landed octets from `to` (the span of the Writes counted)
  std::uint32_t landings = 0;  // Write messages that landed since the last poll (>= 1)
  bool disarmed = false;       // a one-shot tripwire: this was its event, the id is free
};

class TripwireSet {
 public:
  static constexpr std::size_t max_armed = 4096;
  static constexpr std::uint32_t max_id = 0x7fffffff;

  // [to, to + len) inside region `stag` (the caller checked it is a region of this
  // connection that takes remote Writes). Returns the id (1..max_id), or 0 when max_armed
  // are armed, len is 0 or the range wraps. persistent: fires for every landing until disarmed;
  // otherwise once.
  std::uint32_t arm(stag_t stag, std::uint64_t to, std::uint64_t len, std::uint64_t cookie,
                    bool persistent);
  // 0, or EINVAL for an id that is not armed. An event not yet polled is dropped with it.
  int disarm(std::uint32_t id);
  // Disarms every tripwire of a region (deregistration); their pending events go too.
  void disarm_region(stag_t stag);

  // The Qp's in-order receive path: one non-empty tagged RDMA Write segment that passed its
  // checks and is in memory. `last`: the last segment of its message.
  void on_write_segment(stag_t stag, std::uint64_t to, std::uint64_t len, bool last);
  // The stream ended inside a Write message: its segments fire nothing.
  void abort_message();

  // Fired events in firing order; a tripwire that fired again before it was polled has one
  // event with landings > 1 (so the queue holds at most one event per armed tripwire).
  std::size_t poll(std::span<TripwireEvent> out);
  bool pending() const { return !fired_.empty(); }
  std::size_t armed() const { return arms_.size(); }

 private:
  struct Arm {
    std::uint32_t id = 0;
    stag_t stag = 0;
    std::uint64_t to = 0, end = 0;
    std::uint64_t cookie = 0;
    bool persistent = false;
    bool spent = false;  // one-shot and fired: matches nothing more
    // Accumulated since the last poll (fired) or within the current message (staged).
    std::uint32_t landings = 0;
    std::uint64_t lo = 0, hi = 0;
    bool staged = false;
    std::uint64_t stage_lo = 0, stage_hi = 0;
  };
  Arm* find(std::uint32_t id);
  void drop(std::uint32_t id);

  std::vector<Arm> arms_;              // few per connection: matched by a scan
  std::vector<std::uint32_t> staged_;  // hit by the Write message in progress
  std::deque<std::uint32_t> fired_;    // ids with an event, in firing order
  std::uint32_t next_id_ = 1;
};

}  // namespace esock::ddp
