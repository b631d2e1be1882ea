// Interface: IPv4 receive (RFC 791, RFC 1122 section 3.2.1), reassembly, TCP delivery and
// ICMP echo (RFC 792).
#include <vector>

#include "tcp/net/interface_impl.h"
#include "tcp/wire/checksum.h"
#include "tcp/wire/icmp.h"

namespace esock::tcp {

namespace {

// RFC 1122 3.2.1.3: a datagram from a broadcast, multicast or unspecified source is
// discarded (it cannot be answered, and a TCP peer there is impossible).
bool bad_source(Ipv4Addr a) {
  return a.v == 0 || a.v == 0xffffffffu || (a.v >> 28) == 0xe;
}

}  // namespace

void Interface::Impl::on_ipv4(Instant now, const EthernetView& eth, const RxFrame& f) {
  if (f.csum & rx_csum::ip_bad) return drop();
  Ipv4View ip;
  const bool verify = (f.csum & rx_csum::ip_good) == 0;
  if (Ipv4View::check(eth.payload(), ip, verify) != Ipv4ParseError::none) return drop();
  // Only our own address: a host is not a router (RFC 1122 3.3.1), and broadcasts carry
  // nothing for TCP.
  if (ip.dst() != cfg.ip || bad_source(ip.src())) return drop();
  if (!ip.is_fragment()) return deliver(now, eth, ip, ip.payload(), f.ref, f.csum);

  ++stats.ip_fragments_rx;
  Ipv4Reassembly::Datagram d;
  switch (reassembly.add(ip, now, &d)) {
    case Ipv4Reassembly::Outcome::pending:
      return;
    case Ipv4Reassembly::Outcome::dropped:
      ++stats.ip_reassembly_dropped;
      return drop();
    case Ipv4Reassembly::Outcome::complete:
      ++stats.ip_reassembled;
      // The device's L4 verdict was about one fragment, not the datagram: check in software.
      return deliver(now, eth, ip, d.payload, d.ref, 0);
  }
}

void Interface::Impl::deliver(Instant now, const EthernetView& eth, const Ipv4View& ip,
                              bytes_view payload, const BufRef& ref, std::uint8_t csum) {
  switch (ip.protocol()) {
    case ip_proto_tcp:
      return on_tcp(now, ip.src(), ip.dst(), payload, ref, csum);
    case ip_proto_icmp:
      return on_icmp(now, eth, ip, payload);
    default:
      return drop();  // no UDP or other transports here
  }
}

void Interface::Impl::on_tcp(Instant now, Ipv4Addr src, Ipv4Addr dst, bytes_view segment,
                             const BufRef& ref, std::uint8_t csum) {
  // RFC 9293 3.1: the checksum covers pseudo-header, header and data; a segment that
  // fails it is dropped silently (TCP recovers by retransmission).
  const bool bad = (csum & rx_csum::l4_bad) != 0 ||
                   ((csum & rx_csum::l4_good) == 0 && !tcp_checksum_ok(src, dst, segment));
  if (bad) {
    ++stats.tcp_bad_csum;
    return drop();
  }
  TcpRepr hdr;
  bytes_view data;
  // A data offset below 5 or past the segment, or a malformed known option: there is no
  // header to act on (RFC 9293 3.1: an illegal option length MUST be handled without
  // crashing; dropping the segment is that).
  if (parse_tcp(segment, &hdr, &data) != TcpParseError::none) {
    ++stats.tcp_bad_header;
    return drop();
  }
  ++stats.tcp_rx;
  tcp.on_tcp_segment(now, src, dst, hdr, data, ref);
}

void Interface::Impl::on_icmp(Instant now, const EthernetView& eth, const Ipv4View& ip,
                              bytes_view message) {
  IcmpRepr r;
  bytes_view data;
  if (parse_icmp(message, &r, &data) != IcmpParseError::none) return drop();
  if (r.type != icmp_type::echo_request || r.code != 0) return;  // nothing else to answer
  // RFC 1122 3.2.2.6 requires the echo server, not an answer to every request at any
  // rate: as hosts commonly do, a flood of requests must not become a flood of replies
  // (our CPU and transmit queue spent at the peer's will).
  if (!echo_limit.take(now)) {
    ++stats.icmp_echo_rate_limited;
    return;
  }
  // RFC 1122 3.2.2.6: the reply returns the data unchanged. We do not fragment, so an
  // echo larger than the MTU (a reassembled ping) goes unanswered.
  const std::size_t ip_len = ipv4_min_header + message.size();
  if (ip_len > caps.mtu) return;
  std::vector<std::uint8_t> f(eth_header_len + ip_len);
  // Back to the sender's link address: on-link that is the sender, off-link the router it
  // came through, either way the right next hop, with no ARP lookup needed.
  emit_ethernet({eth.src(), mac, ethertype::ipv4}, f);
  Ipv4Repr rip;
  rip.src = cfg.ip;
  rip.dst = ip.src();
  rip.protocol = ip_proto_icmp;
  rip.ttl = cfg.ttl;
  rip.id = next_ip_id++;
  rip.payload_len = static_cast<std::uint16_t>(message.size());
  emit_ipv4(rip, mut_bytes(f).subspan(eth_header_len, ipv4_min_header));
  emit_icmp({icmp_type::echo_reply, 0, r.ident, r.seq}, data,
            mut_bytes(f).subspan(eth_header_len + ipv4_min_header));
  TxFrame tx;
  tx.head = f;
  if (!dev.tx(tx)) {
    ++stats.tx_device_full;
    return;
  }
  ++stats.icmp_echo_replies;
}

}  // namespace esock::tcp
