// RFC 7306 section 5.1: the closed forms in atomic_ops.h against the RFC's own bit-serial
// pseudocode (sections 5.1.1 and 5.1.2), on random operands, and on memory.
#include <gtest/gtest.h>

#include <random>
#include <thread>
#include <vector>

#include "ddp/atomic_ops.h"

namespace esock::ddp {
namespace {

// Section 5.1.1's loop, bit 0 first: a set mask bit drops the carry out of that bit.
std::uint64_t rfc_fetch_add(std::uint64_t orig, std::uint64_t add, std::uint64_t mask) {
  std::uint64_t result = 0;
  unsigned carry = 0;
  for (int bit = 0; bit < 64; ++bit) {
    const unsigned o = (orig >> bit) & 1, a = (add >> bit) & 1, m = (mask >> bit) & 1;
    const unsigned sum = carry + o + a;
    result |= std::uint64_t{sum & 1} << bit;
    carry = ((sum >> 1) & 1) && !m;
  }
  return result;
}

// Section 5.1.2, bit by bit.
std::uint64_t rfc_cmp_swap(std::uint64_t orig, const AtomicRequest& r) {
  for (int bit = 0; bit < 64; ++bit) {
    const std::uint64_t b = std::uint64_t{1} << bit;
    if ((r.compare_mask & b) && ((r.compare ^ orig) & b)) return orig;
  }
  std::uint64_t out = orig;
  for (int bit = 0; bit < 64; ++bit) {
    const std::uint64_t b = std::uint64_t{1} << bit;
    if (r.add_swap_mask & b) out = (out & ~b) | (r.add_swap & b);
  }
  return out;
}

TEST(AtomicOps, MaskedAddEqualsTheRfcLoop) {
  std::mt19937_64 rng(7306);
  for (int i = 0; i < 200000; ++i) {
    const std::uint64_t o = rng(), a = rng();
    // Random masks, and the field layouts people use (2x32, 4x16, 8x8 bits).
    const std::uint64_t masks[] = {
        rng(), 0, 0x8000000080000000, 0x8000800080008000, 0x8080808080808080, ~std::uint64_t{0}};
    for (std::uint64_t m : masks) ASSERT_EQ(masked_add(o, a, m), rfc_fetch_add(o, a, m));
  }
  EXPECT_EQ(masked_add(~std::uint64_t{0}, 1, 0), 0u);  // the carry out of bit 63 is dropped
  // Two 32-bit fields: the low one wraps without touching the high one.
  EXPECT_EQ(masked_add(0x00000001ffffffff, 0x0000000100000001, 0x8000000080000000),
            0x0000000200000000u);
}

TEST(AtomicOps, MaskedCmpSwapEqualsTheRfcLoop) {
  std::mt19937_64 rng(5);
  for (int i = 0; i < 200000; ++i) {
    AtomicRequest r;
    r.op = static_cast<std::uint8_t>(AtomicOp::cmp_swap);
    const std::uint64_t o = rng();
    r.add_swap = rng();
    r.add_swap_mask = rng();
    r.compare_mask = (i % 3 == 0) ? rng() : ~std::uint64_t{0};
    r.compare = (i % 2 == 0) ? o ^ (rng() & ~r.compare_mask) : rng();  // half of them match
    ASSERT_EQ(masked_cmp_swap(o, r), rfc_cmp_swap(o, r));
  }
}

TEST(AtomicOps, ApplyReturnsTheOriginalAndLeavesTheResult) {
  alignas(8) std::uint64_t v = 40;
  AtomicRequest add;
  add.add_swap = 2;
  EXPECT_EQ(apply_atomic(&v, add), 40u);
  EXPECT_EQ(v, 42u);
  AtomicRequest cas;
  cas.op = static_cast<std::uint8_t>(AtomicOp::cmp_swap);
  cas.compare = 41;
  cas.add_swap = 7;
  cas.add_swap_mask = ~std::uint64_t{0};
  EXPECT_EQ(apply_atomic(&v, cas), 42u);  // no match: unchanged
  EXPECT_EQ(v, 42u);
  cas.compare = 42;
  EXPECT_EQ(apply_atomic(&v, cas), 42u);
  EXPECT_EQ(v, 7u);
  add.add_swap_mask = 0x8000000080000000;  // the masked add takes the exchange loop
  add.add_swap = 0x0000000100000001;
  EXPECT_EQ(apply_atomic(&v, add), 7u);
  EXPECT_EQ(v, 0x0000000100000008u);
}

TEST(AtomicOps, AtomicAgainstLocalThreadsUsingAtomicInstructions) {
  // The contract atomic_ops.h states: local threads that use atomic RMWs on the same octets.
  alignas(8) std::uint64_t v = 0;
  constexpr int n = 100000;
  std::thread local([&] {
    for (int i = 0; i < n; ++i) __atomic_fetch_add(&v, 1, __ATOMIC_SEQ_CST);
  });
  AtomicRequest masked;  // a masked add with one 64-bit field: the CAS loop
  masked.add_swap = 1;
  masked.add_swap_mask = std::uint64_t{1} << 63;
  for (int i = 0; i < n; ++i) apply_atomic(&v, masked);
  local.join();
  EXPECT_EQ(v, 2u * n);
}

}  // namespace
}  // namespace esock::ddp
