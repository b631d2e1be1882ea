// Fuzzes lib/tcp's wire parsers: arbitrary bytes as an Ethernet frame through Ethernet ->
// ARP / IPv4 -> TCP / ICMP, with round trips through the emitters and the checksum over
// arbitrary piece splits.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "tcp/wire/arp.h"
#include "tcp/wire/checksum.h"
#include "tcp/wire/ethernet.h"
#include "tcp/wire/icmp.h"
#include "tcp/wire/ipv4.h"
#include "tcp/wire/tcp.h"

using namespace esock;
using namespace esock::tcp;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

// The checksum of a buffer must not depend on how it is split into pieces.
void checksum_splits(bytes_view d) {
  InetChecksum whole;
  whole.add(d);
  InetChecksum parts;
  std::size_t pos = 0, step = 1;
  while (pos < d.size()) {
    const std::size_t n = std::min(step, d.size() - pos);
    parts.add(d.subspan(pos, n));
    pos += n;
    step = step * 3 % 17 + 1;
  }
  check(whole.sum() == parts.sum());
}

void tcp_round_trip(bytes_view segment) {
  TcpRepr r;
  bytes_view payload;
  if (parse_tcp(segment, &r, &payload) != TcpParseError::none) return;
  check(payload.size() <= segment.size());
  const std::size_t len = tcp_header_len(r);
  check(len >= tcp_min_header && len <= tcp_max_header && len % 4 == 0);
  std::vector<std::uint8_t> out(len);
  emit_tcp(r, out);
  TcpRepr back;
  bytes_view none;
  check(parse_tcp(out, &back, &none) == TcpParseError::none && none.empty());
  // Everything survives but SACK blocks that do not fit next to the other options.
  check(back.options.sack_count <= r.options.sack_count);
  back.options.sack_count = r.options.sack_count;
  back.options.sacks = r.options.sacks;
  for (std::size_t i = r.options.sack_count; i < r.options.sacks.size(); ++i)
    back.options.sacks[i] = r.options.sacks[i];
  check(back == r);
}

void ipv4(bytes_view packet) {
  for (const bool verify : {true, false}) {
    Ipv4View ip;
    if (Ipv4View::check(packet, ip, verify) != Ipv4ParseError::none) continue;
    check(ip.header_len() + ip.payload().size() == ip.total_len());
    check(ip.frag_offset() + ip.payload().size() <= 65535);
    if (ip.protocol() == ip_proto_tcp) {
      tcp_round_trip(ip.payload());
      (void)tcp_checksum_ok(ip.src(), ip.dst(), ip.payload());
    } else if (ip.protocol() == ip_proto_icmp) {
      IcmpRepr r;
      bytes_view data;
      if (parse_icmp(ip.payload(), &r, &data) == IcmpParseError::none) {
        std::vector<std::uint8_t> out(icmp_header_len + data.size());
        emit_icmp(r, data, out);
        IcmpRepr back;
        bytes_view d2;
        check(parse_icmp(out, &back, &d2) == IcmpParseError::none && back == r);
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const bytes_view in(data, size);
  checksum_splits(in);
  EthernetView eth;
  if (EthernetView::check(in, eth) == EthParseError::none) {
    if (eth.ethertype() == ethertype::arp) {
      ArpRepr a;
      if (parse_arp(eth.payload(), &a) == ArpParseError::none) {
        std::vector<std::uint8_t> out(arp_len);
        emit_arp(a, out);
        ArpRepr back;
        check(parse_arp(out, &back) == ArpParseError::none && back == a);
      }
    } else {
      ipv4(eth.payload());
    }
  }
  // The same bytes as a bare IPv4 datagram and a bare TCP segment reach deeper faster.
  ipv4(in);
  tcp_round_trip(in);
  return 0;
}
