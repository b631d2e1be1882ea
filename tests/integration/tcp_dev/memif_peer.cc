// The child side of the memif integration test: its own EAL (own lcore and file prefix),
// a net_memif client on the given socket, echoing every frame back until a stop frame.
// The echo is zero-copy: the received mbuf's bytes go back out attached as an external
// buffer, pinned by the RxFrame's ref, so both directions of DpdkDevice's buffer handling
// are exercised across a real PMD boundary.
//
// usage: tcp_dev_memif_peer <socket path> <lcore> <timeout seconds>
// exit: 0 after a stop frame, 1 on setup failure, 2 on timeout.
#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/endian.h"
#include "base/steady_clock.h"
#include "tcp/dev/idle_backoff.h"
#include "tcp/dpdk/dpdk_device.h"
#include "tcp/dpdk/eal.h"

using namespace esock;
using namespace esock::tcp;

namespace {

constexpr std::uint16_t ethertype_stop = 0x88b6;

int run(const std::string& socket, unsigned core, int timeout_s) {
  std::string err;
  dpdk::EalOptions o;
  o.core = core;
  o.vdevs = {"net_memif0,role=client,socket=" + socket + ",socket-abstract=no,bsize=2048"};
  auto eal = dpdk::Eal::init(o, &err);
  if (!eal) {
    std::fprintf(stderr, "peer: %s\n", err.c_str());
    return 1;
  }
  const int port = dpdk::Eal::find_port("net_memif0");
  dpdk::DpdkDeviceConfig c;
  c.copy_below = 0;  // attach every echoed payload
  auto dev = port < 0 ? nullptr : dpdk::DpdkDevice::open(static_cast<std::uint16_t>(port), c, &err);
  if (!dev) {
    std::fprintf(stderr, "peer: %s\n", err.c_str());
    return 1;
  }
  SteadyClock clock;
  const Instant end = clock.now() + std::chrono::seconds(timeout_s);
  if (!dev->wait_link_up(std::chrono::seconds(timeout_s))) {
    std::fprintf(stderr, "peer: link down\n");
    return 2;
  }
  IdleBackoff idle;
  std::array<RxFrame, 32> rx;
  std::uint64_t echoed = 0;
  bool stop = false;
  while (!stop) {
    const std::size_t n = dev->rx_burst(rx);
    for (std::size_t i = 0; i < n; ++i) {
      const bytes_view f = rx[i].data;
      if (f.size() >= 14 && load_be16(f.data() + 12) == ethertype_stop) {
        stop = true;
      } else if (f.size() > 14) {
        TxPiece piece{f.subspan(14), rx[i].ref};
        TxFrame t{f.first(14), std::span<const TxPiece>(&piece, 1), {}};
        if (dev->tx(t)) ++echoed;
      }
      rx[i] = RxFrame{};
    }
    dev->tx_flush();
    idle.poll_done(n > 0);
    if (clock.now() >= end) {
      std::fprintf(stderr, "peer: timeout after %llu frames\n",
                   static_cast<unsigned long long>(echoed));
      return 2;
    }
  }
  // memif: the side that stops polling closes first (MACHINE-NOTES.md, pitfall 1c); the
  // parent waits for our exit before it closes its port.
  const auto st = dev->dpdk_stats();
  std::printf("peer: echoed %llu frames, attached %llu, dropped %llu\n",
              static_cast<unsigned long long>(echoed),
              static_cast<unsigned long long>(st.tx_attached),
              static_cast<unsigned long long>(dev->stats().tx_dropped));
  dev.reset();
  eal.reset();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s <socket> <lcore> <timeout s>\n", argv[0]);
    return 1;
  }
  return run(argv[1], static_cast<unsigned>(std::atoi(argv[2])), std::atoi(argv[3]));
}
