#include "tcp/dev/inet_csum.h"

#include <gtest/gtest.h>

#include "test_frames.h"

namespace esock::tcp {
namespace {

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
