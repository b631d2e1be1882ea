// IPv4 fragment reassembly, directly and through the interface: in order, reverse,
// duplicates, overlaps, inconsistent lengths, timeout, the memory bound.
#include "tcp/net/ipv4_reassembly.h"

#include <algorithm>
#include <random>

#include "net_fixture.h"

namespace esock::tcp::test {
namespace {

// Fragments of the IPv4 datagram carrying `l4`, cut at the given data offsets (multiples
// of 8), as IPv4 packets.
std::vector<Bytes> fragment(const Bytes& l4, std::vector<std::size_t> cuts, std::uint16_t id = 9,
                            std::uint8_t proto = ip_proto_tcp) {
  cuts.insert(cuts.begin(), 0);
  cuts.push_back(l4.size());
  std::vector<Bytes> out;
  for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
    const Bytes part(l4.begin() + static_cast<std::ptrdiff_t>(cuts[i]),
                     l4.begin() + static_cast<std::ptrdiff_t>(cuts[i + 1]));
    out.push_back(ipv4_packet(kPeerIp, kOurIp, proto, part, id, static_cast<std::uint16_t>(cuts[i]),
                              i + 2 < cuts.size()));
  }
  return out;
}

Bytes frame(const Bytes& ip) {
  return eth_frame(kOurMac, kPeerMac, ethertype::ipv4, ip);
}

std::string text(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + i % 26);
  return s;
}

class ReassemblyTest : public NetTest {
 protected:
  Bytes segment(std::size_t n) { return tcp_segment(kPeerIp, kOurIp, sample_hdr(), text(n)); }
};

TEST_F(ReassemblyTest, InOrder) {
  for (const Bytes& f : fragment(segment(100), {40, 80})) feed(frame(f));
  ASSERT_EQ(sink.segs.size(), 1u);
  EXPECT_EQ(sink.segs[0].payload, text(100));
  EXPECT_TRUE(sink.segs[0].has_ref);
  EXPECT_EQ(iface().stats().ip_fragments_rx, 3u);
  EXPECT_EQ(iface().stats().ip_reassembled, 1u);
  EXPECT_EQ(iface().stats().tcp_rx, 1u);
}

TEST_F(ReassemblyTest, ReverseAndShuffledWithDuplicates) {
  auto frags = fragment(segment(300), {8, 64, 136, 200, 304});
  std::reverse(frags.begin(), frags.end());
  for (const Bytes& f : frags) feed(frame(f));
  ASSERT_EQ(sink.segs.size(), 1u);

  std::mt19937 rng(815);
  frags = fragment(segment(300), {8, 64, 136, 200, 304}, 10);
  frags.push_back(frags[2]);  // exact duplicates are ignored, not fatal
  frags.push_back(frags[0]);
  std::shuffle(frags.begin(), frags.end(), rng);
  for (const Bytes& f : frags) feed(frame(f));
  ASSERT_EQ(sink.segs.size(), 2u);
  EXPECT_EQ(sink.segs[1].payload, text(300));
  EXPECT_EQ(iface().stats().ip_reassembly_dropped, 0u);
}

TEST_F(ReassemblyTest, DeviceVerdictIgnoredForReassembledDatagram) {
  Bytes seg = segment(100);
  seg.back() ^= 1;  // a corrupt TCP checksum; the device vouches for each fragment's L4
  for (const Bytes& f : fragment(seg, {48})) feed(frame(f), rx_csum::l4_good);
  EXPECT_TRUE(sink.segs.empty());
  EXPECT_EQ(iface().stats().tcp_bad_csum, 1u);
}

TEST_F(ReassemblyTest, OverlapDropsWholeDatagramIncludingLaterFragments) {
  const Bytes seg = segment(100);
  const auto a = fragment(seg, {48});      // [0,48) [48,132)
  const auto b = fragment(seg, {40, 96});  // [40,96) overlaps
  feed(frame(a[0]));
  feed(frame(b[1]));
  EXPECT_EQ(iface().stats().ip_reassembly_dropped, 1u);
  feed(frame(a[1]));  // would have completed it
  EXPECT_TRUE(sink.segs.empty());
  EXPECT_EQ(iface().stats().ip_reassembly_dropped, 2u);
  // After the lifetime, the same id may be reused.
  now = now + cfg.reassembly_timeout;
  iface().on_timer(now);
  for (const Bytes& f : a) feed(frame(f));
  EXPECT_EQ(sink.segs.size(), 1u);
}

TEST_F(ReassemblyTest, InconsistentLengthsDrop) {
  const Bytes seg = segment(100);
  Ipv4Reassembly r(30s, 1 << 20);
  Ipv4Reassembly::Datagram d;
  auto add = [&](const Bytes& pkt) {
    Ipv4View v;
    EXPECT_EQ(Ipv4View::check(pkt, v), Ipv4ParseError::none);
    return r.add(v, now, &d);
  };
  using O = Ipv4Reassembly::Outcome;
  // Two different last fragments.
  EXPECT_EQ(add(fragment(seg, {48}, 1)[1]), O::pending);
  EXPECT_EQ(add(fragment(Bytes(140, 1), {56}, 1)[1]), O::dropped);
  // A middle fragment past the end the last one gave.
  EXPECT_EQ(add(fragment(seg, {48}, 2)[1]), O::pending);
  EXPECT_EQ(add(fragment(Bytes(200, 1), {128, 192}, 2)[1]), O::dropped);
  // A non-final fragment whose length is not a multiple of 8 (RFC 791).
  EXPECT_EQ(add(ipv4_packet(kPeerIp, kOurIp, ip_proto_tcp, Bytes(12, 0), 3, 0, true)), O::dropped);
  // A last fragment that ends before data already held.
  EXPECT_EQ(add(fragment(seg, {48, 96}, 4)[1]), O::pending);
  EXPECT_EQ(add(ipv4_packet(kPeerIp, kOurIp, ip_proto_tcp, Bytes(8, 0), 4, 40, false)), O::dropped);
  // Zero-length fragment: carries nothing.
  EXPECT_EQ(add(ipv4_packet(kPeerIp, kOurIp, ip_proto_tcp, Bytes(), 5, 64, true)), O::dropped);
  EXPECT_EQ(r.expire(now + 30s), 0u);  // only dead ones (and none pending) were left
  EXPECT_EQ(r.bytes_held(), 0u);
  EXPECT_EQ(r.datagrams(), 0u);
}

TEST_F(ReassemblyTest, KeyedBySourceDestinationIdAndProtocol) {
  const Bytes seg = segment(64);
  const auto f1 = fragment(seg, {32}, 7);
  const auto other_id = fragment(seg, {32}, 8);
  const auto other_proto = fragment(seg, {32}, 7, ip_proto_udp);
  feed(frame(f1[0]));
  feed(frame(other_id[1]));
  feed(frame(other_proto[1]));
  EXPECT_TRUE(sink.segs.empty());
  feed(frame(f1[1]));
  EXPECT_EQ(sink.segs.size(), 1u);
}

TEST_F(ReassemblyTest, TimeoutDiscardsPartialDatagram) {
  cfg.reassembly_timeout = 30s;
  const auto frags = fragment(segment(100), {48});
  feed(frame(frags[0]));
  iface().on_timer(now + 29s);
  EXPECT_EQ(iface().stats().ip_reassembly_dropped, 0u);
  now = now + 30s;
  iface().on_timer(now);
  EXPECT_EQ(iface().stats().ip_reassembly_dropped, 1u);
  feed(frame(frags[1]));  // starts a new datagram that never completes
  EXPECT_TRUE(sink.segs.empty());
}

TEST_F(ReassemblyTest, MemoryBoundDropsDatagramsBeyondIt) {
  cfg.reassembly_max_bytes = 1024;
  const auto big = fragment(segment(1500), {512, 1024});
  feed(frame(big[0]));  // 512 + bookkeeping fits
  feed(frame(big[1]));  // another 512 does not: the datagram is given up
  EXPECT_EQ(iface().stats().ip_reassembly_dropped, 1u);
  feed(frame(big[2]));
  EXPECT_TRUE(sink.segs.empty());
  // Small datagrams still get through.
  for (const Bytes& f : fragment(segment(100), {48}, 77)) feed(frame(f));
  EXPECT_EQ(sink.segs.size(), 1u);
}

TEST(Ipv4Reassembly, AccountingReturnsToZero) {
  Ipv4Reassembly r(10s, 1 << 16);
  Ipv4Reassembly::Datagram d;
  const Bytes l4(64, 0x42);
  const auto frags = fragment(l4, {16, 32});
  Ipv4View v;
  ASSERT_EQ(Ipv4View::check(frags[0], v), Ipv4ParseError::none);
  EXPECT_EQ(r.add(v, Instant{}, &d), Ipv4Reassembly::Outcome::pending);
  EXPECT_GT(r.bytes_held(), 16u);
  ASSERT_EQ(Ipv4View::check(frags[2], v), Ipv4ParseError::none);
  EXPECT_EQ(r.add(v, Instant{}, &d), Ipv4Reassembly::Outcome::pending);
  ASSERT_EQ(Ipv4View::check(frags[1], v), Ipv4ParseError::none);
  ASSERT_EQ(r.add(v, Instant{}, &d), Ipv4Reassembly::Outcome::complete);
  EXPECT_EQ(Bytes(d.payload.begin(), d.payload.end()), l4);
  EXPECT_EQ(r.bytes_held(), 0u);
  EXPECT_EQ(r.datagrams(), 0u);
  ASSERT_EQ(Ipv4View::check(frags[0], v), Ipv4ParseError::none);
  r.add(v, Instant{}, &d);
  EXPECT_EQ(r.expire(Instant{} + 10s), 1u);
  EXPECT_EQ(r.bytes_held(), 0u);
}

}  // namespace
}  // namespace esock::tcp::test
