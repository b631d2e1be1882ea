// MarkerCursor: the one walker of RFC 5044 section 5 Marker positions that the framers, the
// deframer and the segment scanner share. Its contract, checked against positions computed
// here from the RFC's rule (a Marker at every stream position that is a multiple of 512),
// from streams that start on a Marker, mid-interval and past 2^32.
#include "mpa/marker_cursor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "base/endian.h"

namespace esock::mpa {
namespace {

constexpr std::uint64_t k4G = std::uint64_t{1} << 32;

// Stream starts: at a Marker, just after one, mid-interval (aligned or not), right before
// one, and the same around 2^32 (where a 32-bit position would wrap) and far beyond it.
const std::uint64_t kStarts[] = {0,       1,       4,         100,           507,      508,
                                 511,     512,     1020,      k4G - 12,      k4G - 1,  k4G,
                                 k4G + 4, k4G + 9, k4G + 500, 5 * k4G + 256, k4G << 18};

// Walks n non-Marker octets from the cursor, emitting every Marker due on the way (as the
// framers do), and returns the stream positions the Markers were emitted at.
std::vector<std::uint64_t> walk(MarkerCursor& c, std::size_t n) {
  std::vector<std::uint64_t> at;
  while (n > 0) {
    if (c.at_marker()) {
      at.push_back(c.pos());
      std::uint8_t m[kMarkerLen];
      c.emit_marker(m);
      continue;
    }
    const std::size_t k = c.clamp(n);
    c.advance(k);
    n -= k;
  }
  return at;
}

TEST(MpaMarkerCursor, TheStreamStartsWithAMarker) {
  MarkerCursor c(0, true);
  EXPECT_TRUE(c.markers());
  EXPECT_TRUE(c.at_marker());
  EXPECT_EQ(c.to_marker(), 0u);
  EXPECT_EQ(c.clamp(100), 0u);
  std::uint8_t m[kMarkerLen] = {0xff, 0xff, 0xff, 0xff};
  c.emit_marker(m);  // between FPDUs: it leads the first FPDU, FPDUPTR 0
  EXPECT_EQ(load_be32(m), 0u);
  EXPECT_EQ(c.pos(), 4u);
  EXPECT_EQ(c.to_marker(), 508u);  // the 512 octets include the Marker
}

TEST(MpaMarkerCursor, MarkersFallOnMultiplesOf512WhereverTheStreamStarts) {
  for (std::uint64_t start : kStarts) {
    MarkerCursor c(start, true);
    EXPECT_EQ(c.pos(), start);
    EXPECT_EQ(c.to_marker(), (512 - start % 512) % 512) << start;
    EXPECT_EQ(c.at_marker(), start % 512 == 0) << start;
    EXPECT_EQ(c.clamp(3), std::min<std::uint64_t>(3, c.to_marker())) << start;
    const std::vector<std::uint64_t> at = walk(c, 5000);
    ASSERT_FALSE(at.empty());
    // The first at or after the start, then every 512 octets, Markers included.
    EXPECT_EQ(at[0], start + (512 - start % 512) % 512) << start;
    for (std::size_t i = 0; i < at.size(); ++i) EXPECT_EQ(at[i] % 512, 0u) << start;
    for (std::size_t i = 1; i < at.size(); ++i) EXPECT_EQ(at[i] - at[i - 1], 512u) << start;
    EXPECT_EQ(c.pos(), start + 5000 + kMarkerLen * at.size()) << start;
  }
}

TEST(MpaMarkerCursor, WithoutMarkersNoneIsEverDue) {
  for (std::uint64_t start : kStarts) {
    MarkerCursor c(start, false);
    EXPECT_FALSE(c.markers());
    EXPECT_FALSE(c.at_marker());
    EXPECT_GE(c.to_marker(), std::uint64_t{1} << 40);
    EXPECT_EQ(c.clamp(70000), 70000u);
    EXPECT_EQ(c.wire_len(65544), 65544u);
    EXPECT_TRUE(walk(c, 100000).empty());
    EXPECT_EQ(c.pos(), start + 100000);
    c.skip(12);
    EXPECT_FALSE(c.at_marker());
    EXPECT_EQ(c.pos(), start + 100012);
  }
}

TEST(MpaMarkerCursor, FpduptrPointsBackToTheUlpduLengthOrIsZeroBetweenFpdus) {
  // An FPDU whose ULPDU_Length sits 12 octets before a Marker, across 2^32.
  MarkerCursor c(k4G - 12, true);
  EXPECT_EQ(c.fpduptr(), 0u);
  c.begin_fpdu();
  c.advance(12);
  ASSERT_TRUE(c.at_marker());
  EXPECT_EQ(c.fpduptr(), 12u);
  std::uint8_t m[kMarkerLen] = {0xff, 0xff, 0xff, 0xff};
  c.emit_marker(m);
  EXPECT_EQ(load_be16(m), 0u);  // reserved
  EXPECT_EQ(load_be16(m + 2), 12u);
  // The next Marker, 512 on, still points back to the same ULPDU_Length.
  c.advance(508);
  ASSERT_TRUE(c.at_marker());
  EXPECT_EQ(c.fpduptr(), 524u);
  c.emit_marker(m);
  EXPECT_EQ(load_be16(m + 2), 524u);
  // The FPDU ends right before the next Marker: that one leads the next FPDU.
  c.advance(508);
  c.end_fpdu();
  ASSERT_TRUE(c.at_marker());
  EXPECT_EQ(c.fpduptr(), 0u);
  c.emit_marker(m);
  EXPECT_EQ(load_be32(m), 0u);
  EXPECT_EQ(c.pos(), k4G + 1024 + 4);
}

TEST(MpaMarkerCursor, TakeMarkerChecksFpduptrIgnoringTheLowTwoBitsAndStepsOverEitherWay) {
  const auto marker = [](std::uint16_t reserved, std::uint16_t ptr) {
    std::vector<std::uint8_t> m(kMarkerLen);
    store_be16(m.data(), reserved);
    store_be16(m.data() + 2, ptr);
    return m;
  };
  for (std::uint64_t start : {std::uint64_t{500}, k4G - 12, 3 * k4G + 500}) {
    for (std::uint16_t ptr :
         std::initializer_list<std::uint16_t>{12, 13, 15, 0, 8, 16, 524, 0x800c}) {
      MarkerCursor c(start, true);
      c.begin_fpdu();
      c.advance(c.to_marker());
      const std::uint64_t fpduptr = c.fpduptr();
      ASSERT_EQ(fpduptr, 12u);
      const bool want = (ptr & ~3u) == fpduptr;
      EXPECT_EQ(c.take_marker(marker(0, ptr).data()), want) << start << " " << ptr;
      EXPECT_EQ(c.pos() % 512, 4u);
      EXPECT_EQ(c.to_marker(), 508u);
    }
    // Between FPDUs only 0 (or 1..3) is right. The reserved bits are not checked.
    MarkerCursor c(start, true);
    c.advance(c.to_marker());
    EXPECT_TRUE(c.take_marker(marker(0xffff, 3).data()));
    MarkerCursor d(start, true);
    d.advance(d.to_marker());
    EXPECT_FALSE(d.take_marker(marker(0, 4).data()));
  }
}

TEST(MpaMarkerCursor, AnFpduptrBeyond16BitsMatchesNoField) {
  MarkerCursor c(4, true);
  c.begin_fpdu();
  // 129 Markers into the FPDU the distance no longer fits in 16 bits.
  std::uint8_t m[kMarkerLen];
  for (int i = 0; i < 128; ++i) {
    c.advance(c.to_marker());
    c.emit_marker(m);
  }
  c.advance(c.to_marker());
  ASSERT_EQ(c.fpduptr(), 129u * 512 - 4);
  store_be16(m, 0);
  store_be16(m + 2, static_cast<std::uint16_t>(c.fpduptr()));  // the truncated value
  EXPECT_FALSE(c.take_marker(m));
}

// wire_len(n) is exactly what walking an FPDU of n unmarked octets (fpdu_len: at least 8)
// from here emits: a Marker due at its first octet counts, one due right after its last
// does not.
TEST(MpaMarkerCursor, WireLenCountsTheMarkersAWalkEmits) {
  for (std::uint64_t start : kStarts) {
    for (std::size_t n : std::initializer_list<std::size_t>{8, 12, 500, 504, 508, 512, 1016, 1020,
                                                            1024, 1460, 9000, 64520}) {
      MarkerCursor c(start, true);
      const std::size_t want = c.wire_len(n);
      const std::uint64_t from = c.pos();
      std::size_t emitted = 0;
      if (c.at_marker()) {  // it leads the FPDU
        std::uint8_t m[kMarkerLen];
        c.emit_marker(m);
        ++emitted;
      }
      c.begin_fpdu();
      emitted += walk(c, n).size();
      EXPECT_EQ(want, n + kMarkerLen * emitted) << start << " " << n;
      EXPECT_EQ(c.pos() - from, want) << start << " " << n;
      EXPECT_EQ(want, n + kMarkerLen * markers_in(start, n)) << start << " " << n;
    }
  }
}

TEST(MpaMarkerCursor, SkipLandsBetweenFpdusWithTheNextMarkerAtOrAfter) {
  for (std::uint64_t start : kStarts) {
    for (std::uint64_t n : {std::uint64_t{0}, std::uint64_t{4}, std::uint64_t{508},
                            std::uint64_t{512} - start % 512, std::uint64_t{7000}, k4G}) {
      MarkerCursor c(start, true);
      c.begin_fpdu();  // skip leaves whatever FPDU was current
      c.skip(n);
      const std::uint64_t p = start + n;
      EXPECT_EQ(c.pos(), p);
      EXPECT_EQ(c.to_marker(), (512 - p % 512) % 512) << start << " " << n;
      if (c.at_marker()) {  // due exactly there: still to be taken, leading the next FPDU
        std::uint8_t m[kMarkerLen] = {0, 0, 0, 0};
        EXPECT_TRUE(c.take_marker(m));
      }
      EXPECT_EQ(c.fpduptr(), 0u);
    }
  }
}

}  // namespace
}  // namespace esock::mpa
