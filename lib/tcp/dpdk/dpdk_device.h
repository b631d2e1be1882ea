// A Device over one queue pair of a DPDK ethdev port (one rx queue, one tx queue, its own
// mempool): open() gives the port's only one, open_queues() one per queue, for one stack
// per queue (flow_hash.h says which flows a queue carries). This header includes no DPDK
// header; dpdk_device.cc is where mbufs live.
//
// Receive is zero-copy: every mbuf of the device's pool carries, in its private area, an
// esock::BufHolder, so a received single-segment mbuf becomes an RxFrame whose BufRef frees
// the mbuf when the stack lets go, with no allocation. (Chained mbufs are copied into a
// HeapBuf: the stack wants one contiguous frame.)
//
// Transmit copies the head into a fresh mbuf; each payload piece that carries a BufRef and
// is at least copy_below octets long is attached as an external buffer (no copy) to a
// segment mbuf whose private area holds the rte_mbuf_ext_shared_info and a BufRef we took;
// DPDK calls our free callback when the PMD is done with the segment, which drops that ref
// exactly once. Short pieces are copied (an mbuf header per 40-byte piece costs more than
// the copy). Frames are batched and handed to the PMD by tx_flush().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/time.h"
#include "tcp/dev/device.h"

struct rte_mbuf;
struct rte_mempool;

namespace esock::tcp::dpdk {

enum class Attach {
  automatic,  // when the PMD offers multi-segment tx and IOVA is VA (no DMA mapping needed)
  always,     // even when the PMD does not advertise multi-segment tx (net_ring passes
              // mbuf pointers and does not care)
  never,      // copy every piece
};

struct DpdkDeviceConfig {
  std::uint16_t rx_desc = 1024;
  std::uint16_t tx_desc = 1024;
  std::uint32_t pool_mbufs = 8191;  // 2^n - 1 is what rte_mempool sizes best
  std::uint16_t data_room = 0;      // 0: RTE_MBUF_DEFAULT_BUF_SIZE (2048 + headroom)
  std::uint16_t mtu = 0;            // 0: keep the port's MTU
  // Use `mtu` even where the PMD refuses to configure it but passes such frames: net_memif
  // in DPDK 22.11 reports a 1514-octet maximum yet carries frames up to its buffer size
  // (the bsize devarg). Both ends must be able to take them.
  bool mtu_beyond_port = false;
  std::size_t copy_below = 256;  // payload pieces shorter than this are copied
  Attach attach = Attach::automatic;
  bool offloads = true;  // enable (and advertise in caps()) what the PMD offers
  bool promiscuous = false;
  std::uint16_t tx_batch = 32;  // frames queued before tx() flushes on its own
  // The port's MAC address; all zero keeps the PMD's (two net_ring ports of one process
  // get the same one, which ARP rightly refuses to learn).
  MacAddr mac{};
  // open_queues(): queue pairs. Where the PMD hashes (RSS), it hashes with the symmetric
  // key of flow_hash.h, so a flow's two directions land on the same queue index; memif
  // and net_ring carry each frame on the queue its sender chose.
  std::uint16_t queues = 1;
};

struct DpdkDeviceStats {
  std::uint64_t rx_copied = 0;         // chained rx mbufs copied into a HeapBuf
  std::uint64_t tx_attached = 0;       // payload segments attached as external buffers
  std::uint64_t tx_copied_bytes = 0;   // payload octets copied
  std::uint64_t tx_no_mbuf = 0;        // tx() refused: pool empty
  std::uint64_t tx_invalid = 0;        // tx() refused: too long / offload not offered
  std::uint64_t tx_burst_dropped = 0;  // accepted by tx(), refused by the PMD twice
};

class DpdkDevice final : public Device {
 public:
  // Configures and starts `port` with its own mempool. nullptr with *error on failure.
  static std::unique_ptr<DpdkDevice> open(std::uint16_t port, const DpdkDeviceConfig& config,
                                          std::string* error);
  // Configures and starts `port` with config.queues queue pairs: device i polls rx queue i
  // and sends on tx queue i, each with its own pool, so each can be driven by its own
  // thread. Empty with *error on failure.
  static std::vector<std::unique_ptr<DpdkDevice>> open_queues(std::uint16_t port,
                                                              const DpdkDeviceConfig& config,
                                                              std::string* error);
  // Drops unsent frames; the last device of a port stops and closes it and frees the pools.
  // Every RxFrame ref must be gone by then; if mbufs are still out (e.g. in a net_ring
  // peer's ring), a pool is leaked rather than freed under them.
  ~DpdkDevice() override;
  DpdkDevice(const DpdkDevice&) = delete;
  DpdkDevice& operator=(const DpdkDevice&) = delete;

  MacAddr mac() const override { return mac_; }
  DeviceCaps caps() const override { return caps_; }
  std::size_t rx_burst(std::span<RxFrame> out) override;
  bool tx(const TxFrame& frame) override;
  void tx_flush() override;
  DeviceStats stats() const override { return stats_; }

  std::uint16_t port() const { return port_; }
  std::uint16_t queue() const { return queue_; }
  const DpdkDeviceStats& dpdk_stats() const { return dstats_; }
  bool link_up() const;
  // Polls the link state (every 10 ms) until up or `timeout`; memif needs its peer first.
  bool wait_link_up(Duration timeout) const;
  // mbufs of our pool not currently in use (tests: rx refs hold mbufs).
  unsigned pool_available() const;
  unsigned pool_size() const;
  bool attaches() const { return attach_; }

 private:
  struct Port;  // the started port and every queue's pool, shared by its devices
  DpdkDevice() = default;
  bool setup(std::uint16_t port, const DpdkDeviceConfig& config, std::string* error);
  void share_port(const DpdkDevice& first, std::uint16_t queue);
  rte_mbuf* build(const TxFrame& frame);
  bool append_copy(rte_mbuf* m, rte_mbuf** last, bytes_view data);
  bool append_attached(rte_mbuf* m, rte_mbuf** last, const TxPiece& piece);
  void burst();

  std::uint16_t port_ = 0;
  std::uint16_t queue_ = 0;
  std::shared_ptr<Port> shared_;
  rte_mempool* pool_ = nullptr;  // this queue's (shared_ owns it)
  MacAddr mac_;
  DeviceCaps caps_;
  bool attach_ = false;
  bool multi_seg_ = false;
  bool rx_csum_ = false;
  std::size_t copy_below_ = 256;
  std::uint16_t tx_batch_ = 32;
  std::unique_ptr<rte_mbuf*[]> pending_;
  std::uint16_t n_pending_ = 0;
  DeviceStats stats_;
  DpdkDeviceStats dstats_;
};

}  // namespace esock::tcp::dpdk
