// RFC 5681 / RFC 3465 Reno and the congestion control factory.
#include "tcp/engine/congestion.h"

#include <gtest/gtest.h>

#include <string>

#include "tcp/engine/reno.h"

namespace esock::tcp {
namespace {

constexpr std::uint32_t smss = 1000;

CcAck ack_of(std::uint32_t bytes, Instant now = {}) {
  CcAck a;
  a.now = now;
  a.bytes_acked = bytes;
  a.flight_size = 0;
  return a;
}

TEST(CongestionFactory, MakesBothAlgorithms) {
  auto reno = make_congestion_control(CcAlgorithm::reno, smss, 10 * smss);
  auto cubic = make_congestion_control(CcAlgorithm::cubic, smss, 10 * smss);
  EXPECT_EQ(std::string(reno->name()), "reno");
  EXPECT_EQ(std::string(cubic->name()), "cubic");
  EXPECT_EQ(reno->cwnd(), 10 * smss);
  EXPECT_EQ(cubic->cwnd(), 10 * smss);
  EXPECT_EQ(reno->ssthresh(), UINT32_MAX);  // RFC 5681 3.1: arbitrarily high
}

TEST(CongestionFactory, DefaultInitialWindowRfc5681) {
  EXPECT_EQ(rfc5681_initial_window(2500), 5000u);  // eq. (1)
  EXPECT_EQ(rfc5681_initial_window(1460), 4380u);  // eq. (2)
  EXPECT_EQ(rfc5681_initial_window(536), 2144u);   // eq. (3)
  auto cc = make_congestion_control(CcAlgorithm::reno, 1460, 0);
  EXPECT_EQ(cc->cwnd(), 4380u);
}

TEST(Reno, SlowStartAppropriateByteCountingLimit) {
  Reno cc(smss, 2 * smss);
  cc.on_ack(ack_of(500));  // N < SMSS: grow by N (RFC 3465 2.2)
  EXPECT_EQ(cc.cwnd(), 2500u);
  cc.on_ack(ack_of(5 * smss));  // a stretch ACK: at most L = 2 SMSS
  EXPECT_EQ(cc.cwnd(), 4500u);
}

TEST(Reno, SlowStartDoublesPerRoundTrip) {
  Reno cc(smss, 4 * smss);
  for (int rtt = 0; rtt < 4; ++rtt) {
    const std::uint32_t w = cc.cwnd();
    for (std::uint32_t i = 0; i < w / smss; ++i) cc.on_ack(ack_of(smss));
    EXPECT_EQ(cc.cwnd(), 2 * w);
  }
}

TEST(Reno, CongestionAvoidanceOneSmssPerWindow) {
  Reno cc(smss, 10 * smss);
  cc.on_congestion({}, 20 * smss);  // ssthresh = cwnd = 10 SMSS
  ASSERT_EQ(cc.ssthresh(), 10 * smss);
  ASSERT_EQ(cc.cwnd(), 10 * smss);
  for (int i = 0; i < 9; ++i) cc.on_ack(ack_of(smss));
  EXPECT_EQ(cc.cwnd(), 10 * smss);  // 9000 acked < cwnd
  cc.on_ack(ack_of(smss));
  EXPECT_EQ(cc.cwnd(), 11 * smss);
  // The counter keeps the remainder (RFC 3465 2.1): 11 more segments for the next SMSS.
  for (int i = 0; i < 10; ++i) cc.on_ack(ack_of(smss));
  EXPECT_EQ(cc.cwnd(), 11 * smss);
  cc.on_ack(ack_of(smss));
  EXPECT_EQ(cc.cwnd(), 12 * smss);
}

TEST(Reno, CongestionHalvesFlightSizeEq4) {
  Reno cc(smss, 40 * smss);
  cc.on_congestion({}, 30 * smss);  // FlightSize, not cwnd (RFC 5681 3.1 note)
  EXPECT_EQ(cc.ssthresh(), 15 * smss);
  EXPECT_EQ(cc.cwnd(), 15 * smss);
  cc.on_congestion({}, 3 * smss);
  EXPECT_EQ(cc.ssthresh(), 2 * smss);  // never below 2 SMSS
  EXPECT_EQ(cc.cwnd(), 2 * smss);
}

TEST(Reno, RecoveryExitDeflatesToSsthresh) {
  Reno cc(smss, 40 * smss);
  cc.on_congestion({}, 40 * smss);
  cc.on_recovery_exit({});
  EXPECT_EQ(cc.cwnd(), 20 * smss);
}

TEST(Reno, RtoLossWindowAndHeldSsthresh) {
  Reno cc(smss, 40 * smss);
  cc.on_rto({}, 40 * smss);
  EXPECT_EQ(cc.cwnd(), smss);
  EXPECT_EQ(cc.ssthresh(), 20 * smss);
  // The retransmission times out too: FlightSize is now one segment, but RFC 5681 3.1
  // holds ssthresh.
  cc.on_rto({}, smss);
  EXPECT_EQ(cc.ssthresh(), 20 * smss);
  EXPECT_EQ(cc.cwnd(), smss);
  // After an ACK the next timeout is a new loss and recomputes ssthresh.
  cc.on_ack(ack_of(smss));
  cc.on_rto({}, 8 * smss);
  EXPECT_EQ(cc.ssthresh(), 4 * smss);
}

TEST(Reno, SlowStartAfterRtoUsesLimitOne) {
  Reno cc(smss, 40 * smss);
  cc.on_rto({}, 40 * smss);
  cc.on_ack(ack_of(3 * smss));
  EXPECT_EQ(cc.cwnd(), 2 * smss);  // RFC 3465 2.3: L = 1 SMSS
  cc.on_ack(ack_of(3 * smss));
  EXPECT_EQ(cc.cwnd(), 3 * smss);
}

TEST(Reno, IdleRestartWindow) {
  Reno cc(smss, 4 * smss);
  for (int i = 0; i < 20; ++i) cc.on_ack(ack_of(smss));
  ASSERT_GT(cc.cwnd(), 4 * smss);
  cc.on_idle_restart({}, 1s);
  EXPECT_EQ(cc.cwnd(), 4 * smss);  // RW = min(IW, cwnd)
  cc.on_rto({}, 4 * smss);
  cc.on_idle_restart({}, 1s);
  EXPECT_EQ(cc.cwnd(), smss);  // already below IW: unchanged
}

TEST(Reno, HugeAcksSaturate) {
  Reno cc(smss, UINT32_MAX - 10);
  cc.on_ack(ack_of(UINT32_MAX));
  EXPECT_EQ(cc.cwnd(), UINT32_MAX);
}

}  // namespace
}  // namespace esock::tcp
