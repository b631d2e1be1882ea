// Drop reasons (drop_reason.h): each path in the TCB's segment processing that discards a
// segment or its text counts exactly one reason. Each test drives one path with a
// synthetic segment and checks that its counter, and no other, moved.
#include <functional>
#include <set>
#include <string>

#include "tcb_script.h"

namespace esock::tcp::test {
namespace {

class TcbDrop : public TcbScript {
 protected:
  // `r` moved by n and no other reason moved at all.
  void expect_only(DropReason r, std::uint64_t n = 1) {
    const DropCounters& d = tcb->stats().drops;
    EXPECT_EQ(d[r], n) << to_string(r) << "; counted: " << to_string(d);
    EXPECT_EQ(d.total(), n) << "counted: " << to_string(d);
  }
  void expect_none() {
    EXPECT_EQ(tcb->stats().drops.total(), 0u) << "counted: " << to_string(tcb->stats().drops);
  }
  static std::vector<std::uint8_t> bytes(std::size_t n) { return std::vector<std::uint8_t>(n, 7); }
};

// A user whose on_established runs a hook (say, closing the connection at once).
class HookUser : public RecordingUser {
 public:
  void on_established() override {
    RecordingUser::on_established();
    if (hook) hook();
  }
  std::function<void()> hook;
};

TEST(DropReasonNames, EveryReasonHasItsOwnName) {
  std::set<std::string> names;
  for (std::size_t i = 0; i < drop_reason_count; ++i) {
    const std::string n = to_string(static_cast<DropReason>(i));
    EXPECT_NE(n, "?") << i;
    names.insert(n);
  }
  EXPECT_EQ(names.size(), drop_reason_count);
  EXPECT_EQ(std::string(to_string(DropReason::paws)), "paws");
}

TEST(DropReasonNames, CountersPrintOnlyWhatMovedAndAdd) {
  DropCounters a, b;
  EXPECT_EQ(to_string(a), "none");
  a[DropReason::paws] = 2;
  b[DropReason::no_ack] = 1;
  b[DropReason::paws] = 1;
  a += b;
  EXPECT_EQ(a.total(), 4u);
  EXPECT_EQ(to_string(a), "paws=3 no_ack=1");
}

TEST_F(TcbDrop, NothingIsCountedForAnOrdinaryExchange) {
  establish_active();
  app_send(3000);
  pop_all();
  ack_up_to(tcb->snd_nxt());
  inject_data(1000);
  inject_data(1000, peer_nxt + 500);  // out of order: stored, not dropped
  inject_data(500);                   // fills the hole
  peer_nxt += 1000;
  EXPECT_EQ(tcb->rcv_nxt(), peer_nxt);
  inject(seg(tcp_flag::ack | tcp_flag::fin, peer_nxt, tcb->snd_nxt()));
  EXPECT_EQ(tcb->state(), TcpState::close_wait);
  expect_none();
}

// --- SYN-SENT (RFC 9293 3.10.7.3) ---

TEST_F(TcbDrop, SynSentAckThatIsNotForOurSyn) {
  make();
  tcb->open_active(now(), iss, 0);
  pop();
  inject(syn_options(seg(tcp_flag::syn | tcp_flag::ack, peer_iss, iss + 5)));
  EXPECT_EQ(tcb->state(), TcpState::syn_sent);
  Emitted rst = pop();
  EXPECT_EQ(rst.hdr.flags, tcp_flag::rst);
  expect_only(DropReason::handshake_bad_ack);
}

TEST_F(TcbDrop, SynSentResetWithABadAckIsNotAnsweredButCounted) {
  make();
  tcb->open_active(now(), iss, 0);
  pop();
  inject(seg(tcp_flag::rst | tcp_flag::ack, 0, iss));
  EXPECT_EQ(tcb->state(), TcpState::syn_sent);
  EXPECT_TRUE(idle());
  expect_only(DropReason::handshake_bad_ack);
}

TEST_F(TcbDrop, SynSentResetWithoutAck) {
  make();
  tcb->open_active(now(), iss, 0);
  pop();
  inject(seg(tcp_flag::rst, peer_iss, 0));
  EXPECT_EQ(tcb->state(), TcpState::syn_sent);
  expect_only(DropReason::syn_sent_rst_no_ack);
}

TEST_F(TcbDrop, SynSentSegmentWithNeitherSynNorRst) {
  make();
  tcb->open_active(now(), iss, 0);
  pop();
  inject(seg(tcp_flag::ack, peer_iss, iss + 1), bytes(10));
  EXPECT_EQ(tcb->state(), TcpState::syn_sent);
  expect_only(DropReason::syn_sent_no_syn);
}

TEST_F(TcbDrop, TextInASimultaneousOpenSynIsNotKept) {
  make();
  tcb->open_active(now(), iss, 0);
  pop();
  inject(syn_options(seg(tcp_flag::syn, peer_iss, 0)), bytes(20));
  EXPECT_EQ(tcb->state(), TcpState::syn_received);
  Emitted synack = pop();
  EXPECT_EQ(synack.hdr.ack, peer_iss + 1);  // the SYN only: the text comes again
  expect_only(DropReason::syn_data);
}

TEST_F(TcbDrop, SynAckTextIsDroppedWhenTheUserClosesOnEstablished) {
  HookUser u;
  make();
  tcb->set_user(&u);
  u.hook = [&] { tcb->abort(now()); };
  tcb->open_active(now(), iss, 0);
  pop();
  inject(syn_options(seg(tcp_flag::syn | tcp_flag::ack, peer_iss, iss + 1)), bytes(30));
  EXPECT_EQ(tcb->state(), TcpState::closed);
  EXPECT_EQ(tcb->recv_queue().size(), 0u);
  expect_only(DropReason::conn_closed);
}

// --- SYN-RECEIVED ---

TEST_F(TcbDrop, SynReceivedAckThatIsNotForOurSyn) {
  make();
  tcb->open_passive(now(), iss, 0, syn_options(seg(tcp_flag::syn, peer_iss, 0)));
  pop();
  inject(seg(tcp_flag::ack, peer_iss + 1, iss + 100));
  EXPECT_EQ(tcb->state(), TcpState::syn_received);
  Emitted rst = pop();
  EXPECT_EQ(rst.hdr.flags, tcp_flag::rst);
  EXPECT_EQ(rst.hdr.seq, iss + 100);
  expect_only(DropReason::handshake_bad_ack);
}

TEST_F(TcbDrop, SynReceivedRetransmittedSynIsAnOldSegment) {
  make();
  TcpRepr syn = syn_options(seg(tcp_flag::syn, peer_iss, 0));
  tcb->open_passive(now(), iss, 0, syn);
  pop();
  inject(syn);  // our SYN-ACK was lost: answered again, the SYN itself is a duplicate
  EXPECT_EQ(pop().hdr.flags, tcp_flag::syn | tcp_flag::ack);
  expect_only(DropReason::old_sequence);
}

// --- Synchronized states (RFC 9293 3.10.7.4), in the order of its checks ---

TEST_F(TcbDrop, SegmentReachingAClosedTcb) {
  make();
  inject(seg(tcp_flag::ack, peer_iss, iss));
  expect_only(DropReason::conn_closed);
}

TEST_F(TcbDrop, MissingTimestampOnceNegotiated) {
  establish_active();
  TcpRepr r = seg(tcp_flag::ack, peer_nxt, iss + 1);
  r.options.timestamps.reset();
  inject(r, bytes(10));
  EXPECT_EQ(tcb->recv_queue().size(), 0u);
  EXPECT_TRUE(idle());  // RFC 7323 3.2: silently
  expect_only(DropReason::ts_missing);
}

TEST_F(TcbDrop, PawsRejectsAnOldTimestamp) {
  establish_active();
  inject_data(100);
  TcpRepr old = seg(tcp_flag::ack, peer_nxt, iss + 1);
  old.options.timestamps->tsval -= 1000;
  inject(old, bytes(100));
  EXPECT_EQ(tcb->recv_queue().size(), 100u);
  expect_only(DropReason::paws);
  EXPECT_EQ(tcb->stats().paws_drops, 1u);  // the older counter stays the same event
}

TEST_F(TcbDrop, DuplicateDataIsAnOldSegment) {
  establish_active();
  inject_data(100);
  inject_data(100, peer_nxt - 100);
  EXPECT_EQ(tcb->recv_queue().size(), 100u);
  expect_only(DropReason::old_sequence);
}

TEST_F(TcbDrop, KeepaliveIsAnOldSegmentAnsweredWithAnAck) {
  establish_active();
  sink.out.clear();
  inject(seg(tcp_flag::ack, peer_nxt - 1, iss + 1));
  EXPECT_EQ(pop().hdr.ack, peer_nxt);
  expect_only(DropReason::old_sequence);
}

TEST_F(TcbDrop, OldTextWithANewFinDropsOnlyTheText) {
  establish_active();
  inject_data(100);
  // 3.10.7.4 first accepts it for the FIN at RCV.NXT; its text is all old.
  inject(seg(tcp_flag::ack | tcp_flag::fin, peer_nxt - 10, iss + 1), bytes(10));
  EXPECT_EQ(tcb->state(), TcpState::close_wait);
  EXPECT_EQ(tcb->recv_queue().size(), 100u);
  expect_only(DropReason::old_sequence);
}

TEST_F(TcbDrop, SegmentPastTheWindow) {
  establish_active();
  sink.out.clear();
  inject_data(10, peer_nxt + 10'000'000);
  EXPECT_EQ(pop().hdr.ack, peer_nxt);
  expect_only(DropReason::beyond_window);
}

TEST_F(TcbDrop, DataIntoAZeroWindow) {
  cfg.rcv_buf = 4096;
  establish_active();
  inject_data(1460);
  inject_data(1460);
  inject_data(1176);  // the whole buffer, unread
  sink.out.clear();
  inject_data(10);
  EXPECT_EQ(tcb->recv_queue().size(), 4096u);
  EXPECT_EQ(pop().hdr.window, 0);
  expect_only(DropReason::beyond_window);
}

TEST_F(TcbDrop, ResetOutsideTheWindow) {
  establish_active();
  inject(seg(tcp_flag::rst, peer_nxt + 10'000'000, 0));
  EXPECT_TRUE(idle());
  expect_only(DropReason::rst_out_of_window);
}

TEST_F(TcbDrop, InWindowResetThatIsNotExact) {
  establish_active();
  inject(seg(tcp_flag::rst, peer_nxt + 1000, 0));
  EXPECT_EQ(tcb->state(), TcpState::established);
  EXPECT_EQ(tcb->stats().challenge_acks, 1u);
  expect_only(DropReason::rst_inexact);
}

TEST_F(TcbDrop, EveryInexactResetCountsEvenWhenChallengeAcksAreLimited) {
  cfg.challenge_ack_limit = 5;
  establish_active();
  for (int i = 0; i < 20; ++i) inject(seg(tcp_flag::rst, peer_nxt + 100 + i, 0));
  EXPECT_EQ(tcb->stats().challenge_acks, 5u);
  expect_only(DropReason::rst_inexact, 20);
}

TEST_F(TcbDrop, SynInASynchronizedState) {
  establish_active();
  inject(syn_options(seg(tcp_flag::syn, peer_nxt + 5, 0)));
  EXPECT_EQ(tcb->state(), TcpState::established);
  expect_only(DropReason::syn_in_window);
}

TEST_F(TcbDrop, SegmentWithoutTheAckBit) {
  establish_active();
  inject(seg(tcp_flag::psh, peer_nxt, 0), bytes(10));
  EXPECT_EQ(tcb->recv_queue().size(), 0u);
  expect_only(DropReason::no_ack);
}

TEST_F(TcbDrop, AckForDataNeverSent) {
  establish_active();
  inject(seg(tcp_flag::ack, peer_nxt, iss + 999), bytes(10));
  EXPECT_EQ(tcb->recv_queue().size(), 0u);
  expect_only(DropReason::ack_unsent);
  EXPECT_EQ(tcb->stats().bad_acks_dropped, 1u);
}

TEST_F(TcbDrop, AckBelowTheAcceptableRange) {
  peer_window = 100;
  peer.wscale = 0;
  establish_active();
  app_send(50);
  pop();
  ack_up_to(iss + 51);
  inject(seg(tcp_flag::ack, peer_nxt, iss - 100000), bytes(10));
  EXPECT_EQ(tcb->recv_queue().size(), 0u);
  expect_only(DropReason::ack_too_old);
  EXPECT_EQ(tcb->stats().bad_acks_dropped, 1u);
}

TEST_F(TcbDrop, TextAfterThePeersFin) {
  establish_active();
  inject(seg(tcp_flag::ack | tcp_flag::fin, peer_nxt, iss + 1));
  ++peer_nxt;
  ASSERT_EQ(tcb->state(), TcpState::close_wait);
  inject_data(10);
  EXPECT_EQ(tcb->recv_queue().size(), 0u);
  expect_only(DropReason::data_after_fin);
}

TEST_F(TcbDrop, TextWithTheAckThatEndsLastAck) {
  establish_active();
  inject(seg(tcp_flag::ack | tcp_flag::fin, peer_nxt, iss + 1));
  ++peer_nxt;
  tcb->close(now());
  ASSERT_EQ(tcb->state(), TcpState::last_ack);
  inject(seg(tcp_flag::ack, peer_nxt, iss + 2), bytes(10));  // acknowledges our FIN
  EXPECT_EQ(tcb->state(), TcpState::closed);
  expect_only(DropReason::conn_closed);
}

TEST_F(TcbDrop, DataForAnOrphanResetsTheConnection) {
  establish_active();
  tcb->close(now());
  tcb->set_orphan(now());
  sink.out.clear();
  inject_data(10);
  EXPECT_EQ(tcb->state(), TcpState::closed);
  EXPECT_EQ(pop_all().back().hdr.flags, tcp_flag::rst);
  expect_only(DropReason::orphan_data);
}

TEST_F(TcbDrop, OutOfOrderStoreFull) {
  establish_active();
  // One-octet segments with gaps between them each take a piece of the bounded store
  // (max(256, rcv_buf / 536) pieces, tcb.cc).
  const std::uint32_t limit = std::max<std::uint32_t>(256, cfg.rcv_buf / 536);
  const std::uint32_t s = peer_nxt;
  for (std::uint32_t i = 0; i < limit + 2; ++i) inject_data(1, s + 2 + 2 * i);
  EXPECT_EQ(tcb->reassembly().piece_count(), limit);
  expect_only(DropReason::ooo_queue_full, 2);
  EXPECT_EQ(tcb->stats().ooo_dropped, 2u);
}

}  // namespace
}  // namespace esock::tcp::test
