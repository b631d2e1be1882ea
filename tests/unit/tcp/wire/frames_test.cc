// Ethernet, ARP, IPv4, ICMP and address text: golden frames and every rejection.
#include <gtest/gtest.h>

#include <vector>

#include "base/endian.h"
#include "hex.h"
#include "tcp/wire/arp.h"
#include "tcp/wire/checksum.h"
#include "tcp/wire/ethernet.h"
#include "tcp/wire/icmp.h"
#include "tcp/wire/ipv4.h"

namespace esock::tcp {
namespace {

using test::from_hex;

// Captured on Linux loopback (dumpcap -i lo): `ping -c1 -s 5 127.0.0.1`.
constexpr const char* kPingRequest =
    "000000000000000000000000 0800"
    "4500002178ab40004001c42e7f0000017f000001"
    "0800b6b43b460001 0001020304";
constexpr const char* kPingReply =
    "000000000000000000000000 0800"
    "4500002178ac00004001042e7f0000017f000001"
    "0000beb43b460001 0001020304";

// An ARP request built by hand from RFC 826's packet format: who has 192.168.1.1, tell
// 192.168.1.100 (00:11:22:33:44:55).
constexpr const char* kArpRequest =
    "ffffffffffff 001122334455 0806"
    "0001 0800 06 04 0001 001122334455 c0a80164 000000000000 c0a80101";

TEST(Addr, TextRoundTrip) {
  Ipv4Addr a;
  ASSERT_TRUE(Ipv4Addr::parse("192.168.1.254", &a));
  EXPECT_EQ(a, Ipv4Addr::from_octets(192, 168, 1, 254));
  EXPECT_EQ(a.to_string(), "192.168.1.254");
  ASSERT_TRUE(Ipv4Addr::parse("0.0.0.0", &a));
  EXPECT_EQ(a.v, 0u);
  ASSERT_TRUE(Ipv4Addr::parse("255.255.255.255", &a));
  EXPECT_EQ(a.v, 0xffffffffu);
  EXPECT_EQ(MacAddr({0x02, 0x00, 0x5e, 0x10, 0xab, 0xff}).to_string(), "02:00:5e:10:ab:ff");
}

TEST(Addr, ParseRejects) {
  const Ipv4Addr keep = Ipv4Addr::from_octets(1, 2, 3, 4);
  for (const char* bad : {"", "1.2.3", "1.2.3.4.5", "256.1.1.1", "1..2.3", "1.2.3.4 ", " 1.2.3.4",
                          "a.b.c.d", "1.2.3.0004", "-1.2.3.4", "1.2.3.", "0x1.2.3.4"}) {
    Ipv4Addr a = keep;
    EXPECT_FALSE(Ipv4Addr::parse(bad, &a)) << bad;
    EXPECT_EQ(a, keep) << bad;
  }
}

TEST(Ethernet, GoldenAndRoundTrip) {
  const auto f = from_hex(kArpRequest);
  EthernetView v;
  ASSERT_EQ(EthernetView::check(f, v), EthParseError::none);
  EXPECT_TRUE(v.dst().is_broadcast());
  EXPECT_EQ(v.src(), MacAddr({0x00, 0x11, 0x22, 0x33, 0x44, 0x55}));
  EXPECT_EQ(v.ethertype(), ethertype::arp);
  EXPECT_EQ(v.payload().size(), 28u);
  std::vector<std::uint8_t> out(eth_header_len);
  emit_ethernet(v.repr(), out);
  EXPECT_TRUE(std::equal(out.begin(), out.end(), f.begin()));
}

TEST(Ethernet, Rejects) {
  EthernetView v;
  auto f = from_hex(kPingRequest);
  EXPECT_EQ(EthernetView::check(bytes_view(f).first(13), v), EthParseError::truncated);
  store_be16(f.data() + 12, 0x05dc);  // an 802.3 length
  EXPECT_EQ(EthernetView::check(f, v), EthParseError::not_ethernet_ii);
  store_be16(f.data() + 12, ethertype::vlan);
  EXPECT_EQ(EthernetView::check(f, v), EthParseError::vlan_unsupported);
  store_be16(f.data() + 12, ethertype::qinq);
  EXPECT_EQ(EthernetView::check(f, v), EthParseError::vlan_unsupported);
  EXPECT_STRNE(to_string(EthParseError::vlan_unsupported), "");
}

TEST(Arp, GoldenRequest) {
  const auto f = from_hex(kArpRequest);
  ArpRepr r;
  ASSERT_EQ(parse_arp(bytes_view(f).subspan(14), &r), ArpParseError::none);
  EXPECT_EQ(r.op, ArpOp::request);
  EXPECT_EQ(r.sha, MacAddr({0x00, 0x11, 0x22, 0x33, 0x44, 0x55}));
  EXPECT_EQ(r.spa, Ipv4Addr::from_octets(192, 168, 1, 100));
  EXPECT_EQ(r.tha, MacAddr{});
  EXPECT_EQ(r.tpa, Ipv4Addr::from_octets(192, 168, 1, 1));
  std::vector<std::uint8_t> out(arp_len);
  emit_arp(r, out);
  EXPECT_TRUE(std::equal(out.begin(), out.end(), f.begin() + 14));
}

TEST(Arp, PaddingIgnoredAndReplyRoundTrip) {
  ArpRepr r{ArpOp::reply, MacAddr({2, 0, 0, 0, 0, 1}), Ipv4Addr::from_octets(10, 0, 0, 1),
            MacAddr({2, 0, 0, 0, 0, 2}), Ipv4Addr::from_octets(10, 0, 0, 2)};
  std::vector<std::uint8_t> out(46, 0xee);  // 18 octets of Ethernet padding after it
  emit_arp(r, out);
  ArpRepr back;
  ASSERT_EQ(parse_arp(out, &back), ArpParseError::none);
  EXPECT_EQ(back, r);
}

TEST(Arp, Rejects) {
  const auto good = from_hex(kArpRequest);
  const bytes_view p = bytes_view(good).subspan(14);
  ArpRepr r;
  EXPECT_EQ(parse_arp(p.first(27), &r), ArpParseError::truncated);
  auto mutate = [&](std::size_t off, std::uint8_t v) {
    std::vector<std::uint8_t> m(p.begin(), p.end());
    m[off] = v;
    return parse_arp(m, &r);
  };
  EXPECT_EQ(mutate(1, 6), ArpParseError::bad_hardware);  // IEEE 802 hardware type
  EXPECT_EQ(mutate(4, 8), ArpParseError::bad_hardware);  // hlen 8
  EXPECT_EQ(mutate(2, 0x86), ArpParseError::bad_protocol);
  EXPECT_EQ(mutate(5, 16), ArpParseError::bad_protocol);
  EXPECT_EQ(mutate(7, 3), ArpParseError::bad_operation);  // RARP request
  EXPECT_EQ(mutate(6, 1), ArpParseError::bad_operation);  // 0x0101
}

TEST(Ipv4, GoldenPing) {
  const auto f = from_hex(kPingRequest);
  Ipv4View v;
  ASSERT_EQ(Ipv4View::check(bytes_view(f).subspan(14), v), Ipv4ParseError::none);
  EXPECT_EQ(v.header_len(), 20u);
  EXPECT_EQ(v.total_len(), 33u);
  EXPECT_EQ(v.id(), 0x78ab);
  EXPECT_TRUE(v.dont_frag());
  EXPECT_FALSE(v.more_frags());
  EXPECT_FALSE(v.is_fragment());
  EXPECT_EQ(v.ttl(), 64);
  EXPECT_EQ(v.protocol(), ip_proto_icmp);
  EXPECT_EQ(v.src(), Ipv4Addr::from_octets(127, 0, 0, 1));
  EXPECT_EQ(v.payload().size(), 13u);

  // Emitting the same fields reproduces the header, checksum included.
  Ipv4Repr r{v.src(), v.dst(), v.protocol(), v.ttl(), v.tos(), v.id(), true, false, 0, 13};
  std::vector<std::uint8_t> out(20);
  emit_ipv4(r, out);
  EXPECT_TRUE(std::equal(out.begin(), out.end(), f.begin() + 14));
  emit_ipv4(r, out, false);
  EXPECT_EQ(load_be16(out.data() + 10), 0);
}

TEST(Ipv4, OptionsSkippedPaddingExcludedFragments) {
  // IHL 6 (one NOP-padded option word), 4 octets of data, 10 octets of link padding.
  Ipv4Repr r{Ipv4Addr::from_octets(10, 0, 0, 1),
             Ipv4Addr::from_octets(10, 0, 0, 2),
             6,
             9,
             0,
             7,
             false,
             true,
             1480,
             0};
  std::vector<std::uint8_t> d(24 + 4 + 10, 0xaa);
  emit_ipv4(r, d);
  d[0] = 0x46;
  store_be16(d.data() + 2, 28);
  d[20] = d[21] = d[22] = d[23] = 1;
  store_be16(d.data() + 10, 0);
  store_be16(d.data() + 10, internet_checksum(bytes_view(d).first(24)));
  Ipv4View v;
  ASSERT_EQ(Ipv4View::check(d, v), Ipv4ParseError::none);
  EXPECT_EQ(v.header_len(), 24u);
  EXPECT_EQ(v.payload().size(), 4u);
  EXPECT_TRUE(v.more_frags());
  EXPECT_EQ(v.frag_offset(), 1480u);
  EXPECT_TRUE(v.is_fragment());
}

TEST(Ipv4, Rejects) {
  const auto f = from_hex(kPingRequest);
  const std::vector<std::uint8_t> good(f.begin() + 14, f.end());
  Ipv4View v;
  EXPECT_EQ(Ipv4View::check(bytes_view(good).first(19), v), Ipv4ParseError::truncated);
  EXPECT_EQ(Ipv4View::check(bytes_view(good).first(32), v), Ipv4ParseError::truncated);
  auto m = good;
  m[0] = 0x65;
  EXPECT_EQ(Ipv4View::check(m, v), Ipv4ParseError::bad_version);
  m = good;
  m[0] = 0x44;
  EXPECT_EQ(Ipv4View::check(m, v), Ipv4ParseError::bad_ihl);
  m = good;
  m[0] = 0x4f;  // 60-octet header in a 33-octet datagram
  EXPECT_EQ(Ipv4View::check(m, v), Ipv4ParseError::truncated);
  m = good;
  store_be16(m.data() + 2, 19);
  EXPECT_EQ(Ipv4View::check(m, v, false), Ipv4ParseError::bad_total_length);
  m = good;
  m[8] ^= 1;  // TTL changed, checksum not
  EXPECT_EQ(Ipv4View::check(m, v), Ipv4ParseError::bad_checksum);
  EXPECT_EQ(Ipv4View::check(m, v, false), Ipv4ParseError::none);  // the device vouched
  m = good;
  store_be16(m.data() + 6, ipv4_frag_mask);  // offset 65528 + 13 octets of data
  EXPECT_EQ(Ipv4View::check(m, v, false), Ipv4ParseError::bad_fragment);
  store_be16(m.data() + 6, (65515 - 13) / 8);  // data ends at 65509: fits
  EXPECT_EQ(Ipv4View::check(m, v, false), Ipv4ParseError::none);
}

TEST(Icmp, GoldenEchoRequestAndReply) {
  const auto req = from_hex(kPingRequest);
  IcmpRepr r;
  bytes_view data;
  ASSERT_EQ(parse_icmp(bytes_view(req).subspan(34), &r, &data), IcmpParseError::none);
  EXPECT_EQ(r.type, icmp_type::echo_request);
  EXPECT_EQ(r.ident, 0x3b46);
  EXPECT_EQ(r.seq, 1);
  EXPECT_EQ(data.size(), 5u);

  // The reply Linux sent back is what emit_icmp produces for the same ident/seq/data.
  const auto rep = from_hex(kPingReply);
  std::vector<std::uint8_t> out(8 + data.size());
  emit_icmp({icmp_type::echo_reply, 0, r.ident, r.seq}, data, out);
  EXPECT_TRUE(std::equal(out.begin(), out.end(), rep.begin() + 34));
  // In place: the data already sits after the header.
  std::vector<std::uint8_t> inplace(req.begin() + 34, req.end());
  emit_icmp({icmp_type::echo_reply, 0, r.ident, r.seq}, bytes_view(inplace).subspan(8), inplace);
  EXPECT_EQ(inplace, out);
}

TEST(Icmp, Rejects) {
  const auto req = from_hex(kPingRequest);
  std::vector<std::uint8_t> m(req.begin() + 34, req.end());
  IcmpRepr r;
  bytes_view data;
  EXPECT_EQ(parse_icmp(bytes_view(m).first(7), &r, &data), IcmpParseError::truncated);
  m.back() ^= 0xff;
  EXPECT_EQ(parse_icmp(m, &r, &data), IcmpParseError::bad_checksum);
}

}  // namespace
}  // namespace esock::tcp
