// ARP through the interface: replies, RFC 826 learning, resolution with queued frames,
// retries, failure and expiry, driven by an injected clock.
#include "net_fixture.h"

namespace esock::tcp::test {
namespace {

using ArpTest = NetTest;

ArpRepr sent_arp(const FakeDevice::Sent& s, MacAddr* eth_dst) {
  EthernetView eth;
  EXPECT_EQ(EthernetView::check(s.bytes, eth), EthParseError::none);
  EXPECT_EQ(eth.ethertype(), ethertype::arp);
  EXPECT_EQ(eth.src(), kOurMac);
  *eth_dst = eth.dst();
  ArpRepr a;
  EXPECT_EQ(parse_arp(eth.payload(), &a), ArpParseError::none);
  return a;
}

MacAddr sent_eth_dst(const FakeDevice::Sent& s) {
  EthernetView eth;
  EXPECT_EQ(EthernetView::check(s.bytes, eth), EthParseError::none);
  return eth.dst();
}

TEST_F(ArpTest, RepliesToRequestForUsAndLearnsSender) {
  feed(arp_frame(ArpOp::request, kPeerMac, kPeerIp, MacAddr{}, kOurIp, MacAddr::broadcast()));
  ASSERT_EQ(dev.sent.size(), 1u);
  // RFC 826: swap sender and target, put in our addresses, opcode reply, unicast back.
  EXPECT_EQ(dev.sent[0].bytes.size(), 60u);  // padded to the Ethernet minimum
  MacAddr to;
  const ArpRepr r = sent_arp(dev.sent[0], &to);
  EXPECT_EQ(to, kPeerMac);
  EXPECT_EQ(r, (ArpRepr{ArpOp::reply, kOurMac, kOurIp, kPeerMac, kPeerIp}));
  EXPECT_EQ(iface().stats().arp_requests_rx, 1u);
  EXPECT_EQ(iface().stats().arp_replies_tx, 1u);
  // The sender was learned: a segment to it goes out at once, no request.
  dev.sent.clear();
  ASSERT_TRUE(send("x"));
  ASSERT_EQ(dev.sent.size(), 1u);
  EXPECT_EQ(sent_eth_dst(dev.sent[0]), kPeerMac);
  EXPECT_EQ(iface().stats().arp_requests_tx, 0u);
}

TEST_F(ArpTest, IgnoresRequestForAnotherHost) {
  feed(arp_frame(ArpOp::request, kPeerMac, kPeerIp, MacAddr{}, kOtherIp, MacAddr::broadcast()));
  EXPECT_TRUE(dev.sent.empty());
  EXPECT_EQ(iface().stats().rx_dropped, 0u);  // a valid packet, just not for us
  ASSERT_TRUE(send("x"));                     // not learned: resolution starts
  ASSERT_EQ(dev.sent.size(), 1u);
  MacAddr to;
  EXPECT_EQ(sent_arp(dev.sent[0], &to).op, ArpOp::request);
}

TEST_F(ArpTest, DoesNotLearnProbesMulticastOrOurOwnAddress) {
  // RFC 5227 probe (sender 0.0.0.0), a multicast sender MAC, and someone claiming our IP.
  feed(arp_frame(ArpOp::request, kPeerMac, Ipv4Addr{}, MacAddr{}, kOurIp, MacAddr::broadcast()));
  const MacAddr mcast{{0x01, 0x00, 0x5e, 0, 0, 1}};
  feed(arp_frame(ArpOp::reply, mcast, kPeerIp, kOurMac, kOurIp, kOurMac));
  feed(arp_frame(ArpOp::reply, kPeerMac, kOurIp, kOurMac, kOurIp, kOurMac));
  dev.sent.clear();
  ASSERT_TRUE(send("x"));
  MacAddr to;
  EXPECT_EQ(sent_arp(dev.sent.at(0), &to).op, ArpOp::request);
}

TEST_F(ArpTest, ResolvesQueuesAndSendsOnReply) {
  ASSERT_TRUE(send("one"));
  ASSERT_TRUE(send("two"));
  ASSERT_EQ(dev.sent.size(), 1u);  // one request for both
  MacAddr to;
  const ArpRepr req = sent_arp(dev.sent[0], &to);
  EXPECT_TRUE(to.is_broadcast());
  EXPECT_EQ(req, (ArpRepr{ArpOp::request, kOurMac, kOurIp, MacAddr{}, kPeerIp}));
  EXPECT_EQ(iface().stats().arp_requests_tx, 1u);
  EXPECT_EQ(iface().stats().tcp_tx, 0u);

  dev.sent.clear();
  feed(arp_frame(ArpOp::reply, kPeerMac, kPeerIp, kOurMac, kOurIp, kOurMac));
  ASSERT_EQ(dev.sent.size(), 2u);
  for (const auto& s : dev.sent) EXPECT_EQ(sent_eth_dst(s), kPeerMac);
  const std::string tail0(dev.sent[0].bytes.end() - 3, dev.sent[0].bytes.end());
  const std::string tail1(dev.sent[1].bytes.end() - 3, dev.sent[1].bytes.end());
  EXPECT_EQ(tail0, "one");
  EXPECT_EQ(tail1, "two");
  EXPECT_EQ(iface().stats().tcp_tx, 2u);
  // The queued copies are valid segments (checksums computed before queueing).
  Ipv4View ip;
  ASSERT_EQ(Ipv4View::check(bytes_view(dev.sent[1].bytes).subspan(14), ip), Ipv4ParseError::none);
  EXPECT_TRUE(tcp_checksum_ok(kOurIp, kPeerIp, ip.payload()));
}

TEST_F(ArpTest, RetriesThenGivesUpAndDropsQueuedFrames) {
  cfg.arp_retry = 1s;
  cfg.arp_max_retries = 3;
  ASSERT_TRUE(send("a"));
  ASSERT_TRUE(send("b"));
  EXPECT_EQ(dev.sent.size(), 1u);
  const Instant t0 = now;
  iface().on_timer(t0 + 999ms);
  EXPECT_EQ(dev.sent.size(), 1u);
  for (int i = 1; i <= 3; ++i) {
    iface().on_timer(t0 + std::chrono::seconds(i));
    EXPECT_EQ(dev.sent.size(), 1u + static_cast<std::size_t>(i));
  }
  EXPECT_EQ(iface().stats().arp_requests_tx, 4u);
  EXPECT_EQ(iface().stats().tx_arp_dropped, 0u);
  iface().on_timer(t0 + 4s);
  EXPECT_EQ(dev.sent.size(), 4u);
  EXPECT_EQ(iface().stats().tx_arp_dropped, 2u);
  // A late reply finds nothing waiting; being aimed at us, RFC 826 adds its sender, so
  // later traffic goes straight out.
  feed(arp_frame(ArpOp::reply, kPeerMac, kPeerIp, kOurMac, kOurIp, kOurMac));
  EXPECT_EQ(dev.sent.size(), 4u);
  ASSERT_TRUE(send("c"));
  EXPECT_EQ(sent_eth_dst(dev.sent.back()), kPeerMac);
}

TEST_F(ArpTest, FreshResolutionAfterFailure) {
  cfg.arp_max_retries = 0;
  ASSERT_TRUE(send("a"));
  iface().on_timer(now + cfg.arp_retry);
  EXPECT_EQ(iface().stats().tx_arp_dropped, 1u);
  ASSERT_TRUE(send("b"));
  EXPECT_EQ(iface().stats().arp_requests_tx, 2u);
}

TEST_F(ArpTest, PendingQueueIsBounded) {
  cfg.arp_pending_max = 2;
  EXPECT_TRUE(send("a"));
  EXPECT_TRUE(send("b"));
  EXPECT_FALSE(send("c"));
  EXPECT_EQ(iface().stats().tx_arp_dropped, 1u);
  feed(arp_frame(ArpOp::reply, kPeerMac, kPeerIp, kOurMac, kOurIp, kOurMac));
  EXPECT_EQ(iface().stats().tcp_tx, 2u);
}

// Hardening (issue 20): ARP requests from ever new senders fill the table up to its bound,
// and the ones past it are answered but not learned, counted.
TEST_F(ArpTest, AFloodOfNewSendersFillsTheTableToItsBoundAndIsCounted) {
  cfg.arp_max_entries = 8;
  for (std::uint8_t i = 0; i < 12; ++i) {
    const MacAddr m{{0x02, 0, 0, 0, 1, i}};
    feed(arp_frame(ArpOp::request, m, Ipv4Addr::from_octets(10, 0, 0, 100 + i), MacAddr{}, kOurIp,
                   MacAddr::broadcast()));
  }
  EXPECT_EQ(iface().stats().arp_replies_tx, 12u);
  EXPECT_EQ(iface().stats().arp_table_full, 4u);
}

TEST_F(ArpTest, EntriesExpire) {
  cfg.arp_timeout = 60s;
  learn_peer();
  iface().on_timer(now + 59s);
  ASSERT_TRUE(send("x"));
  EXPECT_EQ(sent_eth_dst(dev.sent.back()), kPeerMac);
  now = now + 60s;
  iface().on_timer(now);
  dev.sent.clear();
  ASSERT_TRUE(send("y"));
  MacAddr to;
  EXPECT_EQ(sent_arp(dev.sent.at(0), &to).op, ArpOp::request);
}

TEST_F(ArpTest, ExpiredEntryNotUsedEvenBeforeTimerRuns) {
  learn_peer();
  now = now + cfg.arp_timeout;
  ASSERT_TRUE(send("y"));
  MacAddr to;
  EXPECT_EQ(sent_arp(dev.sent.at(0), &to).op, ArpOp::request);
}

TEST_F(ArpTest, MergeUpdatesExistingEntryFromAnyPacket) {
  learn_peer();
  // A gratuitous ARP (target = sender) from the peer with a new MAC: not aimed at us, but
  // RFC 826's merge updates the entry we have.
  const MacAddr moved{{0x02, 0, 0, 0, 0, 0x22}};
  feed(arp_frame(ArpOp::request, moved, kPeerIp, MacAddr{}, kPeerIp, MacAddr::broadcast()));
  EXPECT_TRUE(dev.sent.empty());
  ASSERT_TRUE(send("x"));
  EXPECT_EQ(sent_eth_dst(dev.sent.back()), moved);
  // The same from a host we do not know adds nothing.
  feed(arp_frame(ArpOp::request, kGwMac, kGateway, MacAddr{}, kGateway, MacAddr::broadcast()));
  dev.sent.clear();
  ASSERT_TRUE(send("x", kRemoteIp));
  MacAddr to;
  const ArpRepr r = sent_arp(dev.sent.at(0), &to);
  EXPECT_EQ(r.op, ArpOp::request);
  EXPECT_EQ(r.tpa, kGateway);
}

TEST_F(ArpTest, MalformedAndForeignFramesDropped) {
  Bytes bad = arp_frame(ArpOp::request, kPeerMac, kPeerIp, MacAddr{}, kOurIp, MacAddr::broadcast());
  bad[14 + 1] = 6;  // hardware type IEEE 802
  feed(bad);
  // Unicast to another MAC.
  feed(arp_frame(ArpOp::request, kPeerMac, kPeerIp, MacAddr{}, kOurIp, kGwMac));
  // Truncated Ethernet, VLAN-tagged, unknown EtherType (IPv6).
  feed(Bytes(10, 0));
  feed(eth_frame(kOurMac, kPeerMac, ethertype::vlan, Bytes(46, 0)));
  feed(eth_frame(kOurMac, kPeerMac, 0x86dd, Bytes(46, 0)));
  EXPECT_TRUE(dev.sent.empty());
  EXPECT_EQ(iface().stats().rx_frames, 5u);
  EXPECT_EQ(iface().stats().rx_dropped, 5u);
}

TEST_F(ArpTest, OffLinkGoesThroughGatewayAndNoRouteFails) {
  ASSERT_TRUE(send("x", kRemoteIp));
  MacAddr to;
  EXPECT_EQ(sent_arp(dev.sent.at(0), &to).tpa, kGateway);
  feed(arp_frame(ArpOp::reply, kGwMac, kGateway, kOurMac, kOurIp, kOurMac));
  EXPECT_EQ(sent_eth_dst(dev.sent.back()), kGwMac);
  // The frame still names the remote host at the IP layer.
  Ipv4View ip;
  ASSERT_EQ(Ipv4View::check(bytes_view(dev.sent.back().bytes).subspan(14), ip),
            Ipv4ParseError::none);
  EXPECT_EQ(ip.dst(), kRemoteIp);

  EXPECT_FALSE(send("x", Ipv4Addr::from_octets(10, 0, 0, 255)));  // subnet broadcast
  EXPECT_FALSE(send("x", Ipv4Addr::from_octets(255, 255, 255, 255)));
  EXPECT_FALSE(send("x", Ipv4Addr::from_octets(224, 0, 0, 1)));
  EXPECT_FALSE(send("x", kOurIp));
  EXPECT_EQ(iface().stats().tx_no_route, 4u);
}

TEST_F(ArpTest, NoGatewayMeansOffLinkUnreachable) {
  cfg.gateway = Ipv4Addr{};
  EXPECT_FALSE(send("x", kRemoteIp));
  EXPECT_EQ(iface().stats().tx_no_route, 1u);
  EXPECT_TRUE(dev.sent.empty());
}

}  // namespace
}  // namespace esock::tcp::test
