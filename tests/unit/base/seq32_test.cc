#include "base/seq32.h"

#include <gtest/gtest.h>

namespace esock {
namespace {

TEST(Seq32, OrdersAcrossWrap) {
  EXPECT_TRUE(seq_lt(0xfffffff0u, 0x10u));
  EXPECT_TRUE(seq_gt(0x10u, 0xfffffff0u));
  EXPECT_TRUE(seq_leq(5u, 5u));
  EXPECT_FALSE(seq_lt(5u, 5u));
  EXPECT_EQ(seq_diff(0x10u, 0xfffffff0u), 0x20);
}

TEST(Seq32, RangeIsHalfOpenAndWraps) {
  EXPECT_TRUE(seq_in_range(0xffffffffu, 0xfffffff0u, 0x10u));
  EXPECT_TRUE(seq_in_range(0x0u, 0xfffffff0u, 0x10u));
  EXPECT_FALSE(seq_in_range(0x10u, 0xfffffff0u, 0x10u));
  EXPECT_FALSE(seq_in_range(0xffffffefu, 0xfffffff0u, 0x10u));
}

}  // namespace
}  // namespace esock
