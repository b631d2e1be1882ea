// flow_hash.h: DPDK's Toeplitz hash with the symmetric key, against a bit-by-bit Toeplitz
// written from Microsoft's RSS specification, the same for both directions of a flow, and
// an even spread of flows over two queues.
#include "tcp/dpdk/flow_hash.h"

#include <gtest/gtest.h>

#include <array>
#include <random>

namespace esock::tcp::dpdk {
namespace {

// The specification's algorithm: for each set bit of the input (most significant first),
// XOR the 32 key bits starting at that bit's position.
std::uint32_t toeplitz(std::span<const std::uint8_t> key, std::span<const std::uint8_t> input) {
  std::uint32_t result = 0;
  for (std::size_t bit = 0; bit < input.size() * 8; ++bit) {
    if (!(input[bit / 8] & (0x80 >> (bit % 8)))) continue;
    std::uint32_t window = 0;
    for (std::size_t k = 0; k < 32; ++k) {
      const std::size_t kb = bit + k;
      window = (window << 1) | ((key[kb / 8] >> (7 - kb % 8)) & 1);
    }
    result ^= window;
  }
  return result;
}

// The input as the specification orders it for TCP/IPv4: source address, destination
// address, source port, destination port, each in network order.
std::uint32_t reference(const FourTuple& t) {
  const std::uint32_t src = t.remote_ip.v, dst = t.local_ip.v;
  const std::array<std::uint8_t, 12> in = {
      std::uint8_t(src >> 24),          std::uint8_t(src >> 16),
      std::uint8_t(src >> 8),           std::uint8_t(src),
      std::uint8_t(dst >> 24),          std::uint8_t(dst >> 16),
      std::uint8_t(dst >> 8),           std::uint8_t(dst),
      std::uint8_t(t.remote_port >> 8), std::uint8_t(t.remote_port),
      std::uint8_t(t.local_port >> 8),  std::uint8_t(t.local_port)};
  return toeplitz(symmetric_rss_key(), in);
}

FourTuple random_tuple(std::mt19937& rng) {
  FourTuple t;
  t.local_ip.v = static_cast<std::uint32_t>(rng());
  t.remote_ip.v = static_cast<std::uint32_t>(rng());
  t.local_port = static_cast<std::uint16_t>(rng());
  t.remote_port = static_cast<std::uint16_t>(rng());
  return t;
}

FourTuple reversed(const FourTuple& t) {
  return {t.remote_ip, t.local_ip, t.remote_port, t.local_port};
}

TEST(FlowHash, IsTheToeplitzHashOfTheSpecificationWithTheSymmetricKey) {
  ASSERT_EQ(symmetric_rss_key().size(), 40u);
  std::mt19937 rng(7);
  for (int i = 0; i < 10000; ++i) {
    const FourTuple t = random_tuple(rng);
    ASSERT_EQ(flow_hash(t), reference(t)) << i;
  }
}

TEST(FlowHash, BothEndsOfAFlowGetTheSameHashAndQueue) {
  std::mt19937 rng(11);
  for (int i = 0; i < 10000; ++i) {
    const FourTuple t = random_tuple(rng);
    ASSERT_EQ(flow_hash(t), flow_hash(reversed(t))) << i;
    ASSERT_EQ(flow_queue(t, 2), flow_queue(reversed(t), 2));
  }
}

TEST(FlowHash, EphemeralPortsSpreadOverTwoQueues) {
  FourTuple t{Ipv4Addr::from_octets(10, 93, 0, 2), Ipv4Addr::from_octets(10, 93, 0, 1), 0, 7700};
  unsigned on[2] = {};
  for (unsigned p = 49152; p <= 65535; ++p) {
    t.local_port = static_cast<std::uint16_t>(p);
    ++on[flow_queue(t, 2)];
  }
  const unsigned total = on[0] + on[1];
  EXPECT_GT(on[0], total * 45 / 100);
  EXPECT_GT(on[1], total * 45 / 100);
  EXPECT_EQ(flow_queue(t, 1), 0u);
}

}  // namespace
}  // namespace esock::tcp::dpdk
