#include "tcp/dev/inet_csum.h"

#include <gtest/gtest.h>

#include "test_frames.h"

namespace esock::tcp {
namespace {

TEST(InetCsum, Rfc1071Example) {
  // RFC 1071 section 3: the sum of 0001 f203 f4f5 f6f7 is ddf2 (folded).
  const std::uint8_t b[] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
  EXPECT_EQ(inet_fold(inet_sum(b)), static_cast<std::uint16_t>(~0xddf2));
}

TEST(InetCsum, OddLengthPadsRight) {
  const std::uint8_t b[] = {0x12, 0x34, 0x56};
  EXPECT_EQ(inet_sum(b), 0x1234u + 0x5600u);
}

TEST(InetCsum, FillCompletesOffloadedFrame) {
  auto full = test::tcp_frame(7, 333, 1, false);
  auto off = test::tcp_frame(7, 333, 1, true);
  EXPECT_TRUE(checksums_ok(full, 14));
  EXPECT_FALSE(checksums_ok(off, 14));
  EXPECT_TRUE(fill_checksums(off, 14, true, true));
  EXPECT_EQ(off, full);
}

TEST(InetCsum, LeavesNonIpv4Alone) {
  auto f = test::tcp_frame(1, 10);
  store_be16(f.data() + 12, 0x86dd);
  auto before = f;
  EXPECT_FALSE(fill_checksums(f, 14, true, true));
  EXPECT_EQ(f, before);
  std::vector<std::uint8_t> tiny(20, 0);
  EXPECT_FALSE(fill_checksums(tiny, 14, true, true));
}

TEST(InetCsum, DetectsOneBitFlip) {
  auto f = test::tcp_frame(1, 100);
  f[test::hdr_len + 50] ^= 0x10;
  EXPECT_FALSE(checksums_ok(f, 14));
}

}  // namespace
}  // namespace esock::tcp
