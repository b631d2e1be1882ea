// 32-bit sequence-number arithmetic modulo 2^32 (RFC 1982 style, as TCP uses it in
// RFC 9293 section 3.4): a < b when the signed distance from a to b is positive.
#pragma once

#include <cstdint>

namespace esock {

inline std::int32_t seq_diff(std::uint32_t a, std::uint32_t b) {
  return static_cast<std::int32_t>(a - b);
}
inline bool seq_lt(std::uint32_t a, std::uint32_t b) {
  return seq_diff(a, b) < 0;
}
inline bool seq_leq(std::uint32_t a, std::uint32_t b) {
  return seq_diff(a, b) <= 0;
}
inline bool seq_gt(std::uint32_t a, std::uint32_t b) {
  return seq_diff(a, b) > 0;
}
inline bool seq_geq(std::uint32_t a, std::uint32_t b) {
  return seq_diff(a, b) >= 0;
}
// True when lo <= s < hi in sequence space.
inline bool seq_in_range(std::uint32_t s, std::uint32_t lo, std::uint32_t hi) {
  return s - lo < hi - lo;
}

}  // namespace esock
