#include "tcp/engine/reassembly.h"

#include <algorithm>

#include "base/seq32.h"

namespace esock::tcp {

namespace {
// RFC 7323 section 2.3: no window exceeds 2^30 bytes, so no acceptable segment is longer.
constexpr std::uint32_t max_segment_span = 1u << 30;
}  // namespace

Reassembly::Reassembly(std::size_t max_bytes, std::size_t max_ranges)
    : max_bytes_(max_bytes), max_ranges_(max_ranges) {
  pieces_.reserve(std::min<std::size_t>(max_ranges_, initial_pieces));
}

void Reassembly::clear() {
  pieces_.clear();
  bytes_held_ = 0;
  recent_count_ = 0;
}

void Reassembly::release_memory() {
  clear();
  std::vector<Piece>().swap(pieces_);
}

void Reassembly::note_recent(std::uint32_t seq) {
  const std::size_t n = std::min(recent_count_ + 1, recent_max);
  std::copy_backward(recent_.begin(), recent_.begin() + static_cast<std::ptrdiff_t>(n - 1),
                     recent_.begin() + static_cast<std::ptrdiff_t>(n));
  recent_[0] = seq;
  recent_count_ = n;
}

bool Reassembly::insert(std::uint32_t rcv_nxt, std::uint32_t seq, std::uint32_t len,
                        bytes_view data, const BufRef& ref) {
  if (!data.empty() && data.size() != len) return false;
  if (len == 0) return true;
  if (len > max_segment_span) return false;
  if (seq_leq(seq + len, rcv_nxt)) return true;  // a duplicate of delivered data
  if (seq_lt(seq, rcv_nxt)) {
    const std::uint32_t skip = rcv_nxt - seq;
    if (!data.empty()) data = data.subspan(skip);
    seq = rcv_nxt;
    len -= skip;
  }
  const std::uint32_t end = seq + len;

  // Pass 1: the gaps the stored pieces leave in [seq, end), to check the limits before
  // changing anything.
  const std::size_t first = first_ending_after(seq);
  std::size_t new_pieces = 0;
  std::size_t new_bytes = 0;
  {
    std::uint32_t cur = seq;
    for (std::size_t k = first; seq_lt(cur, end);) {
      if (k < pieces_.size() && seq_lt(pieces_[k].seq, end)) {
        if (seq_lt(cur, pieces_[k].seq)) {
          ++new_pieces;
          new_bytes += pieces_[k].seq - cur;
        }
        if (seq_gt(pieces_[k].end(), cur)) cur = pieces_[k].end();
        ++k;
      } else {
        ++new_pieces;
        new_bytes += end - cur;
        cur = end;
      }
    }
  }
  if (data.empty()) new_bytes = 0;
  if (pieces_.size() + new_pieces > max_ranges_) return false;
  if (new_bytes > max_bytes_ - bytes_held_) return false;

  // Pass 2: insert the gaps. Range-only pieces hold no reference: nothing to keep alive.
  auto make = [&](std::uint32_t from, std::uint32_t to) {
    Piece p{from, to - from, {}, {}};
    if (!data.empty()) {
      p.data = data.subspan(from - seq, to - from);
      p.ref = ref;
    }
    return p;
  };
  std::uint32_t cur = seq;
  for (std::size_t k = first; seq_lt(cur, end);) {
    const auto at = pieces_.begin() + static_cast<std::ptrdiff_t>(k);
    if (k < pieces_.size() && seq_lt(pieces_[k].seq, end)) {
      if (seq_lt(cur, pieces_[k].seq)) {
        pieces_.insert(at, make(cur, pieces_[k].seq));
        ++k;
      }
      if (seq_gt(pieces_[k].end(), cur)) cur = pieces_[k].end();
      ++k;
    } else {
      pieces_.insert(at, make(cur, end));
      cur = end;
    }
  }
  bytes_held_ += new_bytes;
  peak_bytes_ = std::max(peak_bytes_, bytes_held_);
  if (data.empty()) merge_range_only();
  note_recent(seq);
  return true;
}

bool Reassembly::can_store_range_only(std::uint32_t seq, std::uint32_t len) const {
  if (len == 0 || len > max_segment_span) return false;
  const std::size_t i = first_ending_after(seq);
  if (i < pieces_.size() && seq_lt(pieces_[i].seq, seq + len)) return false;  // overlaps
  // insert() counts the new piece before merging it with range-only neighbours.
  return pieces_.size() < max_ranges_;
}

void Reassembly::merge_range_only() {
  std::size_t out = 0;
  for (std::size_t i = 1; i < pieces_.size(); ++i) {
    Piece& last = pieces_[out];
    if (last.range_only() && pieces_[i].range_only() && last.end() == pieces_[i].seq) {
      last.len += pieces_[i].len;
    } else if (++out != i) {
      pieces_[out] = std::move(pieces_[i]);
    }
  }
  if (!pieces_.empty()) pieces_.resize(out + 1);
}

void Reassembly::pop_ready(std::uint32_t& rcv_nxt, PopFn fn) {
  std::size_t k = 0;
  for (; k < pieces_.size() && seq_leq(pieces_[k].seq, rcv_nxt); ++k) {
    const Piece& p = pieces_[k];
    bytes_held_ -= p.data.size();
    if (!seq_gt(p.end(), rcv_nxt)) continue;  // all of it already received in order
    const std::uint32_t skip = rcv_nxt - p.seq;
    const bytes_view d = p.data.empty() ? bytes_view{} : p.data.subspan(skip);
    fn(rcv_nxt, d, p.ref, p.len - skip);
    rcv_nxt = p.end();
  }
  pieces_.erase(pieces_.begin(), pieces_.begin() + static_cast<std::ptrdiff_t>(k));
}

std::size_t Reassembly::first_ending_after(std::uint32_t seq) const {
  // Pieces are sorted and disjoint within one window, so "ends at or before seq" is a
  // prefix and a binary search finds its end.
  const auto it = std::partition_point(pieces_.begin(), pieces_.end(),
                                       [&](const Piece& p) { return seq_leq(p.end(), seq); });
  return static_cast<std::size_t>(it - pieces_.begin());
}

std::size_t Reassembly::find(std::uint32_t seq) const {
  const std::size_t i = first_ending_after(seq);
  if (i < pieces_.size() && seq_geq(seq, pieces_[i].seq)) return i;
  return pieces_.size();
}

SackBlock Reassembly::island(std::size_t i, std::size_t* next) const {
  std::size_t lo = i;
  while (lo > 0 && pieces_[lo - 1].end() == pieces_[lo].seq) --lo;
  std::size_t hi = i;
  while (hi + 1 < pieces_.size() && pieces_[hi].end() == pieces_[hi + 1].seq) ++hi;
  if (next) *next = hi + 1;
  return {pieces_[lo].seq, pieces_[hi].end()};
}

std::size_t Reassembly::sack_blocks(std::span<SackBlock> out) const {
  std::size_t n = 0;
  auto add = [&](SackBlock b) {
    if (std::find(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n), b) ==
        out.begin() + static_cast<std::ptrdiff_t>(n))
      out[n++] = b;
  };
  for (std::size_t r = 0; r < recent_count_ && n < out.size(); ++r) {
    const std::size_t i = find(recent_[r]);
    if (i < pieces_.size()) add(island(i, nullptr));
  }
  for (std::size_t i = 0; i < pieces_.size() && n < out.size();) add(island(i, &i));
  return n;
}

}  // namespace esock::tcp
