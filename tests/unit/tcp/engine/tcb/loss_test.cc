// Loss: retransmission timeout with backoff (RFC 6298 5), fast retransmit and NewReno
// (RFC 6582), SACK-based recovery (RFC 6675) and Karn's algorithm.
#include "tcb_script.h"

namespace esock::tcp::test {
namespace {

using TcbLoss = TcbScript;

TEST_F(TcbLoss, RtoRetransmitsFromSndUnaWithExponentialBackoffThenGivesUp) {
  cfg.max_retries = 4;
  establish_active();
  app_send(500);
  Emitted first = pop();
  Instant last = now();
  std::vector<std::int64_t> gaps;
  while (tcb->state() == TcpState::established) {
    Instant d = tcb->next_deadline();
    ASSERT_NE(d, Instant::never());
    clock.set(d);
    tcb->on_timer(now());
    if (!idle()) {
      Emitted r = pop();
      EXPECT_EQ(r.hdr.seq, first.hdr.seq);
      EXPECT_EQ(r.len(), 500u);
      gaps.push_back((now() - last).count() / 1'000'000);
      last = now();
    }
  }
  // No RTT sample yet (the handshake took 0 s and gave srtt 0, rto = min_rto 200 ms).
  EXPECT_EQ(gaps, (std::vector<std::int64_t>{200, 400, 800, 1600}));
  EXPECT_EQ(user.closed, CloseReason::timeout);
  EXPECT_EQ(tcb->stats().rto_expirations, 5u);
}

TEST_F(TcbLoss, RtoCollapsesTheWindowToOneSegment) {
  establish_active();
  app_send(20 * 1448);
  EXPECT_EQ(pop_all().size(), 10u);
  advance(201ms);
  std::vector<Emitted> r = pop_all();
  ASSERT_EQ(r.size(), 1u);  // RFC 5681 (4): cwnd = 1 SMSS
  EXPECT_EQ(r[0].hdr.seq, iss + 1);
  EXPECT_EQ(tcb->info().cwnd, 1448u);
}

TEST_F(TcbLoss, NewRenoFastRetransmitOnThirdDupAckAndPartialAcks) {
  peer.sack = false;
  establish_active();
  ack_up_to(iss + 1);  // the peer's first scaled window (a window update, not a dup ACK)
  app_send(10 * 1448);
  pop_all();
  std::uint32_t una = iss + 1;
  // Segments 1 and 4 (0-based 0 and 3) are lost: dup ACKs for una.
  ack_up_to(una);
  ack_up_to(una);
  EXPECT_TRUE(idle());
  ack_up_to(una);
  EXPECT_EQ(tcb->stats().dup_acks_in, 3u);
  Emitted fr = pop();
  EXPECT_EQ(fr.hdr.seq, una);  // fast retransmit
  EXPECT_EQ(fr.len(), 1448u);
  EXPECT_TRUE(tcb->info().in_recovery);
  EXPECT_EQ(tcb->stats().fast_recoveries, 1u);
  // Partial ACK up to the second hole: retransmit it at once (RFC 6582 3.2 step 5).
  ack_up_to(una + 3 * 1448);
  bool found = false;
  for (const Emitted& e : pop_all()) found |= e.hdr.seq == una + 3 * 1448;
  EXPECT_TRUE(found);
  EXPECT_TRUE(tcb->info().in_recovery);
  // Full ACK ends recovery with cwnd = ssthresh.
  ack_up_to(una + 10 * 1448);
  EXPECT_FALSE(tcb->info().in_recovery);
  EXPECT_EQ(tcb->info().cwnd, tcb->info().ssthresh);
}

TEST_F(TcbLoss, SackRecoveryRetransmitsExactlyTheHoles) {
  establish_active();
  app_send(10 * 1448);
  pop_all();
  std::uint32_t una = iss + 1;
  auto blk = [&](int from, int to) { return SackBlock{una + from * 1448u, una + to * 1448u}; };
  // Segments 2 and 5 lost; the receiver SACKs the rest as it arrives.
  ack_up_to(una + 2 * 1448);
  ack_up_to(una + 2 * 1448, {blk(3, 4)});
  ack_up_to(una + 2 * 1448, {blk(3, 5)});
  EXPECT_TRUE(idle());
  ack_up_to(una + 2 * 1448, {blk(6, 7), blk(3, 5)});
  std::vector<Emitted> r = pop_all();
  ASSERT_FALSE(r.empty());
  EXPECT_EQ(r[0].hdr.seq, una + 2 * 1448);  // the first hole
  EXPECT_TRUE(tcb->info().in_recovery);
  ack_up_to(una + 2 * 1448, {blk(6, 8), blk(3, 5)});
  ack_up_to(una + 2 * 1448, {blk(6, 9), blk(3, 5)});
  r = pop_all();
  bool second_hole = false;
  for (auto& e : r) {
    EXPECT_NE(e.hdr.seq, una + 3 * 1448) << "SACKed data must not be resent";
    second_hole |= e.hdr.seq == una + 5 * 1448;
  }
  EXPECT_TRUE(second_hole);
  ack_up_to(una + 10 * 1448);
  EXPECT_FALSE(tcb->info().in_recovery);
  EXPECT_EQ(tcb->stats().rto_expirations, 0u);
}

TEST_F(TcbLoss, KarnNoRttSampleFromARetransmittedSegment) {
  establish_active();
  app_send(100);
  pop();
  advance(201ms);  // RTO: retransmitted
  pop();
  advance(1s);
  ack_up_to(iss + 101);
  EXPECT_FALSE(tcb->info().srtt.count() > 0);  // the handshake sample was 0; no new one
}

TEST_F(TcbLoss, RttSampleSetsSrttAndRto) {
  establish_active();
  app_send(100);
  pop();
  advance(50ms);
  ack_up_to(iss + 101);
  // The handshake gave srtt 0; the second sample is 50 ms: 7/8 * 0 + 1/8 * 50 = 6.25 ms.
  double srtt_ms = std::chrono::duration<double, std::milli>(tcb->info().srtt).count();
  EXPECT_NEAR(srtt_ms, 6.25, 0.01);
}

}  // namespace
}  // namespace esock::tcp::test
