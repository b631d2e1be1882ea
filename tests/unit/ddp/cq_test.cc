// The completion queue grows on demand up to its capacity (an idle connection's queues
// cost a few hundred octets) and keeps FIFO order across growth and wrap-around.
#include <gtest/gtest.h>

#include "ddp/cq.h"

namespace esock::ddp {
namespace {

Completion numbered(std::uint64_t i) {
  Completion c;
  c.wr_id = i;
  c.byte_len = static_cast<std::uint32_t>(i * 3);
  return c;
}

TEST(CompletionQueue, GrowsPastItsFirstRingInOrderEvenWhenWrapped) {
  CompletionQueue cq(1000);
  Completion out[7];
  std::uint64_t pushed = 0, polled = 0;
  // Push and poll unevenly so the ring's head sits mid-ring when it must grow.
  for (int round = 0; round < 200; ++round) {
    for (int k = 0; k < 5; ++k) cq.push(numbered(pushed++));
    const std::size_t n = cq.poll({out, static_cast<std::size_t>(round % 4)});
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_EQ(out[i].wr_id, polled);
      EXPECT_EQ(out[i].byte_len, polled * 3);
      ++polled;
    }
  }
  EXPECT_GT(cq.size(), 16u);  // past the first ring
  for (std::size_t n; (n = cq.poll(out)) != 0;)
    for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(out[i].wr_id, polled++);
  EXPECT_EQ(polled, pushed);
  EXPECT_FALSE(cq.overflowed());
}

TEST(CompletionQueue, PastItsCapacityACompletionIsDroppedAndCounted) {
  CompletionQueue cq(40);
  for (std::uint64_t i = 0; i < 45; ++i) cq.push(numbered(i));
  EXPECT_EQ(cq.size(), 40u);
  EXPECT_EQ(cq.capacity(), 40u);
  EXPECT_EQ(cq.dropped(), 5u);
  Completion out[64];
  ASSERT_EQ(cq.poll(out), 40u);
  for (std::uint64_t i = 0; i < 40; ++i) EXPECT_EQ(out[i].wr_id, i);
}

}  // namespace
}  // namespace esock::ddp
