// The --verify pattern: octet i of a run's data is octet (i mod 8) of splitmix64(seed +
// i / 8), so both processes compute the expected contents from the seed alone, and octets
// that landed at the wrong offset (or not at all) do not match.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

#include "base/bytes.h"

namespace esock::utcp::tool {

inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Writes the pattern octets [offset, offset + out.size()) of `seed` into `out`.
inline void pattern_fill(std::uint64_t seed, std::uint64_t offset, mut_bytes out) {
  for (std::size_t i = 0; i < out.size();) {
    const std::uint64_t pos = offset + i;
    const std::uint64_t w = splitmix64(seed + pos / 8);
    const std::size_t skip = static_cast<std::size_t>(pos % 8);
    const std::size_t n = std::min<std::size_t>(8 - skip, out.size() - i);
    for (std::size_t k = 0; k < n; ++k)
      out[i + k] = static_cast<std::uint8_t>(w >> (8 * (skip + k)));
    i += n;
  }
}

// True when `in` equals the pattern octets at [offset, offset + in.size()).
inline bool pattern_check(std::uint64_t seed, std::uint64_t offset, bytes_view in) {
  std::array<std::uint8_t, 4096> expect;
  for (std::size_t i = 0; i < in.size(); i += expect.size()) {
    const std::size_t n = std::min(expect.size(), in.size() - i);
    pattern_fill(seed, offset + i, mut_bytes(expect.data(), n));
    if (std::memcmp(expect.data(), in.data() + i, n) != 0) return false;
  }
  return true;
}

}  // namespace esock::utcp::tool
