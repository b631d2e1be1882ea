// The fork ownership word (runtime/fork_handover.h) without fork: pids and liveness are given.
#include "esock/runtime/fork_handover.h"

#include <gtest/gtest.h>

#include <array>

using esock::sockets::ForkHandover;
using Claim = ForkHandover::Claim;

namespace {

bool everyone_alive(pid_t) {
  return true;
}
bool nobody_alive(pid_t) {
  return false;
}

struct ForkHandoverTable : ::testing::Test {
  std::array<std::atomic<std::uint64_t>, 4> words{};
  ForkHandover t{words.data(), words.size()};
  static constexpr pid_t parent = 100, child = 200, other = 300;
};

TEST_F(ForkHandoverTable, AChildClaimsWhatItsParentGaveUpAndOnlyOnce) {
  const auto s = t.acquire(parent, everyone_alive);
  ASSERT_TRUE(s);
  ASSERT_TRUE(t.start_deciding(s, parent));
  EXPECT_EQ(t.claim(s, child, parent, everyone_alive), Claim::waiting);
  ASSERT_TRUE(t.give_up(s, parent));
  EXPECT_EQ(t.claim(s, child, parent, everyone_alive), Claim::claimed);
  EXPECT_EQ(t.claim(s, other, parent, everyone_alive), Claim::orphaned);  // a second child
  EXPECT_FALSE(t.take_back(s, parent));                                   // claimed: not unclaimed
}

TEST_F(ForkHandoverTable, AParentThatKeepsItOrphansTheChildrensCopies) {
  const auto s = t.acquire(parent, everyone_alive);
  ASSERT_TRUE(t.start_deciding(s, parent));
  ASSERT_TRUE(t.keep(s, parent));
  EXPECT_EQ(t.claim(s, child, parent, everyone_alive), Claim::orphaned);
  EXPECT_FALSE(t.give_up(s, parent));  // decided already
}

TEST_F(ForkHandoverTable, OnlyTheDecidingProcesssChildMayClaim) {
  const auto s = t.acquire(parent, everyone_alive);
  ASSERT_TRUE(t.start_deciding(s, parent));
  ASSERT_TRUE(t.give_up(s, parent));
  // A grandchild remembers its own parent (the child), not the one that gave it up.
  EXPECT_EQ(t.claim(s, other, child, everyone_alive), Claim::orphaned);
  EXPECT_EQ(t.claim(s, child, parent, everyone_alive), Claim::claimed);
}

TEST_F(ForkHandoverTable, AParentThatEndsWhileDecidingLeavesItToItsChild) {
  const auto s = t.acquire(parent, everyone_alive);
  ASSERT_TRUE(t.start_deciding(s, parent));
  EXPECT_EQ(t.claim(s, child, parent, nobody_alive), Claim::claimed);
}

TEST_F(ForkHandoverTable, AFreedAndReusedSlotIsNotTheOldConnection) {
  const auto s = t.acquire(parent, everyone_alive);
  ASSERT_TRUE(t.start_deciding(s, parent));
  ASSERT_TRUE(t.give_up(s, parent));
  ASSERT_TRUE(t.take_back(s, parent));  // nobody claimed it in time
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(t.acquire(parent, everyone_alive));
  EXPECT_EQ(t.claim(s, child, parent, everyone_alive), Claim::orphaned);  // new generation
}

TEST_F(ForkHandoverTable, AFullTableReclaimsTheSlotsOfProcessesThatAreGone) {
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(t.acquire(child, everyone_alive));
  EXPECT_FALSE(t.acquire(parent, everyone_alive));  // full, and every owner alive
  const auto s = t.acquire(parent, nobody_alive);   // the child exited holding them
  ASSERT_TRUE(s);
  t.free(s, parent);
  EXPECT_TRUE(t.acquire(parent, everyone_alive));
}

}  // namespace
