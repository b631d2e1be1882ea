#include "base/endian.h"

#include <gtest/gtest.h>

#include <array>

namespace esock {
namespace {

TEST(Endian, RoundTripsInNetworkOrder) {
  std::array<std::uint8_t, 8> b{};
  store_be16(b.data(), 0x1234);
  EXPECT_EQ(b[0], 0x12);
  EXPECT_EQ(b[1], 0x34);
  EXPECT_EQ(load_be16(b.data()), 0x1234);
  store_be32(b.data(), 0xdeadbeef);
  EXPECT_EQ(b[0], 0xde);
  EXPECT_EQ(b[3], 0xef);
  EXPECT_EQ(load_be32(b.data()), 0xdeadbeefu);
  store_be64(b.data(), 0x0102030405060708ull);
  EXPECT_EQ(b[0], 0x01);
  EXPECT_EQ(b[7], 0x08);
  EXPECT_EQ(load_be64(b.data()), 0x0102030405060708ull);
}

TEST(Endian, UnalignedAccessIsSafe) {
  std::array<std::uint8_t, 9> b{};
  store_be32(b.data() + 1, 0xa1b2c3d4);
  EXPECT_EQ(load_be32(b.data() + 1), 0xa1b2c3d4u);
}

}  // namespace
}  // namespace esock
