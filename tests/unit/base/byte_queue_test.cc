#include "base/byte_queue.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace esock {
namespace {

TEST(ByteQueue, IsAFifoAcrossGrowthAndCompaction) {
  ByteQueue q;
  std::vector<std::uint8_t> model;
  std::mt19937 rng(7);
  std::uint8_t next = 0;
  for (int i = 0; i < 2000; ++i) {
    std::size_t add = rng() % 3000;
    auto dst = q.append_uninit(add);
    for (auto& b : dst) {
      b = next;
      model.push_back(next++);
    }
    std::size_t take = rng() % (q.size() + 1);
    ASSERT_EQ(q.size(), model.size());
    ASSERT_TRUE(
        std::equal(q.view().begin(), q.view().begin() + static_cast<long>(take), model.begin()));
    q.consume(take);
    model.erase(model.begin(), model.begin() + static_cast<long>(take));
  }
  ASSERT_TRUE(std::equal(q.view().begin(), q.view().end(), model.begin(), model.end()));
}

TEST(ByteQueue, UnappendReturnsUnusedSpace) {
  ByteQueue q;
  q.append_uninit(10);
  q.unappend(4);
  EXPECT_EQ(q.size(), 6u);
  q.consume(6);
  EXPECT_TRUE(q.empty());
}

}  // namespace
}  // namespace esock
