// The octet ranges of one message (or one Read's sink) already placed. Over MPA/TCP a
// legitimate peer never places an octet twice: TCP removes duplicates below DDP. So a
// segment that overlaps what is placed is a crafted one, and counting it would let a peer
// complete a message whose middle was never sent (stale memory delivered as data) or keep
// a Read outstanding forever. Segments normally arrive in order, so the common case is one
// range extended at its end.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace esock::ddp {

class Coverage {
 public:
  // Adds [off, off + len) (len > 0); false, changing nothing, if any octet is there already
  // or the placed octets would be in more than max_ranges pieces.
  bool add(std::uint64_t off, std::uint64_t len) {
    const std::uint64_t end = off + len;
    if (!r_.empty() && r_.back().second == off) {  // the in-order case
      r_.back().second = end;
      return true;
    }
    // First range that ends after `off`: it (and only it) may overlap or follow.
    auto it = std::lower_bound(r_.begin(), r_.end(), off,
                               [](const Range& r, std::uint64_t o) { return r.second <= o; });
    if (it != r_.end() && it->first < end) return false;
    // A peer that scatters tiny segments out of order would make every insert O(n) and the
    // list grow without bound: legitimate ones arrive in order (one range), so a few
    // holes are plenty.
    const bool joins =
        (it != r_.begin() && std::prev(it)->second == off) || (it != r_.end() && it->first == end);
    if (!joins && r_.size() >= max_ranges) return false;
    // Merge with a neighbour that touches.
    const bool joins_prev = it != r_.begin() && std::prev(it)->second == off;
    const bool joins_next = it != r_.end() && it->first == end;
    if (joins_prev && joins_next) {
      std::prev(it)->second = it->second;
      r_.erase(it);
    } else if (joins_prev) {
      std::prev(it)->second = end;
    } else if (joins_next) {
      it->first = off;
    } else {
      r_.insert(it, Range{off, end});
    }
    return true;
  }

 private:
  static constexpr std::size_t max_ranges = 16;
  using Range = std::pair<std::uint64_t, std::uint64_t>;  // [first, second)
  std::vector<Range> r_;                                  // sorted, disjoint, not touching
};

}  // namespace esock::ddp
