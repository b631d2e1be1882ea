// Interface: routing and TCP transmit (headers, checksums or their offload, ARP).
#include <array>
#include <cstring>

#include "base/endian.h"
#include "tcp/net/interface_impl.h"
#include "tcp/wire/checksum.h"

namespace esock::tcp {

namespace {
constexpr std::size_t tcp_csum_off = 16;
constexpr std::size_t max_head = eth_header_len + ipv4_min_header + tcp_max_header;
}  // namespace

std::optional<Ipv4Addr> Interface::Impl::next_hop(Ipv4Addr dst) const {
  // Never unicast TCP to the unspecified, limited broadcast, multicast or class E ranges,
  // nor to ourselves (there is no loopback path through the device).
  if (dst.v == 0 || (dst.v >> 28) >= 0xe || dst == cfg.ip) return std::nullopt;
  if ((dst.v & mask) == (cfg.ip.v & mask)) {
    // The subnet's broadcast address (RFC 922) is not a host (except on /31 and /32).
    if (mask < 0xfffffffeu && (dst.v | mask) == 0xffffffffu) return std::nullopt;
    return dst;  // on-link
  }
  if (cfg.gateway.v == 0) return std::nullopt;
  return cfg.gateway;
}

bool Interface::Impl::send_tcp(Instant now, Ipv4Addr dst, const TcpRepr& hdr,
                               std::span<const TxPiece> payload) {
  const std::optional<Ipv4Addr> hop = next_hop(dst);
  if (!hop) {
    ++stats.tx_no_route;
    return false;
  }
  std::size_t data_len = 0;
  for (const TxPiece& p : payload) data_len += p.data.size();
  const std::size_t tcp_hlen = tcp_header_len(hdr);
  // We never fragment (the engine sizes segments to mss()): an oversized segment is a bug
  // upstream and is refused rather than sent with DF set into a black hole.
  if (data_len > caps.mtu || ipv4_min_header + tcp_hlen + data_len > caps.mtu) {
    ++stats.tx_too_big;
    return false;
  }
  const std::size_t head_len = eth_header_len + ipv4_min_header + tcp_hlen;
  const auto l4_len = static_cast<std::uint16_t>(tcp_hlen + data_len);

  std::array<std::uint8_t, max_head> head;
  const mut_bytes h(head.data(), head_len);
  emit_ethernet({MacAddr{}, mac, ethertype::ipv4}, h);  // destination MAC set below
  Ipv4Repr ip;
  ip.src = cfg.ip;
  ip.dst = dst;
  ip.protocol = ip_proto_tcp;
  ip.ttl = cfg.ttl;
  ip.id = next_ip_id++;
  // RFC 9293 3.7.3 / RFC 1191: TCP segments go with DF so path MTU discovery works.
  ip.dont_frag = true;
  ip.payload_len = l4_len;
  emit_ipv4(ip, h.subspan(eth_header_len), !caps.tx_ip_csum);
  const mut_bytes th = h.subspan(eth_header_len + ipv4_min_header);
  emit_tcp(hdr, th);

  TxOffload off;
  off.l2_len = static_cast<std::uint8_t>(eth_header_len);
  off.l3_len = static_cast<std::uint8_t>(ipv4_min_header);
  off.l4_len = static_cast<std::uint8_t>(tcp_hlen);
  off.ip_csum = caps.tx_ip_csum;
  off.l4_csum = caps.tx_l4_csum;
  const std::uint16_t pseudo = ipv4_pseudo_header_sum(cfg.ip, dst, ip_proto_tcp, l4_len);
  if (off.l4_csum) {
    store_be16(th.data() + tcp_csum_off, pseudo);  // device.h: the NIC completes it
  } else {
    InetChecksum c;
    c.add_word(pseudo);
    c.add(th);
    for (const TxPiece& p : payload) c.add(p.data);
    store_be16(th.data() + tcp_csum_off, c.checksum());
  }

  const std::optional<MacAddr> to = arp.lookup(*hop, now);
  if (!to) {
    // RFC 1122 2.3.2.2: hold the frame while resolving; it is copied because the caller's
    // pieces need not outlive this call.
    PendingFrame pf;
    pf.bytes.reserve(head_len + data_len);
    pf.bytes.assign(h.begin(), h.end());
    for (const TxPiece& p : payload) pf.bytes.insert(pf.bytes.end(), p.data.begin(), p.data.end());
    pf.head_len = head_len;
    pf.offload = off;
    switch (arp.enqueue(*hop, std::move(pf), now)) {
      case ArpCache::Enqueue::queued_new:
        send_arp(ArpOp::request, MacAddr::broadcast(), {}, *hop);
        return true;
      case ArpCache::Enqueue::queued:
        return true;
      case ArpCache::Enqueue::full:
        ++stats.tx_arp_dropped;
        return false;
    }
  }
  store_mac(h.data() + eth_off_dst, *to);

  TxFrame tx;
  tx.head = h;
  tx.offload = off;
  tx.payload = payload;
  TxPiece joined;
  if (payload.size() > caps.max_tx_pieces) {
    // More pieces than the device can chain: one copy into a heap block it can attach.
    std::uint8_t* p = nullptr;
    joined.ref = HeapBuf::make(data_len, &p);
    for (const TxPiece& piece : payload) {
      if (!piece.data.empty()) std::memcpy(p, piece.data.data(), piece.data.size());
      p += piece.data.size();
    }
    joined.data = bytes_view(p - data_len, data_len);
    tx.payload = std::span<const TxPiece>(&joined, 1);
  }
  if (!dev.tx(tx)) {
    ++stats.tx_device_full;
    return false;
  }
  ++stats.tcp_tx;
  return true;
}

}  // namespace esock::tcp
