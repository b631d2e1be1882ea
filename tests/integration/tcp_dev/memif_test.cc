// DpdkDevice over net_memif between two processes: this one is the memif server, the child
// (memif_peer.cc, its own EAL and lcore) the client that echoes every frame back. memif
// cannot be tested with two threads of one EAL, hence fork + exec.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <deque>
#include <filesystem>

#include "base/steady_clock.h"
#include "eal_env.h"
#include "tcp/dpdk/dpdk_device.h"

extern char** environ;

namespace esock::tcp::dpdk {
namespace {

using test::CountingHolder;
using test::eal;
using test::test_frame;

constexpr int timeout_s = 60;

// Waits for the child with a bounded poll; kills it when the time is up.
int wait_child(pid_t pid, std::chrono::seconds limit) {
  SteadyClock clock;
  const Instant end = clock.now() + limit;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (clock.now() >= end) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    ::usleep(10'000);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Whatever happens to the test (an ASSERT returns early), the child does not outlive it,
// and neither do the memif socket file nor the child's EAL runtime directory (a killed
// child cannot remove it; its prefix is esock-<pid>-0, see Eal::init).
struct Cleanup {
  std::string sock;
  pid_t child = 0;
  ~Cleanup() {
    if (child > 0 && ::waitpid(child, nullptr, WNOHANG) == 0) {
      ::kill(child, SIGKILL);
      ::waitpid(child, nullptr, 0);
    }
    std::error_code ec;
    if (child > 0)
      std::filesystem::remove_all("/var/run/dpdk/esock-" + std::to_string(child) + "-0", ec);
    std::filesystem::remove(sock, ec);
  }
};

constexpr std::uint32_t hello_seq = 0xffffffff;

std::uint32_t seq_of(bytes_view f) {
  return load_be32(f.data() + 14);
}

// Link up is not yet rings ready: memif's first bursts after link up can be refused. Send
// a hello every 10 ms until one comes back (bounded), so the counted exchange starts on a
// working pipe.
bool handshake(DpdkDevice& dev, std::chrono::seconds limit) {
  SteadyClock clock;
  const Instant end = clock.now() + limit;
  const auto hello = test_frame(hello_seq, 60);
  std::array<RxFrame, 8> rx;
  while (clock.now() < end) {
    TxFrame t;
    t.head = hello;
    dev.tx(t);
    dev.tx_flush();
    const Instant next = clock.now() + std::chrono::milliseconds(10);
    while (clock.now() < next) {
      const std::size_t n = dev.rx_burst(rx);
      bool echoed = false;
      for (std::size_t i = 0; i < n; ++i) echoed |= seq_of(rx[i].data) == hello_seq;
      rx = {};
      if (echoed) return true;
    }
  }
  return false;
}

TEST(DpdkMemif, TenThousandFramesEchoedAcrossProcesses) {
  (void)eal();
  const std::string sock = "/tmp/esock-memif-" + std::to_string(::getpid()) + ".sock";
  std::filesystem::remove(sock);  // a crashed server leaves it behind (MACHINE-NOTES.md)
  Cleanup cleanup{sock};
  std::string err;
  const int port = eal().add_vdev(
      "net_memif0,role=server,socket=" + sock + ",socket-abstract=no,bsize=2048", &err);
  ASSERT_GE(port, 0) << err;
  DpdkDeviceConfig c;
  c.copy_below = 0;  // attach every payload piece, however short
  auto dev = DpdkDevice::open(static_cast<std::uint16_t>(port), c, &err);
  ASSERT_TRUE(dev) << err;

  const std::string peer = ESOCK_MEMIF_PEER, core = "1", secs = std::to_string(timeout_s);
  char* argv[] = {const_cast<char*>(peer.c_str()), const_cast<char*>(sock.c_str()),
                  const_cast<char*>(core.c_str()), const_cast<char*>(secs.c_str()), nullptr};
  pid_t pid = 0;
  ASSERT_EQ(::posix_spawn(&pid, peer.c_str(), nullptr, nullptr, argv, environ), 0);
  cleanup.child = pid;
  ASSERT_TRUE(dev->wait_link_up(std::chrono::seconds(20))) << "memif peer never connected";
  ASSERT_TRUE(handshake(*dev, std::chrono::seconds(20))) << "no echo from the memif peer";

  // Payload pieces are attached (memif copies them into its shared rings and frees the
  // segment in tx_burst); one holder counts every pin.
  CountingHolder pins;
  constexpr std::uint32_t total = 10000;
  constexpr std::uint32_t window = 128;  // well under memif's 1024-slot rings: no drops
  std::uint32_t sent = 0, got = 0, bad = 0;
  const std::uint64_t dropped_before = dev->dpdk_stats().tx_burst_dropped;
  std::deque<std::vector<std::uint8_t>> inflight;
  std::array<RxFrame, 32> rx;
  SteadyClock clock;
  const Instant end = clock.now() + std::chrono::seconds(timeout_s);
  while (got < total && clock.now() < end) {
    while (sent < total && sent - got < window) {
      inflight.push_back(test_frame(sent, 60 + (sent * 131) % 1455));
      const auto& f = inflight.back();
      TxPiece piece{bytes_view(f).subspan(14), BufRef(&pins)};
      TxFrame t{bytes_view(f).first(14), std::span<const TxPiece>(&piece, 1), {}};
      ASSERT_TRUE(dev->tx(t));
      ++sent;
    }
    dev->tx_flush();
    const std::size_t n = dev->rx_burst(rx);
    for (std::size_t i = 0; i < n; ++i) {
      if (seq_of(rx[i].data) == hello_seq) {  // a late echo of the handshake
        rx[i] = RxFrame{};
        continue;
      }
      const auto& want = inflight.front();
      if (!std::equal(want.begin(), want.end(), rx[i].data.begin(), rx[i].data.end())) ++bad;
      inflight.pop_front();
      rx[i] = RxFrame{};
      ++got;
    }
  }
  EXPECT_EQ(got, total);
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(dev->dpdk_stats().tx_burst_dropped - dropped_before, 0u);
  EXPECT_GE(dev->dpdk_stats().tx_attached, total);
  EXPECT_EQ(pins.refs, 0u) << "every attached piece was released";

  // Ordered shutdown: tell the child to stop, stop polling, let it close first.
  auto stop = test_frame(0, 60);
  store_be16(stop.data() + 12, 0x88b6);
  TxFrame t;
  t.head = stop;
  ASSERT_TRUE(dev->tx(t));
  dev->tx_flush();
  EXPECT_EQ(wait_child(pid, std::chrono::seconds(20)), 0);
  dev.reset();
  EXPECT_TRUE(eal().remove_vdev("net_memif0", &err)) << err;
}

}  // namespace
}  // namespace esock::tcp::dpdk
