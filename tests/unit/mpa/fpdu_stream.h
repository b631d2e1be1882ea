// Seeded random FPDU streams for the skip / scan / piece tests: what Framer sends, where
// each FPDU starts and how long it is on the wire.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "mpa/deframer.h"
#include "mpa/framer.h"

namespace esock::mpa::test {

using Bytes = std::vector<std::uint8_t>;

struct FpduStream {
  Bytes wire;
  std::vector<Bytes> ulpdus;
  std::vector<std::size_t> at;    // wire offset of each FPDU (its leading Marker included)
  std::vector<std::size_t> size;  // its wire size
  std::size_t end(std::size_t k) const { return at[k] + size[k]; }
};

inline Bytes random_bytes(std::size_t n, std::mt19937& rng) {
  Bytes b(n);
  for (auto& x : b) x = static_cast<std::uint8_t>(rng());
  return b;
}

// A random ULPDU size: mostly small and around an MSS, sometimes jumbo.
inline std::size_t random_ulpdu_size(std::mt19937& rng) {
  switch (rng() % 4) {
    case 0:
      return rng() % 48;
    case 1:
      return rng() % 600;
    case 2:
      return 1000 + rng() % 500;
    default:
      return rng() % 9001;
  }
}

inline FpduStream make_fpdu_stream(bool markers, bool crc, std::uint32_t start,
                                   const std::vector<std::size_t>& sizes, std::mt19937& rng) {
  Framer f(markers, crc, start);
  FpduStream s;
  for (std::size_t n : sizes) {
    s.ulpdus.push_back(random_bytes(n, rng));
    const std::size_t size = f.fpdu_size(n);
    s.at.push_back(s.wire.size());
    s.size.push_back(size);
    s.wire.resize(s.wire.size() + size);
    f.frame(s.ulpdus.back(), mut_bytes(s.wire).subspan(s.at.back()));
  }
  return s;
}

// Feeds wire[from, to) to d in random pieces of 1..max_split octets, collecting ULPDUs.
inline Error feed_random(Deframer& d, const Bytes& wire, std::size_t from, std::size_t to,
                         std::mt19937& rng, std::vector<Bytes>& got, std::size_t max_split = 3000) {
  while (from < to) {
    const std::size_t n = std::min<std::size_t>(1 + rng() % max_split, to - from);
    const Error e = d.feed(bytes_view(wire).subspan(from, n),
                           [&](bytes_view u) { got.emplace_back(u.begin(), u.end()); });
    if (e != Error::none) return e;
    from += n;
  }
  return Error::none;
}

}  // namespace esock::mpa::test
