// IPv4 receive through the interface: TCP delivery and checksum verdicts, address
// filtering, ICMP echo replies.
#include "net_fixture.h"

namespace esock::tcp::test {
namespace {

using Ipv4RxTest = NetTest;

TEST_F(Ipv4RxTest, DeliversVerifiedTcpSegment) {
  feed(peer_tcp_frame("hello"));
  ASSERT_EQ(sink.segs.size(), 1u);
  const Segment& s = sink.segs[0];
  EXPECT_EQ(s.src, kPeerIp);
  EXPECT_EQ(s.dst, kOurIp);
  EXPECT_EQ(s.hdr, sample_hdr());
  EXPECT_EQ(s.payload, "hello");
  EXPECT_TRUE(s.has_ref);
  EXPECT_EQ(iface().stats().tcp_rx, 1u);
  EXPECT_EQ(iface().stats().rx_dropped, 0u);
}

TEST_F(Ipv4RxTest, EthernetPaddingIsNotPayload) {
  TcpRepr h = sample_hdr();
  h.options = {};
  Bytes f = peer_tcp_frame("", h);  // 14 + 20 + 20 octets, below Ethernet's minimum
  ASSERT_EQ(f.size(), 54u);
  f.resize(60, 0);
  feed(f);
  ASSERT_EQ(sink.segs.size(), 1u);
  EXPECT_EQ(sink.segs[0].payload, "");
}

TEST_F(Ipv4RxTest, BadTcpChecksumDropped) {
  Bytes f = peer_tcp_frame("hello");
  f.back() ^= 1;
  feed(f);
  EXPECT_TRUE(sink.segs.empty());
  EXPECT_EQ(iface().stats().tcp_bad_csum, 1u);
  EXPECT_EQ(iface().stats().rx_dropped, 1u);
}

TEST_F(Ipv4RxTest, DeviceChecksumVerdictsAreTrusted) {
  Bytes corrupt = peer_tcp_frame("hello");
  corrupt.back() ^= 1;
  feed(corrupt, rx_csum::ip_good | rx_csum::l4_good);  // the device said good: not rechecked
  EXPECT_EQ(sink.segs.size(), 1u);
  feed(peer_tcp_frame("hello"), rx_csum::l4_bad);  // the device said bad: dropped
  EXPECT_EQ(sink.segs.size(), 1u);
  EXPECT_EQ(iface().stats().tcp_bad_csum, 1u);
  feed(peer_tcp_frame("hello"), rx_csum::ip_bad);
  EXPECT_EQ(sink.segs.size(), 1u);
  EXPECT_EQ(iface().stats().rx_dropped, 2u);
}

TEST_F(Ipv4RxTest, BadIpChecksumDroppedUnlessDeviceVouched) {
  Bytes f = peer_tcp_frame("hi");
  f[14 + 8] = 63;  // TTL changed without fixing the header checksum
  feed(f);
  EXPECT_TRUE(sink.segs.empty());
  EXPECT_EQ(iface().stats().rx_dropped, 1u);
  feed(f, rx_csum::ip_good);
  EXPECT_EQ(sink.segs.size(), 1u);
}

TEST_F(Ipv4RxTest, OnlyOurAddressAndSaneSources) {
  const Bytes seg = tcp_segment(kPeerIp, kOtherIp, sample_hdr(), "x");
  feed(eth_frame(kOurMac, kPeerMac, ethertype::ipv4,
                 ipv4_packet(kPeerIp, kOtherIp, ip_proto_tcp, seg)));
  const Ipv4Addr bcast = Ipv4Addr::from_octets(10, 0, 0, 255);
  const Bytes seg2 = tcp_segment(kPeerIp, bcast, sample_hdr(), "x");
  feed(eth_frame(MacAddr::broadcast(), kPeerMac, ethertype::ipv4,
                 ipv4_packet(kPeerIp, bcast, ip_proto_tcp, seg2)));
  const Ipv4Addr mcast_src = Ipv4Addr::from_octets(224, 0, 0, 5);
  const Bytes seg3 = tcp_segment(mcast_src, kOurIp, sample_hdr(), "x");
  feed(eth_frame(kOurMac, kPeerMac, ethertype::ipv4,
                 ipv4_packet(mcast_src, kOurIp, ip_proto_tcp, seg3)));
  // UDP is not handled here.
  feed(eth_frame(kOurMac, kPeerMac, ethertype::ipv4,
                 ipv4_packet(kPeerIp, kOurIp, ip_proto_udp, Bytes(8, 0))));
  EXPECT_TRUE(sink.segs.empty());
  EXPECT_EQ(iface().stats().rx_dropped, 4u);
}

TEST_F(Ipv4RxTest, MalformedDropped) {
  Bytes f = peer_tcp_frame("hello");
  f.resize(f.size() - 1);  // shorter than Total Length
  feed(f);
  Bytes g = peer_tcp_frame("hello");
  g[14 + 20 + 12] = 0x40;  // TCP data offset 4 (checksum then fails first; fix it)
  store_be16(g.data() + 14 + 20 + 16, 0);
  {
    InetChecksum c;
    c.add_word(ipv4_pseudo_header_sum(kPeerIp, kOurIp, ip_proto_tcp,
                                      static_cast<std::uint16_t>(g.size() - 34)));
    c.add(bytes_view(g).subspan(34));
    store_be16(g.data() + 14 + 20 + 16, c.checksum());
  }
  feed(g);
  EXPECT_TRUE(sink.segs.empty());
  EXPECT_EQ(iface().stats().rx_dropped, 2u);
  EXPECT_EQ(iface().stats().tcp_bad_csum, 0u);
}

Bytes echo_request(std::uint16_t ident, std::uint16_t seq, const Bytes& data) {
  Bytes m(icmp_header_len + data.size());
  emit_icmp({icmp_type::echo_request, 0, ident, seq}, data, m);
  return m;
}

TEST_F(Ipv4RxTest, AnswersEchoRequest) {
  const Bytes data = {'p', 'i', 'n', 'g', 0, 1, 2};
  feed(eth_frame(kOurMac, kPeerMac, ethertype::ipv4,
                 ipv4_packet(kPeerIp, kOurIp, ip_proto_icmp, echo_request(0x1234, 7, data))));
  ASSERT_EQ(dev.sent.size(), 1u);
  const Bytes& r = dev.sent[0].bytes;
  // The whole reply, octet for octet: back to the sender's MAC, IPv4 id 0, TTL 64, no DF.
  Bytes expect = eth_frame(kPeerMac, kOurMac, ethertype::ipv4, {});
  Ipv4Repr rip;
  rip.src = kOurIp;
  rip.dst = kPeerIp;
  rip.protocol = ip_proto_icmp;
  rip.ttl = 64;
  rip.id = 0;
  rip.payload_len = static_cast<std::uint16_t>(8 + data.size());
  Bytes iph(20);
  emit_ipv4(rip, iph);
  expect.insert(expect.end(), iph.begin(), iph.end());
  Bytes icmp = {0x00, 0x00, 0, 0, 0x12, 0x34, 0x00, 0x07};
  icmp.insert(icmp.end(), data.begin(), data.end());
  store_be16(icmp.data() + 2, internet_checksum(icmp));
  expect.insert(expect.end(), icmp.begin(), icmp.end());
  EXPECT_EQ(r, expect);
  EXPECT_EQ(iface().stats().icmp_echo_replies, 1u);
}

// Hardening (issue 20, item 8): echo requests were all answered, at whatever rate a peer
// sent them. Now a burst of 50, then 1000 per second (InterfaceConfig's defaults).
TEST_F(Ipv4RxTest, EchoRepliesAreRateLimited) {
  const Bytes ping = eth_frame(kOurMac, kPeerMac, ethertype::ipv4,
                               ipv4_packet(kPeerIp, kOurIp, ip_proto_icmp, echo_request(1, 1, {})));
  for (int i = 0; i < 200; ++i) feed(ping);  // all at one instant
  EXPECT_EQ(iface().stats().icmp_echo_replies, 50u);
  EXPECT_EQ(iface().stats().icmp_echo_rate_limited, 150u);
  now += 10ms;  // ten tokens' worth
  for (int i = 0; i < 20; ++i) feed(ping);
  EXPECT_EQ(iface().stats().icmp_echo_replies, 60u);
  now += 1s;  // the bucket refills to its burst, not beyond
  for (int i = 0; i < 100; ++i) feed(ping);
  EXPECT_EQ(iface().stats().icmp_echo_replies, 110u);
  EXPECT_EQ(dev.sent.size(), 110u);
}

TEST_F(Ipv4RxTest, IgnoresOtherIcmpAndDropsBadChecksum) {
  Bytes unreach = {3, 1, 0, 0, 0, 0, 0, 0};
  store_be16(unreach.data() + 2, internet_checksum(unreach));
  feed(eth_frame(kOurMac, kPeerMac, ethertype::ipv4,
                 ipv4_packet(kPeerIp, kOurIp, ip_proto_icmp, unreach)));
  Bytes bad = echo_request(1, 1, {1, 2, 3});
  bad.back() ^= 0xff;
  feed(eth_frame(kOurMac, kPeerMac, ethertype::ipv4,
                 ipv4_packet(kPeerIp, kOurIp, ip_proto_icmp, bad)));
  EXPECT_TRUE(dev.sent.empty());
  EXPECT_EQ(iface().stats().rx_dropped, 1u);
}

TEST_F(Ipv4RxTest, PollReturnsFramesHandledAndFlushReachesDevice) {
  dev.rx.emplace_back(peer_tcp_frame("a"), 0);
  dev.rx.emplace_back(peer_tcp_frame("b"), 0);
  EXPECT_EQ(iface().poll(now), 2u);
  EXPECT_EQ(iface().poll(now), 0u);
  iface().flush();
  EXPECT_EQ(dev.flushes, 1);
  EXPECT_EQ(iface().mss(), 1460);
  EXPECT_EQ(iface().ip(), kOurIp);
  EXPECT_EQ(iface().mac(), kOurMac);
}

}  // namespace
}  // namespace esock::tcp::test
