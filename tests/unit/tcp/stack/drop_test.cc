// Drop reasons the stack counts (drop_reason.h): segments that fail the interface's checks,
// find no connection (RFC 9293 3.10.7.1) or reach a listener (3.10.7.2), and the sum over
// the connections' own counters, which outlives the connections. One stack over a fake
// device; each test feeds it crafted frames and checks that one counter, and no other,
// moved.
#include <gtest/gtest.h>

#include <memory>

#include "../net/net_fixture.h"
#include "base/endian.h"
#include "tcp/stack/stack.h"

namespace esock::tcp::test {
namespace {

constexpr std::uint16_t kPeerPort = 40000;
constexpr std::uint16_t kPort = 80;

class StackDrop : public ::testing::Test {
 protected:
  StackDrop() {
    StackConfig c;
    c.iface.ip = kOurIp;
    c.iface.prefix_len = 24;
    c.isn_key = IsnGenerator::Key{3};
    stack = std::make_unique<Stack>(dev, c, now);
  }
  // A segment from the peer to `port`, without options (so no timestamps are negotiated).
  static TcpRepr hdr(std::uint8_t flags, std::uint32_t seq = 1000, std::uint32_t ack = 0,
                     std::uint16_t port = kPort, std::uint16_t from = kPeerPort) {
    TcpRepr h;
    h.src_port = from;
    h.dst_port = port;
    h.seq = seq;
    h.ack = ack;
    h.flags = flags;
    h.window = 65535;
    return h;
  }
  void feed(Bytes frame, std::uint8_t csum = 0) {
    dev.rx.emplace_back(std::move(frame), csum);
    now += 1ms;
    stack->poll(now);
  }
  void feed(const TcpRepr& h, const std::string& data = {}) { feed(peer_tcp_frame(data, h)); }
  Listener* listen(std::size_t syn_backlog = 16) {
    int err = 0;
    Listener* l = stack->listen(kPort, 16, &err, syn_backlog);
    EXPECT_NE(l, nullptr);
    return l;
  }
  // `r` moved by n and no other reason moved at all.
  void expect_only(DropReason r, std::uint64_t n = 1) {
    const StackStats s = stack->stats();
    EXPECT_EQ(s.drops[r], n) << to_string(r) << "; counted: " << to_string(s.drops);
    EXPECT_EQ(s.drops.total(), n) << "counted: " << to_string(s.drops);
  }

  FakeDevice dev;
  Instant now{1'000'000'000};
  std::unique_ptr<Stack> stack;
};

TEST_F(StackDrop, BadChecksum) {
  Bytes f = peer_tcp_frame("hello", hdr(tcp_flag::ack));
  f.back() ^= 1;
  feed(f);
  expect_only(DropReason::bad_checksum);
  EXPECT_EQ(stack->iface().stats().tcp_bad_csum, 1u);  // the same event, from its source
}

TEST_F(StackDrop, BadHeader) {
  Bytes f = peer_tcp_frame("", hdr(tcp_flag::ack));
  f[eth_header_len + ipv4_min_header + 12] = 4 << 4;  // data offset 4: below the minimum
  feed(f, rx_csum::l4_good);  // the device vouched for the checksum: only the header fails
  expect_only(DropReason::bad_header);
  EXPECT_EQ(stack->iface().stats().tcp_bad_header, 1u);
}

TEST_F(StackDrop, NoConnectionAndNoListener) {
  feed(hdr(tcp_flag::ack, 1000, 5000));
  expect_only(DropReason::no_connection);
  EXPECT_EQ(stack->stats().segments_no_connection, 1u);
}

TEST_F(StackDrop, ResetToAClosedPortIsDroppedUnanswered) {
  feed(hdr(tcp_flag::rst));
  expect_only(DropReason::no_connection);
}

TEST_F(StackDrop, ResetToAListener) {
  listen();
  feed(hdr(tcp_flag::rst));
  expect_only(DropReason::listen_rst);
}

TEST_F(StackDrop, AckToAListener) {
  listen();
  feed(hdr(tcp_flag::ack, 1000, 5000));
  expect_only(DropReason::listen_ack);
  EXPECT_EQ(stack->stats().segments_no_connection, 1u);
}

TEST_F(StackDrop, NeitherSynNorAckToAListener) {
  listen();
  feed(hdr(tcp_flag::fin), "data");
  expect_only(DropReason::listen_no_syn);
  EXPECT_EQ(stack->connection_count(), 0u);
}

TEST_F(StackDrop, TextInASynToAListener) {
  listen();
  feed(hdr(tcp_flag::syn), "early data");
  EXPECT_EQ(stack->connection_count(), 1u);  // the SYN itself opens a connection
  expect_only(DropReason::syn_data);
}

TEST_F(StackDrop, SynForATupleHeldByAnUnreleasedClosedConnection) {
  int err = 0;
  Connection* c = stack->connect(kPeerIp, kPeerPort, &err, nullptr, kPort);
  ASSERT_NE(c, nullptr);
  // The peer refuses: the connection is CLOSED but its user has not released it.
  feed(hdr(tcp_flag::rst | tcp_flag::ack, 0, c->tcb().iss() + 1));
  ASSERT_EQ(c->state(), TcpState::closed);
  listen();
  feed(hdr(tcp_flag::syn));
  expect_only(DropReason::listen_tuple_busy);
}

TEST_F(StackDrop, ConnectionDropsAreSummedAndOutliveTheConnection) {
  Listener* l = listen();
  feed(hdr(tcp_flag::syn, 1000));
  ASSERT_EQ(stack->connection_count(), 1u);
  feed(hdr(tcp_flag::psh, 1001), "no ack bit");  // SYN-RECEIVED: 3.10.7.4 fifth
  expect_only(DropReason::no_ack);
  stack->close_listener(l);  // resets and frees the half-open connection
  EXPECT_EQ(stack->connection_count(), 0u);
  expect_only(DropReason::no_ack);
}

TEST_F(StackDrop, AnEvictedHalfOpenConnectionKeepsItsDrops) {
  StackConfig c;  // eviction happens only without SYN cookies
  c.iface.ip = kOurIp;
  c.iface.prefix_len = 24;
  c.isn_key = IsnGenerator::Key{3};
  c.syn_cookies = false;
  stack = std::make_unique<Stack>(dev, c, now);
  listen(1);
  feed(hdr(tcp_flag::syn, 1000));
  feed(hdr(tcp_flag::psh, 1001), "no ack bit");
  feed(hdr(tcp_flag::syn, 7000, 0, kPort, kPeerPort + 1));  // evicts the first
  EXPECT_EQ(stack->stats().half_open_evicted, 1u);
  EXPECT_EQ(stack->connection_count(), 1u);
  expect_only(DropReason::no_ack);
}

// A device that stays full must not make the stack's retry list grow: every refused
// connection was queued again once per refused segment and retried once per queued copy,
// so the list doubled every poll (2^20 entries after 20 polls; found by fuzz_tcp_listen).
TEST_F(StackDrop, AFullDeviceRetriesEachConnectionOncePerPoll) {
  Listener* l = listen();
  // The peer's MAC first (its ARP request), so the SYN-ACK leaves at once.
  feed(arp_frame(ArpOp::request, kPeerMac, kPeerIp, MacAddr{}, kOurIp, MacAddr::broadcast()));
  dev.sent.clear();
  feed(hdr(tcp_flag::syn, 1000));
  ASSERT_EQ(dev.sent.size(), 1u);
  // Our SYN-ACK's sequence number, from the frame: Ethernet, IPv4 (no options), TCP.
  const Bytes& synack = dev.sent.back().bytes;
  const std::uint32_t iss = load_be32(&synack[eth_header_len + ipv4_min_header + 4]);
  feed(hdr(tcp_flag::ack, 1001, iss + 1));
  Connection* c = stack->accept(l);
  ASSERT_NE(c, nullptr);
  dev.full = true;
  const std::string data(4000, 'x');
  c->send({reinterpret_cast<const std::uint8_t*>(data.data()), data.size()});
  // Out of order (a hole at 1001): an ACK is due at once (RFC 5681 4.2), so each round the
  // connection is refused twice, for its data and for the ACK.
  feed(hdr(tcp_flag::ack | tcp_flag::psh, 1101, iss + 1), "an ACK is due");
  std::uint64_t refused = 0;
  for (int i = 0; i < 24; ++i) {
    now += 1ms;
    const std::uint64_t before = dev.stats().tx_dropped;
    stack->poll(now);
    refused = dev.stats().tx_dropped - before;
    ASSERT_LE(refused, 4u) << "poll " << i;
  }
  dev.full = false;
  now += 1ms;
  stack->poll(now);
  EXPECT_GT(dev.sent.size(), 1u);  // the data goes out once the device has room
}

}  // namespace
}  // namespace esock::tcp::test
