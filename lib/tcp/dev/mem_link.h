// Two Devices joined back to back in memory, for tests and the in-process pipe: what a()
// transmits, b() receives, and vice versa. Deterministic: no clock, no randomness, no
// threads (both ends are polled by the same core).
//
// Delivery happens on the sender's tx_flush(), not in tx(): that is when a NIC's doorbell
// rings, so a stack that forgets to flush sees the same silence it would see on DPDK.
// tx() copies the frame into a HeapBuf and releases nothing of the caller's (device.h:
// pieces without a ref are copied; pieces with one are copied too, so the caller's refs are
// never retained past tx()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>

#include "tcp/dev/device.h"

namespace esock::tcp {

struct MemLinkConfig {
  MacAddr mac_a{{0x02, 0x00, 0x00, 0x00, 0x00, 0x0a}};
  MacAddr mac_b{{0x02, 0x00, 0x00, 0x00, 0x00, 0x0b}};
  // What both ends report. Offloads are off by default; when tx_ip_csum/tx_l4_csum are
  // on, the link completes the checksums the stack left to it (as a NIC would). TSO is
  // not emulated: a frame longer than mtu + 14 is refused whatever caps.tso says.
  DeviceCaps caps{};
  std::size_t tx_queue = 256;  // frames tx() may queue before tx_flush()
  std::size_t rx_queue = 256;  // frames waiting in a receiver; more are dropped
};

// Per-endpoint counters beyond DeviceStats.
struct MemLinkStats {
  std::uint64_t rx_overflow = 0;  // delivered while our rx queue was full: dropped
  std::uint64_t tx_invalid = 0;   // refused: too long, too many pieces, or bad offload
};

class MemLink {
 public:
  explicit MemLink(const MemLinkConfig& config = {});
  MemLink(const MemLink&) = delete;
  MemLink& operator=(const MemLink&) = delete;

  Device& a() { return a_; }
  Device& b() { return b_; }
  MemLinkStats link_stats_a() const { return a_.link_stats(); }
  MemLinkStats link_stats_b() const { return b_.link_stats(); }
  // Frames sitting in a queue: tx not yet flushed, rx not yet read.
  std::size_t pending_tx_a() const { return a_.pending_tx(); }
  std::size_t pending_tx_b() const { return b_.pending_tx(); }
  std::size_t pending_rx_a() const { return a_.pending_rx(); }
  std::size_t pending_rx_b() const { return b_.pending_rx(); }

 private:
  class End final : public Device {
   public:
    End(const MemLinkConfig& config, MacAddr mac) : config_(config), mac_(mac) {}
    void connect(End* peer) { peer_ = peer; }

    MacAddr mac() const override { return mac_; }
    DeviceCaps caps() const override;
    std::size_t rx_burst(std::span<RxFrame> out) override;
    bool tx(const TxFrame& frame) override;
    void tx_flush() override;
    DeviceStats stats() const override { return stats_; }

    MemLinkStats link_stats() const { return link_stats_; }
    std::size_t pending_tx() const { return tx_q_.size(); }
    std::size_t pending_rx() const { return rx_q_.size(); }

   private:
    void deliver(RxFrame frame);

    const MemLinkConfig& config_;
    MacAddr mac_;
    End* peer_ = nullptr;
    std::deque<RxFrame> tx_q_;  // copies waiting for tx_flush()
    std::deque<RxFrame> rx_q_;
    DeviceStats stats_;
    MemLinkStats link_stats_;
  };

  MemLinkConfig config_;
  End a_;
  End b_;
};

}  // namespace esock::tcp
