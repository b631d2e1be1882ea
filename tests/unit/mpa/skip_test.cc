// Deframer::skip: stepping over runs of whole FPDUs placed elsewhere keeps the deframer in
// step (Markers included), whatever the split points of the octets fed around the runs.
#include <gtest/gtest.h>

#include "fpdu_stream.h"

namespace esock::mpa {
namespace {

using test::Bytes;

class MpaSkip : public ::testing::TestWithParam<std::tuple<bool, bool, std::uint32_t>> {};

TEST_P(MpaSkip, SkippedRunsLeaveExactlyTheOtherUlpdus) {
  const auto [markers, crc, start] = GetParam();
  std::mt19937 rng(start * 4 + markers * 2 + crc + 7);
  for (int trial = 0; trial < 60; ++trial) {
    std::vector<std::size_t> sizes(1 + rng() % 30);
    for (auto& n : sizes) n = test::random_ulpdu_size(rng);
    const test::FpduStream s = test::make_fpdu_stream(markers, crc, start, sizes, rng);
    // Alternate fed runs and skipped runs of whole FPDUs (either may be empty).
    Deframer d(markers, crc, 9000, start);
    std::vector<Bytes> got, want;
    std::size_t k = 0;
    bool skip = rng() % 2 == 0;
    while (k < sizes.size()) {
      const std::size_t run = std::min<std::size_t>(rng() % 5, sizes.size() - k);
      const std::size_t from = s.at[k], to = run ? s.end(k + run - 1) : from;
      if (skip) {
        ASSERT_TRUE(d.at_boundary());
        ASSERT_TRUE(d.skip(to - from));
      } else {
        ASSERT_EQ(test::feed_random(d, s.wire, from, to, rng, got, 1 + rng() % 3000), Error::none);
        want.insert(want.end(), s.ulpdus.begin() + static_cast<std::ptrdiff_t>(k),
                    s.ulpdus.begin() + static_cast<std::ptrdiff_t>(k + run));
      }
      EXPECT_EQ(d.position(), start + to);
      k += run;
      skip = !skip;
    }
    EXPECT_EQ(got, want) << "trial " << trial;
    EXPECT_TRUE(d.at_boundary());
  }
}

INSTANTIATE_TEST_SUITE_P(MarkersCrcOffsets, MpaSkip,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool(),
                                            ::testing::Values(0u, 4u, 500u, 508u, 1020u,
                                                              4000000000u)));

TEST(MpaSkip, UnalignedStartWithoutMarkers) {
  std::mt19937 rng(3);
  for (std::uint32_t start : {1u, 2u, 3u, 511u}) {
    const test::FpduStream s = test::make_fpdu_stream(false, true, start, {10, 700, 3, 1}, rng);
    Deframer d(false, true, 9000, start);
    std::vector<Bytes> got;
    ASSERT_EQ(test::feed_random(d, s.wire, 0, s.at[1], rng, got), Error::none);
    ASSERT_TRUE(d.skip(s.size[1] + s.size[2]));
    ASSERT_EQ(test::feed_random(d, s.wire, s.at[3], s.wire.size(), rng, got, 1), Error::none);
    EXPECT_EQ(got, (std::vector<Bytes>{s.ulpdus[0], s.ulpdus[3]}));
  }
}

TEST(MpaSkip, RefusedInsideAnFpduAfterAnErrorOrForAnOddLength) {
  std::mt19937 rng(5);
  const test::FpduStream s = test::make_fpdu_stream(true, true, 0, {100, 600, 20}, rng);
  Deframer d(true, true, 9000);
  std::vector<Bytes> got;
  EXPECT_FALSE(d.skip(2));  // not a multiple of 4: cannot be whole FPDUs
  EXPECT_EQ(d.position(), 0u);
  // Half-way into the first FPDU.
  ASSERT_EQ(test::feed_random(d, s.wire, 0, 50, rng, got), Error::none);
  EXPECT_FALSE(d.at_boundary());
  EXPECT_FALSE(d.skip(s.size[1]));
  EXPECT_EQ(d.position(), 50u);
  ASSERT_EQ(test::feed_random(d, s.wire, 50, s.at[1], rng, got), Error::none);
  EXPECT_TRUE(d.skip(0));  // a no-op at a boundary
  EXPECT_TRUE(d.skip(s.size[1]));
  // A corrupted FPDU after the run: the error is sticky and skip refuses from then on.
  Bytes bad = s.wire;
  bad[s.at[2] + 8] ^= 1;
  EXPECT_EQ(test::feed_random(d, bad, s.at[2], bad.size(), rng, got), Error::crc);
  EXPECT_FALSE(d.skip(4));
  EXPECT_EQ(got.size(), 1u);
}

// A Marker due at an FPDU start belongs to that FPDU (fpdu.h): once it is read, the
// deframer is inside the FPDU even though it buffers nothing, and cannot skip.
TEST(MpaSkip, LeadingMarkerReadMeansInsideTheNextFpdu) {
  std::mt19937 rng(9);
  // Marker + 2 + 502 + 4 = 512: the second FPDU starts at position 512, with a Marker.
  const test::FpduStream s = test::make_fpdu_stream(true, true, 0, {502, 6}, rng);
  ASSERT_EQ(s.at[1], 512u);
  Deframer d(true, true, 9000);
  std::vector<Bytes> got;
  ASSERT_EQ(test::feed_random(d, s.wire, 0, 512, rng, got), Error::none);
  EXPECT_TRUE(d.at_boundary());
  ASSERT_EQ(test::feed_random(d, s.wire, 512, 516, rng, got), Error::none);
  EXPECT_FALSE(d.at_boundary());
  EXPECT_FALSE(d.skip(s.size[1] - 4));
  ASSERT_EQ(test::feed_random(d, s.wire, 516, s.wire.size(), rng, got), Error::none);
  EXPECT_EQ(got, s.ulpdus);
}

}  // namespace
}  // namespace esock::mpa
