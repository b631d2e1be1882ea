// Interface: ARP replies and learning (RFC 826 "Packet Reception"), requests, and the
// frames that waited for resolution.
#include <array>

#include "base/endian.h"
#include "tcp/net/interface_impl.h"

namespace esock::tcp {

void Interface::Impl::on_arp(Instant now, bytes_view packet) {
  ArpView a;
  if (ArpView::check(packet, a) != ArpParseError::none) return drop();
  const ArpOp op = a.op();
  const MacAddr sha = a.sha();
  const Ipv4Addr spa = a.spa();
  if (op == ArpOp::request) ++stats.arp_requests_rx;

  // Never learn a broadcast/multicast or our own MAC, an unspecified sender (RFC 5227
  // probes use 0.0.0.0) or one claiming our address: those would misdirect our traffic.
  const bool learnable = !sha.is_multicast() && sha != mac && spa.v != 0 && spa != cfg.ip;
  released.clear();
  // RFC 826: update an existing entry from any ARP packet (the merge flag)...
  const bool merged = learnable && arp.merge(spa, sha, now, &released);
  if (a.tpa() == cfg.ip) {
    // ...and add the sender only when the packet is aimed at us: we are likely to talk to
    // it, and strangers' chatter must not fill the table.
    if (learnable && !merged && !arp.insert(spa, sha, now)) ++stats.arp_table_full;
    if (op == ArpOp::request) send_arp(ArpOp::reply, sha, sha, spa);
  }
  release(released, sha);
}

void Interface::Impl::send_arp(ArpOp op, const MacAddr& eth_dst, const MacAddr& tha, Ipv4Addr tpa) {
  // 14 + 28 octets padded to Ethernet's 60-octet minimum (without FCS), so devices that
  // do not pad short frames still send a valid one.
  std::array<std::uint8_t, 60> f{};
  emit_ethernet({eth_dst, mac, ethertype::arp}, f);
  emit_arp({op, mac, cfg.ip, tha, tpa}, mut_bytes(f).subspan(eth_header_len));
  TxFrame tx;
  tx.head = f;
  tx.offload.l3_len = 0;
  if (!dev.tx(tx)) {
    ++stats.tx_device_full;
    return;
  }
  ++(op == ArpOp::request ? stats.arp_requests_tx : stats.arp_replies_tx);
}

void Interface::Impl::release(std::vector<PendingFrame>& frames, const MacAddr& to) {
  for (PendingFrame& p : frames) {
    store_mac(p.bytes.data() + eth_off_dst, to);
    const bytes_view all(p.bytes);
    // The copy is ours until tx() returns, so the device copies it (no ref).
    const TxPiece rest{all.subspan(p.head_len), BufRef()};
    TxFrame tx;
    tx.head = all.first(p.head_len);
    tx.payload = std::span<const TxPiece>(&rest, rest.data.empty() ? 0 : 1);
    tx.offload = p.offload;
    if (dev.tx(tx))
      ++stats.tcp_tx;
    else
      ++stats.tx_device_full;
  }
  frames.clear();
}

}  // namespace esock::tcp
