// Closing: orderly close from either side, simultaneous close, TIME-WAIT (RFC 9293 3.6,
// 3.10.4, 3.10.7.4 eighth), abort (3.10.5) and resets.
#include "tcb_script.h"

namespace esock::tcp::test {
namespace {

using TcbClose = TcbScript;

TEST_F(TcbClose, ActiveCloseWalksFinWait1FinWait2TimeWaitClosed) {
  cfg.msl = 5s;
  establish_active();
  tcb->close(now());
  Emitted fin = pop();
  EXPECT_EQ(fin.hdr.flags, tcp_flag::fin | tcp_flag::ack);
  EXPECT_EQ(fin.hdr.seq, iss + 1);
  EXPECT_EQ(tcb->state(), TcpState::fin_wait_1);
  EXPECT_EQ(tcb->send(now(), std::vector<std::uint8_t>(5)), 0u);  // no SEND after CLOSE

  ack_up_to(iss + 2);
  EXPECT_EQ(tcb->state(), TcpState::fin_wait_2);
  inject(seg(tcp_flag::fin | tcp_flag::ack, peer_nxt, iss + 2));
  EXPECT_EQ(tcb->state(), TcpState::time_wait);
  EXPECT_TRUE(tcb->peer_closed());
  Emitted ack = pop();
  EXPECT_EQ(ack.hdr.ack, peer_nxt + 1);

  advance(9s);
  EXPECT_EQ(tcb->state(), TcpState::time_wait);
  advance(2s);  // 2 MSL = 10 s
  EXPECT_EQ(tcb->state(), TcpState::closed);
  EXPECT_EQ(user.closed, CloseReason::normal);
}

TEST_F(TcbClose, RetransmittedFinInTimeWaitIsAckedAndRestartsTheTimer) {
  cfg.msl = 5s;
  establish_active();
  tcb->close(now());
  pop();
  inject(seg(tcp_flag::fin | tcp_flag::ack, peer_nxt, iss + 2));
  pop();
  ASSERT_EQ(tcb->state(), TcpState::time_wait);
  advance(8s);
  inject(seg(tcp_flag::fin | tcp_flag::ack, peer_nxt, iss + 2));
  Emitted ack = pop();
  EXPECT_EQ(ack.hdr.ack, peer_nxt + 1);
  advance(8s);
  EXPECT_EQ(tcb->state(), TcpState::time_wait);  // restarted at 8 s: ends at 18 s
  advance(3s);
  EXPECT_EQ(tcb->state(), TcpState::closed);
}

TEST_F(TcbClose, PassiveCloseWalksCloseWaitLastAckClosed) {
  establish_passive();
  inject_data(10, std::nullopt, tcp_flag::fin);
  peer_nxt += 1;  // the FIN
  EXPECT_EQ(tcb->state(), TcpState::close_wait);
  EXPECT_TRUE(tcb->peer_closed());
  Emitted ack = pop();
  EXPECT_EQ(ack.hdr.ack, peer_nxt);  // data and FIN
  std::vector<std::uint8_t> buf(100);
  EXPECT_EQ(tcb->recv(now(), buf), 10u);
  // We may still send in CLOSE-WAIT.
  app_send(20);
  EXPECT_EQ(pop().len(), 20u);
  tcb->close(now());
  EXPECT_EQ(tcb->state(), TcpState::last_ack);
  Emitted fin = pop();
  EXPECT_TRUE(fin.hdr.has(tcp_flag::fin));
  EXPECT_EQ(fin.hdr.seq, iss + 21);
  ack_up_to(iss + 22);
  EXPECT_EQ(tcb->state(), TcpState::closed);
  EXPECT_EQ(user.closed, CloseReason::normal);
}

TEST_F(TcbClose, SimultaneousCloseGoesThroughClosing) {
  cfg.msl = 1s;
  establish_active();
  tcb->close(now());
  pop();
  // The peer's FIN crosses ours (it has not seen our FIN: ACK = ISS + 1).
  inject(seg(tcp_flag::fin | tcp_flag::ack, peer_nxt, iss + 1));
  peer_nxt += 1;
  EXPECT_EQ(tcb->state(), TcpState::closing);
  pop();
  ack_up_to(iss + 2);
  EXPECT_EQ(tcb->state(), TcpState::time_wait);
  advance(3s);
  EXPECT_EQ(tcb->state(), TcpState::closed);
}

TEST_F(TcbClose, FinRidesOnTheLastDataSegment) {
  establish_active();
  app_send(300);
  pop();
  app_send(100);  // held by Nagle: 300 bytes unacknowledged
  tcb->close(now());
  EXPECT_TRUE(idle());
  ack_up_to(iss + 301);
  Emitted last = pop();
  EXPECT_EQ(last.len(), 100u);
  EXPECT_TRUE(last.hdr.has(tcp_flag::fin));
}

TEST_F(TcbClose, OutOfOrderFinWaitsForTheHole) {
  establish_active();
  std::uint32_t start = peer_nxt;
  inject_data(100, start + 100, tcp_flag::fin);  // bytes 100..199 and FIN, 0..99 missing
  pop();
  EXPECT_EQ(tcb->state(), TcpState::established);
  inject_data(100, start);
  EXPECT_EQ(tcb->state(), TcpState::close_wait);
  EXPECT_EQ(tcb->rcv_nxt(), start + 201);
  EXPECT_EQ(tcb->recv_queue().size(), 200u);
}

TEST_F(TcbClose, AbortSendsResetAndClosesAtOnce) {
  establish_active();
  app_send(10);
  pop();
  tcb->abort(now());
  Emitted rst = pop();
  EXPECT_EQ(rst.hdr.flags, tcp_flag::rst);
  EXPECT_EQ(rst.hdr.seq, iss + 11);
  EXPECT_EQ(tcb->state(), TcpState::closed);
  EXPECT_EQ(user.closed, CloseReason::aborted);
}

TEST_F(TcbClose, ExactResetFromThePeerClosesWithConnectionReset) {
  establish_active();
  inject(seg(tcp_flag::rst, peer_nxt, 0));
  EXPECT_EQ(tcb->state(), TcpState::closed);
  EXPECT_EQ(user.closed, CloseReason::reset);
  EXPECT_TRUE(idle());
}

TEST_F(TcbClose, DataForAnOrphanedConnectionIsAnsweredWithReset) {
  establish_active();
  tcb->close(now());
  pop();
  tcb->set_orphan(now());
  inject_data(10);
  Emitted rst = pop();
  EXPECT_EQ(rst.hdr.flags, tcp_flag::rst);
  EXPECT_EQ(tcb->state(), TcpState::closed);
}

TEST_F(TcbClose, OrphanedFinWait2IsBounded) {
  cfg.orphan_fin_wait2 = 30s;
  establish_active();
  tcb->close(now());
  pop();
  ack_up_to(iss + 2);
  ASSERT_EQ(tcb->state(), TcpState::fin_wait_2);
  tcb->set_orphan(now());
  advance(29s);
  EXPECT_EQ(tcb->state(), TcpState::fin_wait_2);
  advance(2s);
  EXPECT_EQ(tcb->state(), TcpState::closed);
}

// Hardening (issue 20, memory per TCB; found by tests/soak): a connection in TIME-WAIT
// kept its send buffer's 64 KiB copy block and its out-of-order store's room for 2 MSL,
// so 8,500 recently closed connections held 590 MB. Both go on entering TIME-WAIT.
TEST_F(TcbClose, TimeWaitGivesBackTheBuffersRoom) {
  establish_active();
  app_send(1000);  // copied into the send buffer's block
  pop_all();
  ack_up_to(iss + 1 + 1000);
  // Segments above a hole grow the out-of-order store past its first room.
  for (std::uint32_t k = 0; k < 40; ++k) inject_data(10, peer_nxt + 20 * (k + 1));
  inject_data(20 * 41);  // the hole and everything after it
  pop_all();
  // (The copy block is sized by what was buffered: 4 KiB here, send_buffer.cc.)
  ASSERT_GT(tcb->reserved_bytes(), 4096u);
  tcb->close(now());
  pop_all();
  ack_up_to(iss + 1 + 1000 + 1);
  inject(seg(tcp_flag::fin | tcp_flag::ack, peer_nxt, iss + 1 + 1000 + 1));
  ASSERT_EQ(tcb->state(), TcpState::time_wait);
  EXPECT_EQ(tcb->reserved_bytes(), 0u);
  // A retransmitted FIN is still answered.
  pop_all();
  inject(seg(tcp_flag::fin | tcp_flag::ack, peer_nxt, iss + 1 + 1000 + 1));
  EXPECT_EQ(pop().hdr.flags, tcp_flag::ack);
}

}  // namespace
}  // namespace esock::tcp::test
