// What DpdkDevice keeps in each mbuf's private area (the bytes between struct rte_mbuf and
// its buffer, sized by rte_pktmbuf_pool_create's priv_size): the BufHolder that makes a
// received mbuf a BufRef target, and, when the mbuf is a tx segment carrying an attached
// payload piece, the external buffer's shared info plus the BufRef that pins the piece.
// Keeping them here means neither rx nor tx allocates per frame. Internal to lib/tcp/dpdk.
#pragma once

#include <rte_mbuf.h>

#include <new>

#include "base/buf_ref.h"

namespace esock::tcp::dpdk {

struct MbufSlot {
  BufHolder holder;                 // rx: counts the RxFrame refs to this mbuf
  rte_mbuf_ext_shared_info shinfo;  // tx: the attached piece's refcount and free callback
  alignas(BufRef) unsigned char pin[sizeof(BufRef)];  // tx: placement-new'd BufRef
};

inline constexpr std::uint16_t mbuf_slot_size =
    static_cast<std::uint16_t>(RTE_ALIGN_CEIL(sizeof(MbufSlot), RTE_MBUF_PRIV_ALIGN));

// nullptr when the mbuf's pool has no room for a slot (an mbuf from a foreign pool, e.g.
// another application's on a shared net_ring).
inline MbufSlot* slot_of(rte_mbuf* m) {
  if (rte_pktmbuf_priv_size(m->pool) < sizeof(MbufSlot)) return nullptr;
  return static_cast<MbufSlot*>(rte_mbuf_to_priv(m));
}

// The holder is the slot's first member and the slot starts right after struct rte_mbuf
// (rte_mbuf_to_priv), so the mbuf is found by subtraction.
inline rte_mbuf* mbuf_of(BufHolder* h) {
  static_assert(offsetof(MbufSlot, holder) == 0);
  return reinterpret_cast<rte_mbuf*>(reinterpret_cast<char*>(h) - sizeof(rte_mbuf));
}

// Makes `m`'s holder the target of a new BufRef; the last ref frees the mbuf (and, for a
// chain, every segment).
inline BufRef rx_ref(MbufSlot* s) {
  new (&s->holder) BufHolder{0, [](BufHolder* h) { rte_pktmbuf_free(mbuf_of(h)); }};
  return BufRef(&s->holder);
}

// Pins `ref` in the slot and prepares the shared info whose callback unpins it. DPDK calls
// free_cb when the external buffer's refcount drops to zero, i.e. when the PMD (or whoever
// holds the segment last) frees it; that happens exactly once per attachment.
inline rte_mbuf_ext_shared_info* pin_piece(MbufSlot* s, const BufRef& ref) {
  new (s->pin) BufRef(ref);
  s->shinfo.free_cb = [](void*, void* opaque) {
    auto* slot = static_cast<MbufSlot*>(opaque);
    std::launder(reinterpret_cast<BufRef*>(slot->pin))->~BufRef();
  };
  s->shinfo.fcb_opaque = s;
  rte_mbuf_ext_refcnt_set(&s->shinfo, 1);
  return &s->shinfo;
}

}  // namespace esock::tcp::dpdk
