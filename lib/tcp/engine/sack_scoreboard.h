// The data sender's SACK scoreboard, RFC 6675 (conservative SACK-based loss recovery)
// over RFC 2018 SACK blocks. It records which bytes above snd_una the receiver holds and
// answers RFC 6675's questions: IsLost, SetPipe (pipe) and NextSeg rules 1 to 3. The
// caller keeps the recovery state itself: RecoveryPoint, entering and leaving recovery
// (section 5), RescueRxt (rule 4, served by rescue_seg) and the RTO handling of
// section 5.1 (call reset(): SACKed data may be reneged, RFC 2018 section 8).
//
// Memory is bounded: at most max_ranges disjoint SACKed ranges, adjacent ones merged.
// When a new range does not fit, the highest range is forgotten; forgetting is safe (the
// data is then treated as not SACKed, costing at worst a needless retransmission),
// whereas inventing a SACK would not be.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "tcp/wire/tcp.h"

namespace esock::tcp {

class SackScoreboard {
 public:
  static constexpr std::size_t max_ranges = 64;
  static constexpr std::uint32_t dup_thresh = 3;  // RFC 6675 section 2, DupThresh

  void reset();

  // Update from one ACK's SACK blocks. Blocks reaching beyond snd_max, and empty or
  // inverted ones, are ignored; a block's part at or below snd_una is cut off. An
  // RFC 2883 D-SACK (a first block at or below snd_una, or a first block inside the
  // second) sets *dsack and records nothing new. Returns the number of newly SACKed bytes.
  std::uint32_t update(std::uint32_t snd_una, std::uint32_t snd_max,
                       std::span<const SackBlock> blocks, bool* dsack = nullptr);
  // Forget everything below snd_una (the cumulative ACK covers it).
  void on_cum_ack(std::uint32_t snd_una);

  bool is_sacked(std::uint32_t seq) const;
  // RFC 6675 IsLost(seq): DupThresh discontiguous SACKed ranges above seq, or more than
  // (DupThresh - 1) * SMSS SACKed bytes above it.
  bool is_lost(std::uint32_t seq, std::uint32_t smss) const;
  // RFC 6675 SetPipe(): for every unSACKed byte in [snd_una, snd_max), one if it is not
  // lost, plus one if it was retransmitted (below HighRxt).
  std::uint32_t pipe(std::uint32_t snd_una, std::uint32_t snd_max, std::uint32_t smss) const;

  // RFC 6675 NextSeg() rules 1 to 3, at most smss bytes:
  //   1. the first unSACKed, lost byte above HighRxt and below the highest SACKed byte;
  //   2. new data: {snd_max, min(smss, new_data_len), new_data = true} when
  //      have_new_data (the caller has checked the receive window); but if snd_nxt is
  //      below snd_max (the caller rewound it after an RTO and kept the scoreboard, as
  //      section 5.1 allows), the first unSACKed bytes at or above snd_nxt instead;
  //   3. the first unSACKed byte above HighRxt and below the highest SACKed byte.
  // Returns nullopt when none applies; the caller may then try rescue_seg (rule 4).
  // A retransmission the caller sends must be reported with mark_retransmitted.
  struct Seg {
    std::uint32_t seq;
    std::uint32_t len;
    bool new_data;
    friend bool operator==(const Seg&, const Seg&) = default;
  };
  std::optional<Seg> next_seg(std::uint32_t snd_una, std::uint32_t snd_nxt, std::uint32_t snd_max,
                              std::uint32_t smss, bool have_new_data, std::uint32_t new_data_len);
  // RFC 6675 NextSeg() rule 4: one segment of at most smss bytes ending with the highest
  // outstanding unSACKed byte. The caller checks and updates RescueRxt and must NOT call
  // mark_retransmitted for it (HighRxt is not updated by rule 4).
  std::optional<Seg> rescue_seg(std::uint32_t snd_una, std::uint32_t snd_max,
                                std::uint32_t smss) const;

  // HighRxt bookkeeping: [seq, seq + len) was retransmitted.
  void mark_retransmitted(std::uint32_t seq, std::uint32_t len);
  // One past the highest retransmitted byte (RFC 6675 HighRxt + 1); snd_una when nothing
  // above it has been retransmitted since the last reset().
  std::uint32_t high_rxt() const { return high_rxt_; }
  // One past the highest SACKed byte (0 / meaningless when empty()).
  std::uint32_t highest_sacked() const;
  bool empty() const { return count_ == 0; }
  std::uint32_t sacked_bytes() const { return sacked_bytes_; }
  std::size_t range_count() const { return count_; }

 private:
  struct Range {
    std::uint32_t left;
    std::uint32_t right;  // exclusive
  };
  // Inserts [left, right) (already clipped to the window); returns the bytes it added.
  std::uint32_t insert(std::uint32_t left, std::uint32_t right);
  void erase(std::size_t i, std::size_t n);
  // First unSACKed byte at or above `from` and below `limit`, with the end of its hole.
  bool first_unsacked(std::uint32_t from, std::uint32_t limit, std::uint32_t* seq,
                      std::uint32_t* hole_end) const;
  // HighRxt + 1 as NextSeg and SetPipe use it: never below snd_una.
  std::uint32_t rxt_mark(std::uint32_t snd_una) const;

  std::array<Range, max_ranges> ranges_{};  // sorted, disjoint, non-adjacent
  std::size_t count_ = 0;
  std::uint32_t sacked_bytes_ = 0;
  std::uint32_t high_rxt_ = 0;
  bool have_una_ = false;  // high_rxt_ holds a real sequence number
};

}  // namespace esock::tcp
