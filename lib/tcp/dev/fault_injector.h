// A Device wrapper that damages traffic on purpose, for loss/reorder/duplication/corruption
// tests of the TCP engine and of MPA/DDP above it. Every decision comes from one seeded
// std::mt19937_64 and time from an injected Clock, so a test run is reproducible from
// (seed, frames, clock steps).
//
// Per direction (tx: frames the stack sends; rx: frames the stack receives), each eligible
// frame is subject, in this order, to:
//   loss       dropped (tx() still returns true: the wire ate it);
//   corrupt    one random bit flipped in a random octet at or beyond corrupt_offset
//              (default 54 = Ethernet + IPv4 + TCP without options, i.e. only TCP payload,
//              so the frame still reaches TCP and only its checksum can catch it; with
//              corrupt_keeps_checksum the checksums are recomputed, so only MPA's CRC can);
//   duplicate  delivered twice;
//   reorder    held back and released after `reorder_frames` later frames have gone out,
//              or after `reorder_timeout`, whichever comes first;
//   delay      every eligible frame waits delay + uniform[0, jitter] (jitter reorders).
// Held frames (reorder, delay) are copies in HeapBufs, so the inner device's buffers (mbufs)
// go back to their pool at once. Timed releases happen in tx_flush() (tx) and rx_burst() (rx).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "base/time.h"
#include "tcp/dev/device.h"

namespace esock::tcp {

// What a filter sees of a frame.
struct FaultFrameInfo {
  bytes_view head;      // rx: the whole frame; tx: TxFrame::head (Ethernet..TCP headers)
  std::size_t length;   // the whole frame's length
  std::uint64_t index;  // frames seen so far in this direction (0-based)
};
// true: the frame is eligible for faults. Lets a test target "the 3rd data segment".
using FaultFilter = std::function<bool(const FaultFrameInfo&)>;

// Eligible only when longer than `n` octets (e.g. 54: TCP segments that carry data).
FaultFilter longer_than(std::size_t n);

struct FaultSpec {
  double loss = 0;
  double corrupt = 0;
  std::size_t corrupt_offset = 14 + 20 + 20;
  // Recompute the IPv4 and TCP checksums after the damage: models corruption that happened
  // before the checksum was computed (a middlebox's or a sender's memory, a buggy offload),
  // which TCP's checksum cannot catch and MPA's CRC32c exists for (RFC 5044 section 4.4).
  bool corrupt_keeps_checksum = false;
  // Damage only the TCP payload, wherever this frame's headers end (IPv4 IHL, TCP data
  // offset: options move it), and skip frames without payload. corrupt_offset (a fixed
  // 54) lands in the TCP options of a segment that carries timestamps; with the checksum
  // kept, a changed TSval then passes TCP's checks and PAWS refuses every later segment of
  // the connection (RFC 7323 section 5), a failure that neither TCP nor MPA can repair.
  bool corrupt_payload_only = false;
  double duplicate = 0;
  double reorder = 0;
  std::uint32_t reorder_frames = 1;
  Duration reorder_timeout = std::chrono::milliseconds(1);
  Duration delay{0};
  Duration jitter{0};
  FaultFilter filter;  // empty: every frame is eligible
};

struct FaultConfig {
  std::uint64_t seed = 1;
  FaultSpec tx;
  FaultSpec rx;
};

struct FaultCounters {
  std::uint64_t seen = 0;
  std::uint64_t eligible = 0;
  std::uint64_t lost = 0;
  std::uint64_t corrupted = 0;
  std::uint64_t corrupt_skipped = 0;  // drawn, but the frame ends before corrupt_offset (or TSO)
  std::uint64_t duplicated = 0;
  std::uint64_t reordered = 0;
  std::uint64_t delayed = 0;
  std::uint64_t refused = 0;  // tx: the inner device refused a duplicate or released frame
};

class FaultInjector final : public Device {
 public:
  // `inner` and `clock` must outlive the injector.
  FaultInjector(Device& inner, const Clock& clock, FaultConfig config);
  ~FaultInjector() override;

  MacAddr mac() const override { return inner_.mac(); }
  DeviceCaps caps() const override { return inner_.caps(); }
  std::size_t rx_burst(std::span<RxFrame> out) override;
  bool tx(const TxFrame& frame) override;
  void tx_flush() override;
  DeviceStats stats() const override { return stats_; }

  // Specs may be changed between frames (e.g. loss on only while a test wants it).
  FaultSpec& tx_spec() { return tx_.spec; }
  FaultSpec& rx_spec() { return rx_.spec; }
  const FaultCounters& tx_counters() const { return tx_.count; }
  const FaultCounters& rx_counters() const { return rx_.count; }
  // Frames currently held back (reorder + delay), per direction.
  std::size_t held_tx() const { return tx_.held(); }
  std::size_t held_rx() const { return rx_.held(); }
  // Releases every held frame now, in the order it would have gone out.
  void release_all();

 private:
  // A held or copied frame: for tx, head_len splits it back into head + one payload piece.
  struct Frame {
    BufRef ref;
    bytes_view data;
    std::size_t head_len = 0;
    TxOffload offload;
    std::uint8_t csum = 0;
  };
  struct Reordered {
    Frame frame;
    std::uint32_t frames_left;
    Instant deadline;
  };
  struct Lane {
    FaultSpec spec;
    FaultCounters count;
    std::uint64_t index = 0;
    std::uint64_t delay_seq = 0;  // ties in due time keep arrival order
    std::deque<Reordered> reorder_q;
    std::map<std::pair<Instant, std::uint64_t>, Frame> delayed;
    std::size_t held() const { return reorder_q.size() + delayed.size(); }
  };
  // What the random draws decided for one frame.
  struct Verdict {
    bool lose = false, corrupt = false, duplicate = false, reorder = false;
    Duration delay{0};
  };

  Verdict decide(Lane& lane, const FaultFrameInfo& info);
  bool chance(double p);
  void corrupt(Lane& lane, Frame& f);
  // Sends one frame out of the lane now (tx: inner_.tx; rx: the ready queue).
  bool emit(Lane& lane, const Frame& f);
  bool emit_original_tx(const TxFrame& frame);
  // A frame went out: count down the held reordered frames; release those at zero.
  void tick(Lane& lane);
  void hold_or_emit(Lane& lane, Frame f, const Verdict& v, bool first_copy);
  void release_due(Lane& lane, Instant now);
  static Frame copy_tx(const TxFrame& frame);
  static Frame copy_rx_frame(const RxFrame& frame);

  Device& inner_;
  const Clock& clock_;
  std::mt19937_64 rng_;
  Lane tx_;
  Lane rx_;
  std::deque<RxFrame> ready_;     // rx frames due to be handed to the caller
  std::vector<RxFrame> scratch_;  // one inner rx burst
  DeviceStats stats_;
};

}  // namespace esock::tcp
