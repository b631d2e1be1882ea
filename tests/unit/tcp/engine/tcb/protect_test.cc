// Protections: RFC 5961 challenge ACKs for in-window RST and SYN and for old ACKs, PAWS
// (RFC 7323 5), and the sequence-number acceptability test (RFC 9293 3.10.7.4).
#include "tcb_script.h"

namespace esock::tcp::test {
namespace {

using TcbProtect = TcbScript;

TEST_F(TcbProtect, InWindowResetThatIsNotExactGetsAChallengeAck) {
  establish_active();
  inject(seg(tcp_flag::rst, peer_nxt + 1000, 0));
  EXPECT_EQ(tcb->state(), TcpState::established);
  Emitted ch = pop();
  EXPECT_EQ(ch.hdr.flags, tcp_flag::ack);
  EXPECT_EQ(ch.hdr.ack, peer_nxt);
  EXPECT_EQ(tcb->stats().challenge_acks, 1u);
}

TEST_F(TcbProtect, ResetOutsideTheWindowIsDroppedSilently) {
  establish_active();
  inject(seg(tcp_flag::rst, peer_nxt + 10'000'000, 0));
  EXPECT_EQ(tcb->state(), TcpState::established);
  EXPECT_TRUE(idle());
}

TEST_F(TcbProtect, SynInEstablishedGetsAChallengeAck) {
  establish_active();
  inject(syn_options(seg(tcp_flag::syn, peer_nxt + 5, 0)));
  EXPECT_EQ(tcb->state(), TcpState::established);
  Emitted ch = pop();
  EXPECT_EQ(ch.hdr.flags, tcp_flag::ack);
  EXPECT_EQ(ch.hdr.ack, peer_nxt);
}

TEST_F(TcbProtect, AckBelowTheAcceptableRangeGetsAChallengeAckAndIsDropped) {
  peer_window = 100;
  peer.wscale = 0;
  establish_active();
  app_send(50);
  pop();
  ack_up_to(iss + 51);
  inject_data(10);  // data with an ACK far below SND.UNA - MAX.SND.WND
  sink.out.clear();
  TcpRepr r = seg(tcp_flag::ack, peer_nxt, iss - 100000);
  inject(r, std::vector<std::uint8_t>(10, 1));
  Emitted ch = pop();
  EXPECT_EQ(ch.hdr.ack, peer_nxt);  // the data was not taken
  EXPECT_EQ(tcb->stats().challenge_acks, 1u);
}

TEST_F(TcbProtect, AckForDataNeverSentIsAckedAndDropped) {
  establish_active();
  inject_data(10);
  sink.out.clear();
  TcpRepr r = seg(tcp_flag::ack, peer_nxt, iss + 999);
  inject(r, std::vector<std::uint8_t>(10, 1));
  Emitted a = pop();
  EXPECT_EQ(a.hdr.ack, peer_nxt);
  EXPECT_EQ(tcb->stats().bad_acks_dropped, 1u);
}

TEST_F(TcbProtect, ChallengeAcksAreRateLimited) {
  cfg.challenge_ack_limit = 5;
  establish_active();
  for (int i = 0; i < 20; ++i) inject(seg(tcp_flag::rst, peer_nxt + 100 + i, 0));
  EXPECT_EQ(pop_all().size(), 5u);
  advance(1001ms);
  inject(seg(tcp_flag::rst, peer_nxt + 100, 0));
  EXPECT_EQ(pop_all().size(), 1u);
}

TEST_F(TcbProtect, PawsDropsASegmentWithAnOldTimestamp) {
  establish_active();
  inject_data(100);
  TcpRepr old = seg(tcp_flag::ack, peer_nxt, iss + 1);
  old.options.timestamps->tsval -= 1000;  // older than TS.Recent
  inject(old, std::vector<std::uint8_t>(100, 9));
  EXPECT_EQ(tcb->stats().paws_drops, 1u);
  EXPECT_EQ(tcb->recv_queue().size(), 100u);
  Emitted a = pop();
  EXPECT_EQ(a.hdr.ack, peer_nxt);
}

TEST_F(TcbProtect, SegmentWithoutTimestampIsDroppedOnceNegotiated) {
  establish_active();
  TcpRepr r = seg(tcp_flag::ack, peer_nxt, iss + 1);
  r.options.timestamps.reset();
  inject(r, std::vector<std::uint8_t>(10, 1));
  EXPECT_EQ(tcb->recv_queue().size(), 0u);
}

TEST_F(TcbProtect, OldDuplicateSegmentIsAcknowledgedNotDelivered) {
  establish_active();
  inject_data(100);
  sink.out.clear();
  inject_data(100, peer_nxt - 100);
  Emitted a = pop();
  EXPECT_EQ(a.hdr.ack, peer_nxt);
  EXPECT_EQ(tcb->recv_queue().size(), 100u);
}

}  // namespace
}  // namespace esock::tcp::test
