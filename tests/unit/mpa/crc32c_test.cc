// CRC32c: RFC 3720 appendix B.4 vectors (which also fix the octet order on the wire).
#include "mpa/crc32c.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <numeric>
#include <vector>

namespace esock::mpa {
namespace {

std::array<std::uint8_t, 4> wire(std::uint32_t crc) {
  std::array<std::uint8_t, 4> o{};
  store_crc(o.data(), crc);
  return o;
}
using Octets = std::array<std::uint8_t, 4>;

TEST(MpaCrc32c, StandardCheckValue) {
  const std::uint8_t s[] = {'1', '2', '3', '4', '5', '6', '7', '8', '9'};
  EXPECT_EQ(crc32c(s), 0xe3069283u);
  EXPECT_EQ(crc32c({}), 0u);
}

// RFC 3720 B.4: the CRC octets as listed there are the octets on the wire.
TEST(MpaCrc32c, Rfc3720B4ThirtyTwoZeros) {
  std::vector<std::uint8_t> d(32, 0x00);
  EXPECT_EQ(wire(crc32c(d)), (Octets{0xaa, 0x36, 0x91, 0x8a}));
}
TEST(MpaCrc32c, Rfc3720B4ThirtyTwoOnes) {
  std::vector<std::uint8_t> d(32, 0xff);
  EXPECT_EQ(wire(crc32c(d)), (Octets{0x43, 0xab, 0xa8, 0x62}));
}
TEST(MpaCrc32c, Rfc3720B4Incrementing) {
  std::vector<std::uint8_t> d(32);
  std::iota(d.begin(), d.end(), std::uint8_t{0});
  EXPECT_EQ(wire(crc32c(d)), (Octets{0x4e, 0x79, 0xdd, 0x46}));
}
TEST(MpaCrc32c, Rfc3720B4Decrementing) {
  std::vector<std::uint8_t> d(32);
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = static_cast<std::uint8_t>(31 - i);
  EXPECT_EQ(wire(crc32c(d)), (Octets{0x5c, 0xdb, 0x3f, 0x11}));
}
TEST(MpaCrc32c, Rfc3720B4IscsiReadCommand) {
  // clang-format off
  const std::vector<std::uint8_t> d = {
      0x01, 0xc0, 0x00, 0x00,  0x00, 0x00, 0x00, 0x00,  0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00,  0x14, 0x00, 0x00, 0x00,  0x00, 0x00, 0x04, 0x00,
      0x00, 0x00, 0x00, 0x14,  0x00, 0x00, 0x00, 0x18,  0x28, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00,  0x02, 0x00, 0x00, 0x00,  0x00, 0x00, 0x00, 0x00};
  // clang-format on
  EXPECT_EQ(wire(crc32c(d)), (Octets{0x56, 0x3a, 0x96, 0xd9}));
}

TEST(MpaCrc32c, StoreLoadRoundTrip) {
  std::uint8_t b[4];
  store_crc(b, 0x8a9136aau);
  EXPECT_EQ(b[0], 0xaa);
  EXPECT_EQ(b[3], 0x8a);
  EXPECT_EQ(load_crc(b), 0x8a9136aau);
}

TEST(MpaCrc32c, ChainsAtEverySplit) {
  std::vector<std::uint8_t> d(300);
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = static_cast<std::uint8_t>(i * 7 + 3);
  const std::uint32_t whole = crc32c(d);
  const bytes_view v(d);
  for (std::size_t cut = 0; cut <= d.size(); ++cut)
    ASSERT_EQ(crc32c(v.subspan(cut), crc32c(v.first(cut))), whole) << cut;
  // Three pieces too.
  EXPECT_EQ(crc32c(v.subspan(200), crc32c(v.subspan(7, 193), crc32c(v.first(7)))), whole);
}

}  // namespace
}  // namespace esock::mpa
