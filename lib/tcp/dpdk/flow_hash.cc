#include "tcp/dpdk/flow_hash.h"

#include <rte_thash.h>

#include <array>

namespace esock::tcp::dpdk {

namespace {

constexpr auto key = [] {
  std::array<std::uint8_t, 40> k{};
  for (std::size_t i = 0; i < k.size(); i += 2) {
    k[i] = 0x6d;
    k[i + 1] = 0x5a;
  }
  return k;
}();

}  // namespace

std::span<const std::uint8_t> symmetric_rss_key() {
  return key;
}

std::uint32_t flow_hash(const FourTuple& t) {
  // rte_softrss takes the tuple in host order, source first, as a received frame has it
  // (either end's view gives the same hash with this key).
  rte_ipv4_tuple tuple{};
  tuple.src_addr = t.remote_ip.v;
  tuple.dst_addr = t.local_ip.v;
  tuple.sport = t.remote_port;
  tuple.dport = t.local_port;
  return rte_softrss(reinterpret_cast<std::uint32_t*>(&tuple), RTE_THASH_V4_L4_LEN, key.data());
}

unsigned flow_queue(const FourTuple& t, unsigned queues) {
  return queues <= 1 ? 0 : flow_hash(t) % queues;
}

}  // namespace esock::tcp::dpdk
