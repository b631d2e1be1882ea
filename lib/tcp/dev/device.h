// The device interface under lib/tcp's interface layer: one Ethernet port that receives
// and transmits whole frames (no FCS). Implementations: an in-memory link for tests
// (mem_link.h), DPDK ethdev (dpdk/dpdk_device.h, the only file that includes DPDK), and
// wrappers that work on any device (fault injector, pcap writer).
//
// Ownership: a received frame's bytes stay valid while its BufRef lives, so the stack can
// hand payloads up without copying. A transmitted frame's header is copied by the device;
// payload pieces that carry a BufRef may be attached instead of copied (the device then
// holds its own reference until the hardware is done with the frame); pieces without a
// ref are copied before tx() returns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "base/buf_ref.h"
#include "base/bytes.h"
#include "tcp/wire/addr.h"

namespace esock::tcp {

// Receive checksum verdicts a device may attach to a frame (0: not checked, verify in
// software).
namespace rx_csum {
inline constexpr std::uint8_t ip_good = 0x01;
inline constexpr std::uint8_t ip_bad = 0x02;
inline constexpr std::uint8_t l4_good = 0x04;
inline constexpr std::uint8_t l4_bad = 0x08;
}  // namespace rx_csum

struct RxFrame {
  bytes_view data;  // Ethernet header onwards
  BufRef ref;       // keeps data alive
  std::uint8_t csum = 0;
};

struct TxPiece {
  bytes_view data;
  BufRef ref;  // empty: the device copies the bytes before tx() returns
};

// Offload requests for one frame. When ip_csum/l4_csum are set, the stack leaves the IPv4
// checksum zero and puts the pseudo-header sum in the TCP checksum field (the convention
// NICs and DPDK use); the device must complete them. Only set what caps() offers.
struct TxOffload {
  std::uint8_t l2_len = 14;
  std::uint8_t l3_len = 20;
  std::uint8_t l4_len = 0;
  bool ip_csum = false;
  bool l4_csum = false;
  std::uint16_t tso_segsz = 0;  // 0: no segmentation offload
};

struct TxFrame {
  bytes_view head;                   // Ethernet + IPv4 + TCP headers
  std::span<const TxPiece> payload;  // appended after head, in order
  TxOffload offload;
};

struct DeviceCaps {
  std::uint16_t mtu = 1500;  // largest IPv4 datagram
  bool tx_ip_csum = false;
  bool tx_l4_csum = false;
  bool rx_csum = false;  // RxFrame::csum may carry verdicts
  bool tso = false;
  std::uint16_t max_tx_pieces = 8;  // payload pieces one frame may carry
};

struct DeviceStats {
  std::uint64_t rx_frames = 0;
  std::uint64_t tx_frames = 0;
  std::uint64_t tx_dropped = 0;  // tx() refused (ring full)
};

class Device {
 public:
  virtual ~Device() = default;
  virtual MacAddr mac() const = 0;
  virtual DeviceCaps caps() const = 0;
  // Non-blocking: fills up to out.size() frames, returns how many.
  virtual std::size_t rx_burst(std::span<RxFrame> out) = 0;
  // Queues one frame. false: no room (nothing was queued, the caller's refs are untouched);
  // TCP treats that as loss.
  virtual bool tx(const TxFrame& frame) = 0;
  // Hands queued frames to the wire. Called once per poll-loop iteration.
  virtual void tx_flush() = 0;
  virtual DeviceStats stats() const = 0;
};

}  // namespace esock::tcp
