// ddp::Coverage (lib/ddp/coverage.h): placed ranges, merged, and any overlap refused.
#include "ddp/coverage.h"

#include <gtest/gtest.h>

namespace esock::ddp {
namespace {

TEST(Coverage, InOrderRangesExtendOneAnother) {
  Coverage c;
  EXPECT_TRUE(c.add(0, 10));
  EXPECT_TRUE(c.add(10, 5));
  EXPECT_FALSE(c.add(14, 1));  // the last octet again
  EXPECT_FALSE(c.add(0, 15));  // all of it again
  EXPECT_TRUE(c.add(15, 1));
}

TEST(Coverage, GapsFillFromEitherSideAndOverlapsAnywhereAreRefused) {
  Coverage c;
  EXPECT_TRUE(c.add(100, 10));  // [100, 110)
  EXPECT_TRUE(c.add(0, 10));    // [0, 10)
  EXPECT_TRUE(c.add(50, 10));   // [50, 60)
  EXPECT_FALSE(c.add(55, 10));  // into [50, 60)
  EXPECT_FALSE(c.add(45, 10));  // across its start
  EXPECT_FALSE(c.add(5, 200));  // spans everything
  EXPECT_TRUE(c.add(10, 40));   // fills [10, 50): joins both neighbours
  EXPECT_TRUE(c.add(60, 40));   // fills [60, 100)
  EXPECT_FALSE(c.add(0, 1));
  EXPECT_FALSE(c.add(109, 1));
  EXPECT_TRUE(c.add(110, 1));
}

}  // namespace
}  // namespace esock::ddp
