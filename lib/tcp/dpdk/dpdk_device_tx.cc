// DpdkDevice's transmit side: building mbuf chains from TxFrames and bursting them.
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <cstring>

#include "tcp/dpdk/dpdk_device.h"
#include "tcp/dpdk/mbuf_slot.h"

namespace esock::tcp::dpdk {

bool DpdkDevice::append_copy(rte_mbuf* m, rte_mbuf** last, bytes_view data) {
  while (!data.empty()) {
    // Attached segments are read-only to us (the bytes belong to the caller), so copies
    // always go into a direct mbuf.
    std::size_t room = RTE_MBUF_HAS_EXTBUF(*last) ? 0 : rte_pktmbuf_tailroom(*last);
    if (room == 0) {
      if (!multi_seg_ || m->nb_segs == UINT16_MAX) return false;
      rte_mbuf* seg = rte_pktmbuf_alloc(pool_);
      if (!seg) return false;
      (*last)->next = seg;
      *last = seg;
      ++m->nb_segs;
      room = rte_pktmbuf_tailroom(seg);
    }
    const auto n = static_cast<std::uint16_t>(std::min(room, data.size()));
    std::memcpy(rte_pktmbuf_mtod_offset(*last, std::uint8_t*, (*last)->data_len), data.data(), n);
    (*last)->data_len = static_cast<std::uint16_t>((*last)->data_len + n);
    m->pkt_len += n;
    data = data.subspan(n);
  }
  return true;
}

bool DpdkDevice::append_attached(rte_mbuf* m, rte_mbuf** last, const TxPiece& piece) {
  bytes_view data = piece.data;
  while (!data.empty()) {
    if (m->nb_segs == UINT16_MAX) return false;
    rte_mbuf* seg = rte_pktmbuf_alloc(pool_);
    if (!seg) return false;
    MbufSlot* s = slot_of(seg);
    // buf_len is 16 bits: a long piece becomes several segments, each pinning the piece.
    const auto n = static_cast<std::uint16_t>(std::min<std::size_t>(data.size(), UINT16_MAX));
    auto* addr = const_cast<std::uint8_t*>(data.data());  // the PMD only reads tx buffers
    // IOVA is VA under --no-huge (Attach::automatic requires it); with Attach::always on a
    // PA-mode EAL only pointer-passing PMDs (net_ring) may see these segments.
    const rte_iova_t iova = rte_eal_iova_mode() == RTE_IOVA_VA
                                ? static_cast<rte_iova_t>(reinterpret_cast<std::uintptr_t>(addr))
                                : RTE_BAD_IOVA;
    rte_pktmbuf_attach_extbuf(seg, addr, iova, n, pin_piece(s, piece.ref));
    seg->data_len = n;
    (*last)->next = seg;
    *last = seg;
    ++m->nb_segs;
    m->pkt_len += n;
    data = data.subspan(n);
    ++dstats_.tx_attached;
  }
  return true;
}

rte_mbuf* DpdkDevice::build(const TxFrame& frame) {
  rte_mbuf* m = rte_pktmbuf_alloc(pool_);
  if (!m) return nullptr;
  rte_mbuf* last = m;
  bool ok = append_copy(m, &last, frame.head);
  for (const TxPiece& p : frame.payload) {
    if (!ok) break;
    if (attach_ && p.ref && p.data.size() >= copy_below_) {
      ok = append_attached(m, &last, p);
    } else {
      ok = append_copy(m, &last, p.data);
      dstats_.tx_copied_bytes += p.data.size();
    }
  }
  if (!ok) {
    // Frees every segment; attached ones run their free callback, so the caller's refs
    // end where they started (device.h: a refused frame leaves them untouched).
    rte_pktmbuf_free(m);
    return nullptr;
  }
  const TxOffload& o = frame.offload;
  if (o.ip_csum || o.l4_csum || o.tso_segsz) {
    // What the PMD needs to find the headers (rte_mbuf.h, "TX offload" flags); the packed
    // helper avoids assigning to rte_mbuf's bit-fields one by one.
    m->tx_offload = rte_mbuf_tx_offload(o.l2_len, o.l3_len, o.l4_len, o.tso_segsz, 0, 0, 0);
    m->ol_flags |= RTE_MBUF_F_TX_IPV4;
    if (o.ip_csum) m->ol_flags |= RTE_MBUF_F_TX_IP_CKSUM;
    if (o.l4_csum) m->ol_flags |= RTE_MBUF_F_TX_TCP_CKSUM;
    if (o.tso_segsz) m->ol_flags |= RTE_MBUF_F_TX_TCP_SEG;
  }
  return m;
}

bool DpdkDevice::tx(const TxFrame& frame) {
  const TxOffload& o = frame.offload;
  if ((o.ip_csum && !caps_.tx_ip_csum) || (o.l4_csum && !caps_.tx_l4_csum) ||
      (o.tso_segsz && !caps_.tso) || frame.payload.size() > caps_.max_tx_pieces) {
    ++dstats_.tx_invalid;
    ++stats_.tx_dropped;
    return false;
  }
  // The burst array is the "ring" tx() fills: when full, hand it to the PMD now so the
  // order of frames on the wire is the order of tx() calls. If the PMD's ring is full too,
  // refuse: that is the back-pressure TCP needs (it stops sending and tries again after
  // the next flush) instead of frames silently dropped after tx() said yes.
  if (n_pending_ == tx_batch_) burst();
  if (n_pending_ == tx_batch_) {
    ++stats_.tx_dropped;
    return false;
  }
  rte_mbuf* m = build(frame);
  if (!m) {
    ++dstats_.tx_no_mbuf;
    ++stats_.tx_dropped;
    return false;
  }
  pending_[n_pending_++] = m;
  return true;
}

void DpdkDevice::burst() {
  if (n_pending_ == 0) return;
  std::uint16_t sent = rte_eth_tx_burst(port_, queue_, pending_.get(), n_pending_);
  // What the PMD did not take stays queued, in order, for the next flush: a full
  // descriptor ring (memif's peer busy) is back-pressure, not loss.
  stats_.tx_frames += sent;
  for (std::uint16_t i = sent; i < n_pending_; ++i) pending_[i - sent] = pending_[i];
  n_pending_ = static_cast<std::uint16_t>(n_pending_ - sent);
}

void DpdkDevice::tx_flush() {
  burst();
}

}  // namespace esock::tcp::dpdk
