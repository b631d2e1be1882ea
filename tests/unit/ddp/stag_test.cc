#include "ddp/stag.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <vector>

namespace esock::ddp {
namespace {

using Check = StagTable::Check;

std::uint64_t va(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p);
}

struct StagTest : ::testing::Test {
  StagTable t;
  std::uint32_t pd = t.alloc_pd();
  std::uint32_t other_pd = t.alloc_pd();
  std::vector<std::uint8_t> buf = std::vector<std::uint8_t>(4096);
  stag_t s = t.register_mr(pd, buf.data(), buf.size(), access_local_write | access_remote_write);
};

TEST_F(StagTest, RegisterRejectsBadArguments) {
  EXPECT_NE(s, 0u);
  EXPECT_EQ(t.register_mr(0, buf.data(), 16, 0), 0u);   // no such pd
  EXPECT_EQ(t.register_mr(99, buf.data(), 16, 0), 0u);  // never allocated
  EXPECT_EQ(t.register_mr(pd, nullptr, 16, 0), 0u);
  EXPECT_EQ(t.register_mr(pd, buf.data(), 0, 0), 0u);
  EXPECT_EQ(t.register_mr(pd, buf.data(), 16, 0x80), 0u);  // unknown access bit
  EXPECT_EQ(t.register_mr(pd, buf.data(), std::size_t{1} << 33, 0), 0u);
}

TEST_F(StagTest, OkReturnsTheAddress) {
  std::uint8_t* where = nullptr;
  EXPECT_EQ(t.check(s, pd, access_remote_write, va(buf.data()) + 100, 50, &where), Check::ok);
  EXPECT_EQ(where, buf.data() + 100);
  // Exactly the whole region, and zero length at the very end.
  EXPECT_EQ(t.check(s, pd, access_remote_write, va(buf.data()), 4096, &where), Check::ok);
  EXPECT_EQ(t.check(s, pd, 0, va(buf.data()) + 4096, 0, &where), Check::ok);
}

TEST_F(StagTest, CheckOrderValidPdAccessBounds) {
  // Each later check only reports once the earlier ones pass; all four are wrong here.
  const std::uint64_t bad_to = va(buf.data()) + 5000;
  EXPECT_EQ(t.check(s ^ 0x100, other_pd, access_remote_read, bad_to, 10, nullptr),
            Check::invalid_stag);
  EXPECT_EQ(t.check(s, other_pd, access_remote_read, bad_to, 10, nullptr), Check::wrong_pd);
  EXPECT_EQ(t.check(s, pd, access_remote_read, bad_to, 10, nullptr), Check::access);
  EXPECT_EQ(t.check(s, pd, access_remote_write, bad_to, 10, nullptr), Check::bounds);
}

TEST_F(StagTest, InvalidStags) {
  EXPECT_EQ(t.check(0, pd, 0, va(buf.data()), 1, nullptr), Check::invalid_stag);
  EXPECT_EQ(t.check(s + 1, pd, 0, va(buf.data()), 1, nullptr), Check::invalid_stag);  // key
  EXPECT_EQ(t.check(0xffffff00, pd, 0, va(buf.data()), 1, nullptr), Check::invalid_stag);
}

TEST_F(StagTest, BoundsAtTheEdges) {
  const std::uint64_t base = va(buf.data());
  EXPECT_EQ(t.check(s, pd, 0, base - 1, 1, nullptr), Check::bounds);
  EXPECT_EQ(t.check(s, pd, 0, base + 4095, 1, nullptr), Check::ok);
  EXPECT_EQ(t.check(s, pd, 0, base + 4095, 2, nullptr), Check::bounds);
  EXPECT_EQ(t.check(s, pd, 0, base + 4096, 1, nullptr), Check::bounds);
  EXPECT_EQ(t.check(s, pd, 0, base, 4097, nullptr), Check::bounds);
  EXPECT_EQ(t.check(s, pd, 0, base + 1, 4096, nullptr), Check::bounds);
}

TEST_F(StagTest, OverflowAttempts) {
  const std::uint64_t base = va(buf.data());
  EXPECT_EQ(t.check(s, pd, 0, UINT64_MAX, 0xffffffff, nullptr), Check::to_wrap);
  EXPECT_EQ(t.check(s, pd, 0, UINT64_MAX, 1, nullptr), Check::to_wrap);
  EXPECT_EQ(t.check(s, pd, 0, UINT64_MAX, 0, nullptr), Check::bounds);
  EXPECT_EQ(t.check(s, pd, 0, base, 0xffffffff, nullptr), Check::bounds);
  EXPECT_EQ(t.check(s, pd, 0, base + 4096, 0xffffffff, nullptr), Check::bounds);
  // A TO far below the base must not wrap into range.
  EXPECT_EQ(t.check(s, pd, 0, base - (std::uint64_t{1} << 63), 16, nullptr), Check::bounds);
  EXPECT_EQ(t.check(s, pd, 0, 0, 16, nullptr), Check::bounds);
}

TEST_F(StagTest, InvalidateAndDeregister) {
  EXPECT_EQ(t.invalidate(s, other_pd), EACCES);
  EXPECT_EQ(t.check(s, pd, 0, va(buf.data()), 1, nullptr), Check::ok);
  EXPECT_EQ(t.invalidate(s), 0);
  EXPECT_EQ(t.check(s, pd, 0, va(buf.data()), 1, nullptr), Check::invalid_stag);
  EXPECT_EQ(t.invalidate(s), EINVAL);  // already invalid
  EXPECT_EQ(t.live_regions(), 1u);
  EXPECT_EQ(t.deregister(s), 0);
  EXPECT_EQ(t.deregister(s), EINVAL);
  EXPECT_EQ(t.invalidate(s), EINVAL);
  EXPECT_EQ(t.live_regions(), 0u);
  // The index is reused with a new key: the stale STag stays invalid.
  const stag_t s2 = t.register_mr(pd, buf.data(), 16, access_remote_read);
  EXPECT_EQ(s2 >> 8, s >> 8);
  EXPECT_NE(s2, s);
  EXPECT_EQ(t.check(s, pd, 0, va(buf.data()), 1, nullptr), Check::invalid_stag);
  EXPECT_EQ(t.check(s2, pd, access_remote_read, va(buf.data()), 16, nullptr), Check::ok);
  EXPECT_EQ(t.invalidate(s2, pd), 0);
}

TEST_F(StagTest, AccessRightsAreExact) {
  const stag_t r = t.register_mr(pd, buf.data(), 64, access_remote_read);
  EXPECT_EQ(t.check(r, pd, access_remote_read, va(buf.data()), 64, nullptr), Check::ok);
  EXPECT_EQ(t.check(r, pd, access_remote_write, va(buf.data()), 64, nullptr), Check::access);
  EXPECT_EQ(t.check(r, pd, access_local_write, va(buf.data()), 64, nullptr), Check::access);
  EXPECT_EQ(t.check(r, pd, access_remote_read | access_remote_write, va(buf.data()), 1, nullptr),
            Check::access);
}

// The key bytes one index gets over n registrations (each deregistered before the next).
std::vector<std::uint8_t> keys_of_one_index(StagTable& t, int n) {
  std::vector<std::uint8_t> buf(64);
  const std::uint32_t pd = t.alloc_pd();
  std::vector<std::uint8_t> keys;
  for (int i = 0; i < n; ++i) {
    const stag_t s = t.register_mr(pd, buf.data(), buf.size(), access_remote_write);
    keys.push_back(static_cast<std::uint8_t>(s & 0xff));
    EXPECT_EQ(t.deregister(s), 0);
  }
  return keys;
}

// Hardening (issue 20, item 8): keys were the previous key + 1, so a peer that saw one STag
// knew every later one of that index, and they repeated after 256 registrations.
TEST(StagKeys, AReusedIndexGetsAnUnpredictableKeyNeverEqualToItsLast) {
  StagTable t;
  const std::vector<std::uint8_t> k = keys_of_one_index(t, 512);
  int sequential = 0;
  for (std::size_t i = 1; i < k.size(); ++i) {
    EXPECT_NE(k[i], k[i - 1]);  // a stale STag never validates the next region
    sequential += k[i] == static_cast<std::uint8_t>(k[i - 1] + 1);
  }
  EXPECT_LT(sequential, 32);  // random: about 2 of 511; the old scheme: all 511
  StagTable other;
  EXPECT_NE(keys_of_one_index(other, 16), std::vector<std::uint8_t>(k.begin(), k.begin() + 16));
}

TEST(StagKeys, ASeededTableRepeatsItsKeysForReproducibleTestsAndFuzzers) {
  StagTable a(42), b(42);
  EXPECT_EQ(keys_of_one_index(a, 64), keys_of_one_index(b, 64));
}

}  // namespace
}  // namespace esock::ddp
