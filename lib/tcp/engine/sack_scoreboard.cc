#include "tcp/engine/sack_scoreboard.h"

#include <algorithm>

#include "base/seq32.h"

namespace esock::tcp {

namespace {

// RFC 6675 IsLost for a byte with `n_above` SACKed ranges and `bytes_above` SACKed bytes
// above it. Reading "DupThresh discontiguous SACKed sequences" as ranges errs towards
// "not lost" for many small segments in one block, which the byte rule then catches.
bool lost_by_counts(std::size_t n_above, std::uint64_t bytes_above, std::uint32_t smss) {
  return n_above >= SackScoreboard::dup_thresh ||
         bytes_above > std::uint64_t{SackScoreboard::dup_thresh - 1} * smss;
}

std::uint32_t seq_max(std::uint32_t a, std::uint32_t b) {
  return seq_lt(a, b) ? b : a;
}
std::uint32_t seq_min(std::uint32_t a, std::uint32_t b) {
  return seq_lt(a, b) ? a : b;
}

}  // namespace

void SackScoreboard::reset() {
  count_ = 0;
  sacked_bytes_ = 0;
  have_una_ = false;
  high_rxt_ = 0;
}

std::uint32_t SackScoreboard::rxt_mark(std::uint32_t snd_una) const {
  return have_una_ ? seq_max(high_rxt_, snd_una) : snd_una;
}

std::uint32_t SackScoreboard::highest_sacked() const {
  return count_ ? ranges_[count_ - 1].right : 0;
}

void SackScoreboard::erase(std::size_t i, std::size_t n) {
  std::copy(ranges_.begin() + static_cast<std::ptrdiff_t>(i + n),
            ranges_.begin() + static_cast<std::ptrdiff_t>(count_),
            ranges_.begin() + static_cast<std::ptrdiff_t>(i));
  count_ -= n;
}

void SackScoreboard::on_cum_ack(std::uint32_t snd_una) {
  std::size_t gone = 0;
  while (gone < count_ && seq_leq(ranges_[gone].right, snd_una)) {
    sacked_bytes_ -= ranges_[gone].right - ranges_[gone].left;
    ++gone;
  }
  erase(0, gone);
  if (count_ && seq_lt(ranges_[0].left, snd_una)) {
    sacked_bytes_ -= snd_una - ranges_[0].left;
    ranges_[0].left = snd_una;
  }
  // HighRxt never trails the cumulative ACK (RFC 6675 initialises it to HighACK).
  high_rxt_ = rxt_mark(snd_una);
  have_una_ = true;
}

std::uint32_t SackScoreboard::insert(std::uint32_t left, std::uint32_t right) {
  // First range that overlaps or touches [left, right), then every range it reaches.
  std::size_t i = 0;
  while (i < count_ && seq_lt(ranges_[i].right, left)) ++i;
  std::size_t j = i;
  std::uint32_t covered = 0;
  while (j < count_ && seq_leq(ranges_[j].left, right)) {
    covered += ranges_[j].right - ranges_[j].left;
    ++j;
  }
  if (i == j) {
    if (count_ == max_ranges) {
      // Full: keep the lower ranges, which steer the next retransmissions.
      if (i == count_) return 0;
      sacked_bytes_ -= ranges_[count_ - 1].right - ranges_[count_ - 1].left;
      --count_;
    }
    std::copy_backward(ranges_.begin() + static_cast<std::ptrdiff_t>(i),
                       ranges_.begin() + static_cast<std::ptrdiff_t>(count_),
                       ranges_.begin() + static_cast<std::ptrdiff_t>(count_ + 1));
    ranges_[i] = {left, right};
    ++count_;
    sacked_bytes_ += right - left;
    return right - left;
  }
  const Range merged{seq_min(left, ranges_[i].left), seq_max(right, ranges_[j - 1].right)};
  ranges_[i] = merged;
  erase(i + 1, j - i - 1);
  const std::uint32_t added = (merged.right - merged.left) - covered;
  sacked_bytes_ += added;
  return added;
}

std::uint32_t SackScoreboard::update(std::uint32_t snd_una, std::uint32_t snd_max,
                                     std::span<const SackBlock> blocks, bool* dsack) {
  // RFC 2883 section 4: only the first block can be a D-SACK, and it is one when it lies
  // at or below the cumulative ACK or inside the second block.
  bool first_is_dsack = false;
  if (!blocks.empty() && seq_lt(blocks[0].left, blocks[0].right)) {
    const SackBlock& b0 = blocks[0];
    first_is_dsack =
        seq_leq(b0.right, snd_una) ||
        (blocks.size() > 1 && seq_leq(blocks[1].left, b0.left) &&
         seq_leq(b0.right, blocks[1].right) && seq_lt(blocks[1].left, blocks[1].right));
  }
  if (dsack) *dsack = first_is_dsack;
  on_cum_ack(snd_una);

  std::uint32_t added = 0;
  for (std::size_t n = 0; n < blocks.size(); ++n) {
    const SackBlock& b = blocks[n];
    if (n == 0 && first_is_dsack) continue;
    // RFC 2018 section 3: a block names data the receiver holds above the cumulative ACK;
    // anything else (inverted, empty, beyond what we sent) is bogus and ignored.
    if (!seq_lt(b.left, b.right) || seq_gt(b.right, snd_max) || seq_leq(b.right, snd_una)) continue;
    added += insert(seq_max(b.left, snd_una), b.right);
  }
  return added;
}

bool SackScoreboard::is_sacked(std::uint32_t seq) const {
  for (std::size_t i = 0; i < count_; ++i)
    if (seq_in_range(seq, ranges_[i].left, ranges_[i].right)) return true;
  return false;
}

bool SackScoreboard::is_lost(std::uint32_t seq, std::uint32_t smss) const {
  std::size_t n_above = 0;
  std::uint64_t bytes_above = 0;
  for (std::size_t i = count_; i-- > 0;) {
    const Range& r = ranges_[i];
    if (seq_gt(r.left, seq)) {
      ++n_above;
      bytes_above += r.right - r.left;
    } else {
      if (seq_lt(seq + 1, r.right)) {  // bytes of this range strictly above seq
        ++n_above;
        bytes_above += r.right - (seq + 1);
      }
      break;
    }
  }
  return lost_by_counts(n_above, bytes_above, smss);
}

std::uint32_t SackScoreboard::pipe(std::uint32_t snd_una, std::uint32_t snd_max,
                                   std::uint32_t smss) const {
  // Offsets from snd_una make the arithmetic plain unsigned; ranges are clipped to the
  // window in case the caller has not called on_cum_ack yet.
  const std::uint32_t wnd = seq_gt(snd_max, snd_una) ? snd_max - snd_una : 0;
  auto off = [&](std::uint32_t s) { return seq_leq(s, snd_una) ? 0 : std::min(s - snd_una, wnd); };
  const std::uint32_t rxt = off(rxt_mark(snd_una));

  // Within one hole IsLost is constant (the SACKed data above every byte of the hole is
  // the same), so walk the holes from the top, accumulating what lies above.
  std::uint64_t total = 0;
  std::size_t n_above = 0;
  std::uint64_t bytes_above = 0;
  std::uint32_t hi = wnd;
  for (std::size_t i = count_ + 1; i-- > 0;) {
    const std::uint32_t lo = i > 0 ? off(ranges_[i - 1].right) : 0;
    if (lo < hi) {
      if (!lost_by_counts(n_above, bytes_above, smss)) total += hi - lo;  // SetPipe (a)
      if (rxt > lo) total += std::min(hi, rxt) - lo;                      // SetPipe (b)
    }
    if (i > 0) {
      ++n_above;
      bytes_above += ranges_[i - 1].right - ranges_[i - 1].left;
      hi = std::min(hi, off(ranges_[i - 1].left));
    }
  }
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(total, UINT32_MAX));
}

bool SackScoreboard::first_unsacked(std::uint32_t from, std::uint32_t limit, std::uint32_t* seq,
                                    std::uint32_t* hole_end) const {
  std::uint32_t end = limit;
  for (std::size_t i = 0; i < count_; ++i) {
    const Range& r = ranges_[i];
    if (seq_in_range(from, r.left, r.right)) {
      from = r.right;
    } else if (seq_lt(from, r.left)) {
      end = seq_min(r.left, limit);
      break;
    }
  }
  if (!seq_lt(from, end)) return false;
  *seq = from;
  *hole_end = end;
  return true;
}

std::optional<SackScoreboard::Seg> SackScoreboard::next_seg(std::uint32_t snd_una,
                                                            std::uint32_t snd_nxt,
                                                            std::uint32_t snd_max,
                                                            std::uint32_t smss, bool have_new_data,
                                                            std::uint32_t new_data_len) {
  if (smss == 0) return std::nullopt;
  const std::uint32_t rxt = rxt_mark(snd_una);

  // Rules 1 and 3 look at the same byte: the first unSACKed byte above HighRxt below the
  // highest SACKed byte. IsLost only gets weaker going up, so if that byte is not lost
  // no higher one is, and rule 1 has nothing either.
  std::optional<Seg> rule3;
  if (count_) {
    std::size_t n_above = count_;
    std::uint64_t bytes_above = sacked_bytes_;
    for (std::size_t i = 0; i < count_; ++i) {
      const std::uint32_t lo = seq_max(i ? ranges_[i - 1].right : snd_una, rxt);
      const std::uint32_t hi = ranges_[i].left;
      if (seq_lt(lo, hi)) {
        const Seg seg{lo, std::min(hi - lo, smss), false};
        if (lost_by_counts(n_above, bytes_above, smss)) return seg;  // rule 1
        rule3 = seg;
        break;
      }
      --n_above;
      bytes_above -= ranges_[i].right - ranges_[i].left;
    }
  }
  // Rule 2: data never sent. After an RTO rewind, the bytes from snd_nxt on are "not
  // yet sent again" and go first, skipping what the receiver SACKed.
  if (seq_lt(snd_nxt, snd_max) && seq_geq(snd_nxt, snd_una)) {
    std::uint32_t seq = 0;
    std::uint32_t end = 0;
    if (first_unsacked(snd_nxt, snd_max, &seq, &end))
      return Seg{seq, std::min(end - seq, smss), false};
  } else if (have_new_data && new_data_len > 0) {
    return Seg{snd_max, std::min(new_data_len, smss), true};
  }
  return rule3;
}

std::optional<SackScoreboard::Seg> SackScoreboard::rescue_seg(std::uint32_t snd_una,
                                                              std::uint32_t snd_max,
                                                              std::uint32_t smss) const {
  if (smss == 0 || !seq_lt(snd_una, snd_max)) return std::nullopt;
  std::uint32_t top = snd_max;
  std::uint32_t lo = count_ ? ranges_[count_ - 1].right : snd_una;
  if (count_ && !seq_lt(lo, snd_max)) {
    // Everything up to snd_max is SACKed: the highest unSACKed byte is below the top range.
    top = ranges_[count_ - 1].left;
    lo = count_ > 1 ? ranges_[count_ - 2].right : snd_una;
  }
  lo = seq_max(lo, snd_una);
  if (!seq_lt(lo, top)) return std::nullopt;
  const std::uint32_t len = std::min(top - lo, smss);
  return Seg{top - len, len, false};
}

void SackScoreboard::mark_retransmitted(std::uint32_t seq, std::uint32_t len) {
  const std::uint32_t end = seq + len;
  if (!have_una_ || seq_gt(end, high_rxt_)) high_rxt_ = end;
  have_una_ = true;
}

}  // namespace esock::tcp
