// One EAL for the whole test binary (DPDK allows one rte_eal_init per process; CTest runs
// each test in its own process, a direct run of the binary runs them all in one).
#pragma once

#include <vector>

#include "base/buf_ref.h"
#include "base/endian.h"
#include "tcp/dev/device.h"
#include "tcp/dpdk/eal.h"

namespace esock::tcp::dpdk::test {

Eal& eal();

struct CountingHolder : BufHolder {
  int released = 0;
  CountingHolder() {
    release = [](BufHolder* h) { ++static_cast<CountingHolder*>(h)->released; };
  }
};

// A frame of `len` octets (>= 18): Ethernet header to `dst` from `src` with the local
// experimental EtherType 0x88b5 (IEEE 802), then a 4-octet sequence number, then a pattern
// derived from it, so the receiver can check every octet.
inline std::vector<std::uint8_t> test_frame(std::uint32_t seq, std::size_t len) {
  std::vector<std::uint8_t> f(len);
  for (int i = 0; i < 6; ++i) {
    f[static_cast<std::size_t>(i)] = 0xff;
    f[static_cast<std::size_t>(6 + i)] = static_cast<std::uint8_t>(0x02 + i);
  }
  store_be16(f.data() + 12, 0x88b5);
  store_be32(f.data() + 14, seq);
  for (std::size_t i = 18; i < len; ++i) f[i] = static_cast<std::uint8_t>(seq * 7 + i);
  return f;
}

}  // namespace esock::tcp::dpdk::test
