// Data transfer: segmentation, Nagle (RFC 9293 3.7.4), delayed ACKs (3.8.6.3, RFC 5681
// 4.2), window scaling (RFC 7323 2), flow control and window updates (3.8.6.2), out-of-order
// data with SACK blocks (RFC 2018 4), upper-layer placement of out-of-order bytes, zero-copy
// send buffers and record-aligned segmentation.
#include "tcb_script.h"

namespace esock::tcp::test {
namespace {

using TcbData = TcbScript;

TEST_F(TcbData, BulkSendIsCutAtTheEffectiveMssWithinTheInitialWindow) {
  establish_active();
  app_send(100000);
  std::vector<Emitted> out = pop_all();
  ASSERT_EQ(out.size(), 10u);  // RFC 6928 initial window: 10 segments
  std::uint32_t seq = iss + 1;
  for (const Emitted& e : out) {
    EXPECT_EQ(e.hdr.seq, seq);
    EXPECT_EQ(e.len(), 1448u);
    for (std::uint32_t i = 0; i < e.len(); ++i)
      ASSERT_EQ(e.payload[i], static_cast<std::uint8_t>(seq - iss - 1 + i));
    seq += e.len();
  }
}

TEST_F(TcbData, AckedDataLeavesTheBufferAndOpensTheCongestionWindow) {
  establish_active();
  app_send(100000);
  pop_all();
  std::uint32_t cwnd0 = tcb->info().cwnd;
  ack_up_to(iss + 1 + 2 * 1448);
  EXPECT_EQ(user.acked, 2u * 1448);
  EXPECT_GT(tcb->info().cwnd, cwnd0);  // slow start
  EXPECT_GE(pop_all().size(), 3u);
}

TEST_F(TcbData, OneSegmentIsAckedAfterTheDelayTwoAtOnce) {
  establish_active();
  inject_data(1000);
  EXPECT_TRUE(idle());
  advance(39ms);
  EXPECT_TRUE(idle());
  advance(2ms);
  Emitted ack = pop();
  EXPECT_EQ(ack.hdr.ack, peer_nxt);
  inject_data(1000);
  inject_data(1000);
  Emitted ack2 = pop();  // every second segment (RFC 5681 4.2)
  EXPECT_EQ(ack2.hdr.ack, peer_nxt);
}

TEST_F(TcbData, NagleHoldsSmallSegmentsWhileDataIsUnacknowledged) {
  establish_active();
  app_send(10);
  EXPECT_EQ(pop().len(), 10u);
  app_send(10);
  app_send(10);
  EXPECT_TRUE(idle());
  ack_up_to(iss + 11);
  EXPECT_EQ(pop().len(), 20u);  // coalesced
}

TEST_F(TcbData, NodelaySendsSmallSegmentsAtOnce) {
  cfg.nodelay = true;
  establish_active();
  app_send(10);
  app_send(10);
  EXPECT_EQ(pop_all().size(), 2u);
}

TEST_F(TcbData, PeerWindowIsScaledAndRespected) {
  peer.wscale = 1;
  peer_window = 2000;  // 4000 bytes after scaling
  establish_active();
  ack_up_to(iss + 1);  // a window update from the peer with the scaled window
  EXPECT_EQ(tcb->info().snd_wnd, 4000u);
  app_send(10000);
  std::vector<Emitted> out = pop_all();
  std::uint32_t total = 0;
  for (auto& e : out) total += e.len();
  // Two full segments fit; the 1104-octet rest would be a silly small segment (less than
  // half the largest window offered), so it waits for an ACK (RFC 9293 3.8.6.2.1).
  EXPECT_EQ(total, 2u * 1448);
  ack_up_to(iss + 1 + 2 * 1448);
  total = 0;
  for (auto& e : pop_all()) total += e.len();
  EXPECT_EQ(total, 2u * 1448);
}

TEST_F(TcbData, ReceiveWindowClosesWhenTheApplicationDoesNotReadAndReopens) {
  cfg.rcv_buf = 8 * 1448;
  establish_active();
  for (int i = 0; i < 8; ++i) inject_data(1448);
  pop_all();
  ack_up_to(iss + 1);
  inject_data(1448);  // beyond the window: dropped, answered with an ACK
  Emitted ack = pop();
  EXPECT_EQ(ack.hdr.window, 0);
  EXPECT_EQ(tcb->recv_queue().size(), 8u * 1448);
  peer_nxt -= 1448;
  std::vector<std::uint8_t> buf(4 * 1448);
  EXPECT_EQ(tcb->recv(now(), buf), buf.size());
  Emitted update = pop();  // the window reopened by more than two segments
  EXPECT_EQ(std::uint32_t{update.hdr.window} << 0, 4u * 1448);
}

TEST_F(TcbData, OutOfOrderSegmentsGetSackBlocksMostRecentFirst) {
  establish_active();
  std::uint32_t s = peer_nxt;
  inject_data(100, s + 200);
  Emitted a1 = pop();
  EXPECT_EQ(a1.hdr.ack, s);
  ASSERT_EQ(a1.hdr.options.sack_count, 1);
  EXPECT_EQ(a1.hdr.options.sacks[0], (SackBlock{s + 200, s + 300}));
  inject_data(100, s + 400);
  Emitted a2 = pop();
  ASSERT_EQ(a2.hdr.options.sack_count, 2);
  EXPECT_EQ(a2.hdr.options.sacks[0], (SackBlock{s + 400, s + 500}));
  EXPECT_EQ(a2.hdr.options.sacks[1], (SackBlock{s + 200, s + 300}));
  inject_data(200, s);  // fills 0..199: 0..299 now in order
  Emitted a3 = pop();
  EXPECT_EQ(a3.hdr.ack, s + 300);
  ASSERT_EQ(a3.hdr.options.sack_count, 1);
  EXPECT_EQ(tcb->recv_queue().size(), 300u);
  std::vector<std::uint8_t> got(300);
  tcb->recv(now(), got);
  for (std::uint32_t i = 0; i < 300; ++i) ASSERT_EQ(got[i], static_cast<std::uint8_t>((s + i) * 7));
}

TEST_F(TcbData, PlacedOutOfOrderBytesAreRememberedAsRangesOnly) {
  establish_active();
  user.place_ooo = true;
  std::uint32_t s = peer_nxt;
  inject_data(1000, s + 1000);
  EXPECT_EQ(tcb->reassembly().bytes_held(), 0u);  // TCP kept only the range
  Emitted a = pop();
  ASSERT_EQ(a.hdr.options.sack_count, 1);
  EXPECT_EQ(a.hdr.options.sacks[0], (SackBlock{s + 1000, s + 2000}));
  inject_data(1000, s);
  EXPECT_EQ(tcb->rcv_nxt(), s + 2000);
  ASSERT_EQ(user.delivered.size(), 1u);
  EXPECT_EQ(user.delivered[0], std::make_pair(s + 1000, 1000u));
  EXPECT_EQ(tcb->recv_queue().size(), 1000u);  // only the in-order part is queued
  EXPECT_EQ(tcb->stats().peak_ooo_bytes, 0u);
}

// 3000 octets sent by reference; `released` counts the releases of its holder.
struct CountedRegion {
  static inline int released = 0;
  CountedRegion() { released = 0; }
  BufHolder h{0, [](BufHolder*) { ++released; }};
  std::vector<std::uint8_t> bytes = std::vector<std::uint8_t>(3000, 0xab);
  bool send(Tcb& tcb, Instant now) { return tcb.send_ref(now, bytes, BufRef(&h)); }
};

TEST_F(TcbData, ZeroCopySendKeepsTheBufferUntilAcked) {
  establish_active();
  CountedRegion region;
  int& released = CountedRegion::released;
  ASSERT_TRUE(region.send(*tcb, now()));
  std::vector<Emitted> out = pop_all();
  ASSERT_EQ(out.size(), 2u);  // Nagle holds the 104-octet tail while data is in flight
  EXPECT_EQ(out[0].payload[0], 0xab);
  EXPECT_EQ(released, 0);
  ack_up_to(iss + 1 + 2896);
  EXPECT_EQ(pop().len(), 104u);
  EXPECT_EQ(released, 0);  // 104 bytes still unacknowledged
  ack_up_to(iss + 3001);
  EXPECT_EQ(released, 1);
}

// RFC 9293 3.10.7.4: a reset flushes pending sends, so nothing will be retransmitted and
// memory sent by reference is released at once, not when the TCB is reaped (issue 20,
// item 1: an ESTP writer waits for exactly this before it gets its buffer back).
TEST_F(TcbData, AResetReleasesZeroCopyBuffersAtOnce) {
  establish_active();
  CountedRegion region;
  int& released = CountedRegion::released;
  ASSERT_TRUE(region.send(*tcb, now()));
  pop_all();
  EXPECT_EQ(released, 0);
  inject(seg(tcp_flag::rst, peer_nxt, 0));
  EXPECT_EQ(tcb->state(), TcpState::closed);
  EXPECT_EQ(released, 1);
}

TEST_F(TcbData, AFullDeviceStopsTransmissionWithoutLosingSequenceSpace) {
  establish_active();
  sink.refuse = true;
  app_send(5000);
  EXPECT_TRUE(tcb->device_blocked());
  EXPECT_EQ(tcb->snd_nxt(), iss + 1);  // nothing counted as sent
  sink.refuse = false;
  tcb->on_device_ready(now());
  std::vector<Emitted> out = pop_all();
  ASSERT_EQ(out.size(), 3u);  // three full segments; Nagle holds the 656-octet rest
  EXPECT_EQ(out[0].hdr.seq, iss + 1);
  EXPECT_EQ(tcb->stats().retransmits, 0u);
}

TEST_F(TcbData, RecordsAreNeverSplitAcrossSegmentsWhenTheyFit) {
  cfg.nodelay = true;
  establish_active();
  std::vector<std::uint8_t> rec(1000, 1);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(tcb->send_ref(now(), rec, BufRef(), true));
  std::vector<Emitted> out = pop_all();
  ASSERT_EQ(out.size(), 4u);
  for (auto& e : out) EXPECT_EQ(e.len(), 1000u);  // not 1448 + 1448 + 1104
}

}  // namespace
}  // namespace esock::tcp::test
