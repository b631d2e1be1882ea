// Timers: zero-window probing (RFC 9293 3.8.6.1), keepalive (3.8.4).
#include "tcb_script.h"

namespace esock::tcp::test {
namespace {

using TcbTimers = TcbScript;

TEST_F(TcbTimers, ZeroWindowIsProbedWithBackoffAndReopens) {
  establish_active();
  peer_window = 0;
  ack_up_to(iss + 1);
  app_send(1000);
  EXPECT_TRUE(idle());  // nothing fits
  std::vector<std::int64_t> gaps;
  Instant last = now();
  for (int i = 0; i < 4; ++i) {
    clock.set(tcb->next_deadline());
    tcb->on_timer(now());
    Emitted probe = pop();
    EXPECT_EQ(probe.hdr.seq, iss);  // SND.UNA - 1, no data: forces an ACK
    EXPECT_EQ(probe.len(), 0u);
    gaps.push_back((now() - last).count() / 1'000'000);
    last = now();
    ack_up_to(iss + 1);  // the peer answers: still zero
  }
  EXPECT_EQ(gaps, (std::vector<std::int64_t>{200, 400, 800, 1600}));
  EXPECT_EQ(tcb->state(), TcpState::established);  // answered probes never time out
  peer_window = 65535;
  ack_up_to(iss + 1);
  Emitted d = pop();
  EXPECT_EQ(d.len(), 1000u);
}

TEST_F(TcbTimers, KeepaliveProbesAnIdlePeerAndGivesUp) {
  cfg.keepalive = true;
  cfg.keepalive_idle = 60s;
  cfg.keepalive_interval = 10s;
  cfg.keepalive_probes = 3;
  establish_active();
  advance(59s);
  EXPECT_TRUE(idle());
  advance(2s);
  Emitted p = pop();
  EXPECT_EQ(p.hdr.seq, iss);  // SND.NXT - 1
  ack_up_to(iss + 1);         // answered: the idle clock restarts
  advance(59s);
  EXPECT_TRUE(idle());
  advance(2s);
  pop();
  advance(10s);
  pop();
  advance(10s);
  pop();
  advance(10s);
  EXPECT_EQ(tcb->state(), TcpState::closed);
  EXPECT_EQ(user.closed, CloseReason::timeout);
}

TEST_F(TcbTimers, KeepaliveIsOffByDefault) {
  establish_active();
  advance(3 * 3600s);
  EXPECT_TRUE(idle());
  EXPECT_EQ(tcb->state(), TcpState::established);
}

}  // namespace
}  // namespace esock::tcp::test
