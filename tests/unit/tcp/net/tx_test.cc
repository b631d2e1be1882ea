// TCP transmit: frame layout, software checksums, offload conventions, piece limits,
// device refusal, the MTU.
#include "net_fixture.h"

namespace esock::tcp::test {
namespace {

class TxTest : public NetTest {
 protected:
  // Parses a sent TCP frame down to its segment.
  void parse(const FakeDevice::Sent& s, Ipv4View* ip, TcpRepr* hdr, std::string* data,
             bool verify_ip = true) {
    EthernetView eth;
    ASSERT_EQ(EthernetView::check(s.bytes, eth), EthParseError::none);
    EXPECT_EQ(eth.src(), kOurMac);
    EXPECT_EQ(eth.ethertype(), ethertype::ipv4);
    ASSERT_EQ(Ipv4View::check(eth.payload(), *ip, verify_ip), Ipv4ParseError::none);
    bytes_view payload;
    ASSERT_EQ(parse_tcp(ip->payload(), hdr, &payload), TcpParseError::none);
    data->assign(payload.begin(), payload.end());
  }
  bool send_pieces(const std::vector<std::string>& parts) {
    std::vector<TxPiece> pieces;
    for (const auto& p : parts)
      pieces.push_back(
          {bytes_view(reinterpret_cast<const std::uint8_t*>(p.data()), p.size()), BufRef()});
    return iface().send_tcp(now, kPeerIp, sample_hdr(), pieces);
  }
};

TEST_F(TxTest, SoftwareChecksumsDfAndIncrementingId) {
  learn_peer();
  ASSERT_TRUE(send_pieces({"hel", "l", "o, world"}));  // odd-length pieces
  ASSERT_TRUE(send_pieces({}));
  ASSERT_EQ(dev.sent.size(), 2u);
  Ipv4View ip;
  TcpRepr h;
  std::string data;
  parse(dev.sent[0], &ip, &h, &data);
  EXPECT_EQ(ip.src(), kOurIp);
  EXPECT_EQ(ip.dst(), kPeerIp);
  EXPECT_TRUE(ip.dont_frag());
  EXPECT_EQ(ip.ttl(), 64);
  EXPECT_EQ(ip.protocol(), ip_proto_tcp);
  EXPECT_EQ(h, sample_hdr());
  EXPECT_EQ(data, "hello, world");
  EXPECT_TRUE(tcp_checksum_ok(kOurIp, kPeerIp, ip.payload()));
  EXPECT_EQ(dev.sent[0].pieces, 3u);  // the caller's pieces are handed on, not copied
  EXPECT_FALSE(dev.sent[0].offload.ip_csum);
  EXPECT_FALSE(dev.sent[0].offload.l4_csum);
  EXPECT_EQ(dev.sent[0].offload.l2_len, 14);
  EXPECT_EQ(dev.sent[0].offload.l3_len, 20);
  EXPECT_EQ(dev.sent[0].offload.l4_len, 32);
  const std::uint16_t id0 = ip.id();
  parse(dev.sent[1], &ip, &h, &data);
  EXPECT_EQ(ip.id(), static_cast<std::uint16_t>(id0 + 1));
  EXPECT_TRUE(tcp_checksum_ok(kOurIp, kPeerIp, ip.payload()));
  EXPECT_EQ(iface().stats().tcp_tx, 2u);
}

TEST_F(TxTest, OffloadLeavesChecksumsToTheDevice) {
  dev.caps_.tx_ip_csum = true;
  dev.caps_.tx_l4_csum = true;
  learn_peer();
  ASSERT_TRUE(send_pieces({"data"}));
  Ipv4View ip;
  TcpRepr h;
  std::string data;
  parse(dev.sent.at(0), &ip, &h, &data, false);
  EXPECT_EQ(load_be16(ip.header().data() + 10), 0);  // IPv4 checksum left zero
  // device.h: the TCP checksum field holds the pseudo-header sum, uncomplemented.
  EXPECT_EQ(load_be16(ip.payload().data() + 16),
            ipv4_pseudo_header_sum(kOurIp, kPeerIp, ip_proto_tcp,
                                   static_cast<std::uint16_t>(ip.payload().size())));
  EXPECT_TRUE(dev.sent[0].offload.ip_csum);
  EXPECT_TRUE(dev.sent[0].offload.l4_csum);
  EXPECT_EQ(dev.sent[0].offload.tso_segsz, 0);
}

TEST_F(TxTest, OnlyIpOffload) {
  dev.caps_.tx_ip_csum = true;
  learn_peer();
  ASSERT_TRUE(send_pieces({"data"}));
  Ipv4View ip;
  TcpRepr h;
  std::string data;
  parse(dev.sent.at(0), &ip, &h, &data, false);
  EXPECT_EQ(load_be16(ip.header().data() + 10), 0);
  EXPECT_TRUE(tcp_checksum_ok(kOurIp, kPeerIp, ip.payload()));
  EXPECT_FALSE(dev.sent[0].offload.l4_csum);
}

TEST_F(TxTest, TooManyPiecesAreJoinedIntoOne) {
  dev.caps_.max_tx_pieces = 2;
  learn_peer();
  ASSERT_TRUE(send_pieces({"ab", "c", "def"}));
  ASSERT_EQ(dev.sent.size(), 1u);
  EXPECT_EQ(dev.sent[0].pieces, 1u);
  EXPECT_TRUE(dev.sent[0].attached);  // a heap block the device may keep
  Ipv4View ip;
  TcpRepr h;
  std::string data;
  parse(dev.sent[0], &ip, &h, &data);
  EXPECT_EQ(data, "abcdef");
  EXPECT_TRUE(tcp_checksum_ok(kOurIp, kPeerIp, ip.payload()));
}

TEST_F(TxTest, DeviceFullIsReported) {
  learn_peer();
  dev.full = true;
  EXPECT_FALSE(send_pieces({"x"}));
  EXPECT_EQ(iface().stats().tx_device_full, 1u);
  EXPECT_EQ(iface().stats().tcp_tx, 0u);
}

TEST_F(TxTest, NeverLargerThanTheMtu) {
  dev.caps_.mtu = 1500;
  learn_peer();
  const std::string fits(1500 - 20 - 32, 'x');  // sample_hdr() has 12 octets of options
  ASSERT_TRUE(send_pieces({fits}));
  EXPECT_EQ(dev.sent.back().bytes.size(), 1514u);
  EXPECT_FALSE(send_pieces({fits + "y"}));
  EXPECT_EQ(iface().stats().tx_too_big, 1u);
  EXPECT_EQ(iface().mss(), 1460);
}

TEST_F(TxTest, PendingFramesKeepTheirOffload) {
  dev.caps_.tx_ip_csum = true;
  dev.caps_.tx_l4_csum = true;
  ASSERT_TRUE(send_pieces({"queued"}));  // unresolved: copied into the ARP queue
  dev.sent.clear();
  feed(arp_frame(ArpOp::reply, kPeerMac, kPeerIp, kOurMac, kOurIp, kOurMac));
  ASSERT_EQ(dev.sent.size(), 1u);
  EXPECT_TRUE(dev.sent[0].offload.l4_csum);
  EXPECT_EQ(dev.sent[0].offload.l4_len, 32);
  Ipv4View ip;
  TcpRepr h;
  std::string data;
  parse(dev.sent[0], &ip, &h, &data, false);
  EXPECT_EQ(data, "queued");
}

}  // namespace
}  // namespace esock::tcp::test
