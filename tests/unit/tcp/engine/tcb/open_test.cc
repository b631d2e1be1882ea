// Opening: active, passive and simultaneous open (RFC 9293 3.5), option negotiation
// (RFC 9293 3.7.1, RFC 7323, RFC 2018), SYN retransmission (RFC 6298 5.5) and refusal.
#include "tcb_script.h"

namespace esock::tcp::test {
namespace {

using TcbOpen = TcbScript;

TEST_F(TcbOpen, ActiveOpenSendsSynWithAllOptionsAndCompletesOnSynAck) {
  make();
  tcb->open_active(now(), iss, 0);
  Emitted syn = pop();
  EXPECT_EQ(syn.hdr.flags, tcp_flag::syn);
  EXPECT_EQ(syn.hdr.seq, iss);
  EXPECT_EQ(syn.hdr.options.mss, 1460);
  EXPECT_EQ(syn.hdr.options.wscale, 3);  // 256 KiB >> 2 is still 65536: shift 3
  EXPECT_TRUE(syn.hdr.options.sack_permitted);
  ASSERT_TRUE(syn.hdr.options.timestamps);
  EXPECT_EQ(syn.hdr.options.timestamps->tsecr, 0u);
  EXPECT_EQ(tcb->state(), TcpState::syn_sent);

  inject(syn_options(seg(tcp_flag::syn | tcp_flag::ack, peer_iss, iss + 1)));
  Emitted ack = pop();
  EXPECT_EQ(ack.hdr.flags, tcp_flag::ack);
  EXPECT_EQ(ack.hdr.seq, iss + 1);
  EXPECT_EQ(ack.hdr.ack, peer_iss + 1);
  EXPECT_EQ(tcb->state(), TcpState::established);
  EXPECT_EQ(user.established, 1);
  TcbInfo i = tcb->info();
  EXPECT_TRUE(i.sack);
  EXPECT_TRUE(i.timestamps);
  EXPECT_EQ(i.snd_wscale, 7);
  EXPECT_EQ(i.smss, 1460 - 12);  // timestamps take 12 octets of every segment
}

TEST_F(TcbOpen, PassiveOpenAnswersOnlyWhatThePeerOffered) {
  peer.timestamps = false;
  peer.sack = false;
  peer.wscale.reset();
  peer.mss = 1000;
  make();
  TcpRepr syn = syn_options(seg(tcp_flag::syn, peer_iss, 0));
  tcb->open_passive(now(), iss, 0, syn);
  Emitted synack = pop();
  EXPECT_EQ(synack.hdr.flags, tcp_flag::syn | tcp_flag::ack);
  EXPECT_EQ(synack.hdr.ack, peer_iss + 1);
  EXPECT_FALSE(synack.hdr.options.wscale);
  EXPECT_FALSE(synack.hdr.options.sack_permitted);
  EXPECT_FALSE(synack.hdr.options.timestamps);
  EXPECT_EQ(tcb->state(), TcpState::syn_received);
  inject(seg(tcp_flag::ack, peer_iss + 1, iss + 1));
  EXPECT_EQ(tcb->state(), TcpState::established);
  EXPECT_EQ(tcb->effective_mss(), 1000);
  EXPECT_EQ(tcb->info().snd_wscale, 255);  // not negotiated
  // Without window scaling our own window is unscaled too (RFC 7323 2.2).
  app_send(10);
  EXPECT_EQ(pop().hdr.window, 65535);
}

TEST_F(TcbOpen, NoMssOptionMeans536) {
  peer.timestamps = false;
  make();
  TcpRepr syn = seg(tcp_flag::syn, peer_iss, 0);
  tcb->open_passive(now(), iss, 0, syn);
  EXPECT_EQ(tcb->effective_mss(), 536);
}

TEST_F(TcbOpen, SimultaneousOpen) {
  make();
  tcb->open_active(now(), iss, 0);
  pop();
  // The peer's SYN crosses ours: SYN-RECEIVED, answer SYN-ACK with our ISS.
  inject(syn_options(seg(tcp_flag::syn, peer_iss, 0)));
  EXPECT_EQ(tcb->state(), TcpState::syn_received);
  Emitted synack = pop();
  EXPECT_EQ(synack.hdr.flags, tcp_flag::syn | tcp_flag::ack);
  EXPECT_EQ(synack.hdr.seq, iss);
  EXPECT_EQ(synack.hdr.ack, peer_iss + 1);
  // The peer's SYN-ACK (RFC 9293 figure 8) completes it; we acknowledge it.
  inject(seg(tcp_flag::syn | tcp_flag::ack, peer_iss, iss + 1));
  EXPECT_EQ(tcb->state(), TcpState::established);
  Emitted ack = pop();
  EXPECT_EQ(ack.hdr.flags, tcp_flag::ack);
  EXPECT_EQ(ack.hdr.ack, peer_iss + 1);
}

TEST_F(TcbOpen, SynRetransmitsWithBackoffThenTimesOut) {
  cfg.syn_retries = 3;
  make();
  tcb->open_active(now(), iss, 0);
  pop();
  std::vector<std::int64_t> gaps;
  Instant last = now();
  // Walk the timer one expiry at a time and record the gaps between SYNs.
  while (tcb->state() == TcpState::syn_sent) {
    Instant d = tcb->next_deadline();
    ASSERT_NE(d, Instant::never());
    clock.set(d);
    tcb->on_timer(now());
    if (!idle()) {
      Emitted s = pop();
      EXPECT_EQ(s.hdr.flags, tcp_flag::syn);
      EXPECT_EQ(s.hdr.seq, iss);
      gaps.push_back((now() - last).count() / 1'000'000);
      last = now();
    }
  }
  // RFC 6298 2.1 initial RTO 1 s, doubled on each expiry (5.5).
  EXPECT_EQ(gaps, (std::vector<std::int64_t>{1000, 2000, 4000}));
  EXPECT_EQ(tcb->state(), TcpState::closed);
  EXPECT_EQ(user.closed, CloseReason::timeout);
}

TEST_F(TcbOpen, AfterARetransmittedSynTheDataPhaseStartsWithA3SecondRto) {
  make();
  tcb->open_active(now(), iss, 0);
  pop();
  advance(1001ms);  // the SYN times out once
  EXPECT_EQ(pop().hdr.flags, tcp_flag::syn);
  inject(syn_options(seg(tcp_flag::syn | tcp_flag::ack, peer_iss, iss + 1)));
  ASSERT_EQ(tcb->state(), TcpState::established);
  // RFC 6298 5.7: no sample (Karn), so RTO = 3 s, not the 200 ms minimum or 2 s backoff.
  EXPECT_EQ(tcb->info().rto, Duration(3s));
}

TEST_F(TcbOpen, RstAcknowledgingOurSynMeansRefused) {
  make();
  tcb->open_active(now(), iss, 0);
  pop();
  inject(seg(tcp_flag::rst | tcp_flag::ack, 0, iss + 1));
  EXPECT_EQ(tcb->state(), TcpState::closed);
  EXPECT_EQ(user.closed, CloseReason::refused);
}

TEST_F(TcbOpen, RstWithoutAcceptableAckIsIgnoredInSynSent) {
  make();
  tcb->open_active(now(), iss, 0);
  pop();
  inject(seg(tcp_flag::rst, 0, 0));
  EXPECT_EQ(tcb->state(), TcpState::syn_sent);
  EXPECT_TRUE(idle());
}

TEST_F(TcbOpen, BadAckInSynSentIsAnsweredWithReset) {
  make();
  tcb->open_active(now(), iss, 0);
  pop();
  inject(seg(tcp_flag::syn | tcp_flag::ack, peer_iss, iss + 77));
  Emitted rst = pop();
  EXPECT_EQ(rst.hdr.flags, tcp_flag::rst);
  EXPECT_EQ(rst.hdr.seq, iss + 77);
  EXPECT_EQ(tcb->state(), TcpState::syn_sent);
}

TEST_F(TcbOpen, LostSynAckIsResentWhenThePeerRetransmitsItsSyn) {
  make();
  TcpRepr syn = syn_options(seg(tcp_flag::syn, peer_iss, 0));
  tcb->open_passive(now(), iss, 0, syn);
  pop();
  inject(syn);
  Emitted again = pop();
  EXPECT_EQ(again.hdr.flags, tcp_flag::syn | tcp_flag::ack);
  EXPECT_EQ(again.hdr.seq, iss);
}

TEST_F(TcbOpen, BadAckInSynReceivedGetsReset) {
  make();
  tcb->open_passive(now(), iss, 0, syn_options(seg(tcp_flag::syn, peer_iss, 0)));
  pop();
  inject(seg(tcp_flag::ack, peer_iss + 1, iss + 5000));
  Emitted rst = pop();
  EXPECT_EQ(rst.hdr.flags, tcp_flag::rst);
  EXPECT_EQ(rst.hdr.seq, iss + 5000);
  EXPECT_EQ(tcb->state(), TcpState::syn_received);
}

TEST_F(TcbOpen, DataQueuedBeforeTheHandshakeGoesOutAfterIt) {
  make();
  tcb->open_active(now(), iss, 0);
  pop();
  app_send(100);
  EXPECT_TRUE(idle());  // no data with the SYN
  inject(syn_options(seg(tcp_flag::syn | tcp_flag::ack, peer_iss, iss + 1)));
  Emitted d = pop();
  EXPECT_EQ(d.hdr.seq, iss + 1);
  EXPECT_EQ(d.len(), 100u);
  EXPECT_TRUE(d.hdr.has(tcp_flag::psh));
}

}  // namespace
}  // namespace esock::tcp::test
