#include "tcp/dev/mem_link.h"

#include <utility>

#include "tcp/dev/frame_copy.h"
#include "tcp/dev/inet_csum.h"

namespace esock::tcp {

MemLink::MemLink(const MemLinkConfig& config)
    : config_(config), a_(config_, config_.mac_a), b_(config_, config_.mac_b) {
  // TSO is never emulated (see MemLinkConfig::caps): do not advertise it.
  config_.caps.tso = false;
  a_.connect(&b_);
  b_.connect(&a_);
}

DeviceCaps MemLink::End::caps() const {
  return config_.caps;
}

bool MemLink::End::tx(const TxFrame& frame) {
  const DeviceCaps& caps = config_.caps;
  const std::size_t len = frame_length(frame);
  const bool bad_offload = (frame.offload.ip_csum && !caps.tx_ip_csum) ||
                           (frame.offload.l4_csum && !caps.tx_l4_csum) ||
                           frame.offload.tso_segsz != 0;
  // The largest frame is an MTU-sized IPv4 datagram plus the 14-octet Ethernet header
  // (no FCS, no VLAN tag: the stack never emits one).
  if (len > std::size_t{caps.mtu} + 14 || frame.payload.size() > caps.max_tx_pieces ||
      bad_offload) {
    ++link_stats_.tx_invalid;
    ++stats_.tx_dropped;
    return false;
  }
  if (tx_q_.size() >= config_.tx_queue) {
    ++stats_.tx_dropped;
    return false;
  }
  FlatFrame flat = flatten(frame);
  if (frame.offload.ip_csum || frame.offload.l4_csum)
    fill_checksums(flat.data, frame.offload.l2_len, frame.offload.ip_csum, frame.offload.l4_csum);
  RxFrame copy;
  copy.data = flat.data;
  copy.ref = std::move(flat.ref);
  tx_q_.push_back(std::move(copy));
  ++stats_.tx_frames;
  return true;
}

void MemLink::End::tx_flush() {
  while (!tx_q_.empty()) {
    peer_->deliver(std::move(tx_q_.front()));
    tx_q_.pop_front();
  }
}

void MemLink::End::deliver(RxFrame frame) {
  if (rx_q_.size() >= config_.rx_queue) {
    ++link_stats_.rx_overflow;  // the ref drops here, freeing the copy
    return;
  }
  rx_q_.push_back(std::move(frame));
}

std::size_t MemLink::End::rx_burst(std::span<RxFrame> out) {
  std::size_t n = 0;
  while (n < out.size() && !rx_q_.empty()) {
    out[n++] = std::move(rx_q_.front());
    rx_q_.pop_front();
  }
  stats_.rx_frames += n;
  return n;
}

}  // namespace esock::tcp
