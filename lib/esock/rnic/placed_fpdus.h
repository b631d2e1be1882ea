// FPDUs whose payload was placed out of order, waiting for their turn in the stream.
//
// An out-of-order segment that is a run of whole, CRC-checked FPDUs has its payload copied
// straight into the target buffer (ddp::Qp::place_payload) and TCP keeps only its sequence
// range. What the queue pair still has to do in stream order (MSN bookkeeping, completions,
// RFC 5040/5041 ordering) needs only each FPDU's DDP header and payload length, kept here by
// MPA stream position until TCP reports the range delivered.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/bytes.h"

namespace esock::rnic {

struct PlacedFpdu {
  std::uint64_t pos = 0;  // MPA stream position of its first octet (a leading Marker's)
  std::uint32_t payload_len = 0;
  std::array<std::uint8_t, 32> hdr{};  // DDP + RDMAP header (at most 28 octets)
  std::uint8_t hdr_len = 0;
  bytes_view header() const { return {hdr.data(), hdr_len}; }
};

class PlacedFpdus {
 public:
  // Empty until a segment is placed out of order: most connections never see one, and a
  // room of 1024 reserved up front cost 48 KiB per connection.
  PlacedFpdus() = default;

  // Mostly in order (segments arrive mostly in order), so this is usually an append.
  void add(const PlacedFpdu& f) {
    if (v_.empty() || v_.back().pos < f.pos) {
      v_.push_back(f);
      return;
    }
    auto it = std::lower_bound(v_.begin() + static_cast<std::ptrdiff_t>(head_), v_.end(), f.pos,
                               [](const PlacedFpdu& a, std::uint64_t p) { return a.pos < p; });
    if (it != v_.end() && it->pos == f.pos) return;  // already recorded (cannot happen twice)
    v_.insert(it, f);
  }
  // The first recorded FPDU, or null.
  const PlacedFpdu* front() const { return head_ < v_.size() ? &v_[head_] : nullptr; }
  void pop() {
    if (++head_ == v_.size()) {
      v_.clear();
      head_ = 0;
    } else if (head_ >= 256 && head_ * 2 >= v_.size()) {
      v_.erase(v_.begin(), v_.begin() + static_cast<std::ptrdiff_t>(head_));  // bounded memory
      head_ = 0;
    }
  }
  std::size_t size() const { return v_.size() - head_; }

 private:
  std::vector<PlacedFpdu> v_;
  std::size_t head_ = 0;
};

}  // namespace esock::rnic
