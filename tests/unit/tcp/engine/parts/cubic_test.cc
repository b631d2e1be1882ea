// RFC 9438 CUBIC: the window against the RFC's equations evaluated here, independently of
// the implementation, and the shape of the growth curve around W_max.
#include "tcp/engine/cubic.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace esock::tcp {
namespace {

constexpr std::uint32_t smss = 1000;
constexpr double c_rfc = 0.4;
constexpr double beta_rfc = 0.7;

// RFC 9438 section 4, transcribed in segments and seconds.
struct RefCubic {
  double w;  // cwnd
  double ssthresh = std::numeric_limits<double>::infinity();
  double w_max = 0, k = 0, w_est = 0, cwnd_prior = 0, t_epoch = 0;
  bool epoch = false;

  double w_cubic(double t) const { return c_rfc * std::pow(t - k, 3) + w_max; }  // eq. (1)
  void congestion(double flight) {
    w_max = w < w_max ? w * (1 + beta_rfc) / 2 : w;  // 4.7
    cwnd_prior = w;
    ssthresh = std::max(flight * beta_rfc, 2.0);  // 4.6
    w = std::max(ssthresh, 2.0);
    epoch = false;
  }
  void ack(double now, double segs, double rtt) {
    if (w < ssthresh) {
      w += std::min(segs, 2.0);
      return;
    }
    if (!epoch) {
      t_epoch = now;
      k = std::cbrt((w_max - w) / c_rfc);  // eq. (2)
      w_est = w;
      epoch = true;
    }
    const double t = now - t_epoch;
    const double alpha = w_est >= cwnd_prior ? 1.0 : 3 * (1 - beta_rfc) / (1 + beta_rfc);
    w_est += alpha * segs / w;  // eq. (4)
    if (w_cubic(t) < w_est) {
      w = std::max(w, w_est);
    } else {
      double target = w_cubic(t + rtt);
      if (target < w) target = w;
      if (target > 1.5 * w) target = 1.5 * w;
      w += (target - w) / w * segs;
    }
  }
};

struct Sample {
  double t;     // seconds since the congestion event
  double cwnd;  // segments
  double w_est;
};

// Drives `cc` (and the reference) with one ACK per segment, a window's worth spread evenly
// over each RTT, for `seconds`. Fails the test on the first divergence from the reference.
std::vector<Sample> run_ca(Cubic& cc, RefCubic& ref, Duration rtt, double seconds) {
  std::vector<Sample> per_rtt;
  Instant now{};
  const double rtt_s = static_cast<double>(rtt.count()) * 1e-9;
  while (static_cast<double>(now.ns) * 1e-9 < seconds) {
    per_rtt.push_back({static_cast<double>(now.ns) * 1e-9, cc.cwnd() / double{smss}, cc.w_est()});
    const std::uint32_t acks = std::max<std::uint32_t>(1, cc.cwnd() / smss);
    const Duration step = rtt / acks;
    for (std::uint32_t i = 0; i < acks; ++i) {
      CcAck a;
      a.now = now;
      a.bytes_acked = smss;
      a.flight_size = cc.cwnd();
      a.srtt = rtt;
      cc.on_ack(a);
      ref.ack(static_cast<double>(now.ns) * 1e-9, 1.0, rtt_s);
      EXPECT_NEAR(cc.cwnd() / double{smss}, ref.w, 1e-3) << "t=" << now.ns;
      if (std::fabs(cc.cwnd() / double{smss} - ref.w) > 1e-3) return per_rtt;
      now += step;
    }
  }
  return per_rtt;
}

TEST(Cubic, Constants) {
  EXPECT_DOUBLE_EQ(Cubic::c, 0.4);
  EXPECT_DOUBLE_EQ(Cubic::beta, 0.7);
  EXPECT_NEAR(Cubic::alpha, 0.5294, 1e-4);
}

TEST(Cubic, MultiplicativeDecreaseAndK) {
  Cubic cc(smss, 100 * smss);
  cc.on_congestion({}, 100 * smss);
  EXPECT_EQ(cc.ssthresh(), 70 * smss);
  EXPECT_EQ(cc.cwnd(), 70 * smss);
  EXPECT_DOUBLE_EQ(cc.w_max(), 100.0);
  EXPECT_DOUBLE_EQ(cc.cwnd_prior(), 100.0);
  CcAck a;
  a.now = Instant{} + 5s;
  a.bytes_acked = smss;
  a.srtt = 100ms;
  cc.on_ack(a);
  EXPECT_TRUE(cc.in_epoch());
  EXPECT_NEAR(cc.k(), std::cbrt(30.0 / 0.4), 1e-12);  // eq. (2): ~4.217 s
}

TEST(Cubic, SsthreshUsesFlightSizeAndTwoSegmentFloor) {
  Cubic cc(smss, 100 * smss);
  cc.on_congestion({}, 40 * smss);  // application-limited: FlightSize < cwnd
  EXPECT_EQ(cc.ssthresh(), 28 * smss);
  EXPECT_EQ(cc.cwnd(), 28 * smss);
  cc.on_congestion({}, smss);
  EXPECT_EQ(cc.ssthresh(), 2 * smss);
  EXPECT_EQ(cc.cwnd(), 2 * smss);
}

TEST(Cubic, FastConvergence) {
  Cubic cc(smss, 100 * smss);
  cc.on_congestion({}, 100 * smss);
  EXPECT_DOUBLE_EQ(cc.w_max(), 100.0);
  cc.on_recovery_exit({});
  // A second loss below the previous W_max: release bandwidth (4.7).
  cc.on_congestion({}, 70 * smss);
  EXPECT_DOUBLE_EQ(cc.w_max(), 70.0 * 1.7 / 2);
  EXPECT_EQ(cc.cwnd(), 49 * smss);
}

TEST(Cubic, GrowthMatchesRfcEquationsConcaveThenConvex) {
  Cubic cc(smss, 100 * smss);
  RefCubic ref{100.0};
  cc.on_congestion({}, 100 * smss);
  ref.congestion(100.0);
  const auto samples = run_ca(cc, ref, 100ms, 10.0);
  ASSERT_FALSE(::testing::Test::HasFailure());
  const double k = std::cbrt(30.0 / 0.4);

  // The window follows W_cubic one RTT ahead (4.2), so at time t it lies between
  // W_cubic(t) and W_cubic(t + 2 RTT) give or take a segment of per-ACK rounding, except
  // where the Reno-friendly estimate is larger (4.3: from about 6.3 s at this RTT, until
  // the convex curve overtakes it again).
  bool saw_reno_region = false;
  for (const Sample& s : samples) {
    if (s.t < 0.2) continue;
    const double lo = c_rfc * std::pow(s.t - 0.1 - k, 3) + 100.0;
    const double cubic_hi = c_rfc * std::pow(s.t + 0.2 - k, 3) + 100.0;
    const double hi = std::max(cubic_hi, s.w_est);
    if (s.w_est > cubic_hi) saw_reno_region = true;
    EXPECT_GE(s.cwnd, lo - 1.0) << "t=" << s.t;
    EXPECT_LE(s.cwnd, hi + 1.0) << "t=" << s.t;
  }
  // Concave below W_max: growth per RTT shrinks towards the plateau at t = K; convex
  // beyond: it grows again.
  std::size_t i_k = 0;
  while (samples[i_k].t < k) ++i_k;
  EXPECT_NEAR(samples[i_k].cwnd, 100.0, 2.0);
  for (std::size_t i = 2; i + 5 < i_k; ++i) {
    const double d0 = samples[i].cwnd - samples[i - 1].cwnd;
    const double d1 = samples[i + 1].cwnd - samples[i].cwnd;
    EXPECT_LE(d1, d0 + 0.05) << "concave at t=" << samples[i].t;
    EXPECT_LT(samples[i].cwnd, 100.0);
  }
  for (std::size_t i = i_k + 5; i + 1 < samples.size(); ++i) {
    const double d0 = samples[i].cwnd - samples[i - 1].cwnd;
    const double d1 = samples[i + 1].cwnd - samples[i].cwnd;
    EXPECT_GE(d1, d0 - 0.05) << "convex at t=" << samples[i].t;
    EXPECT_GT(samples[i].cwnd, 100.0);
  }
  EXPECT_TRUE(saw_reno_region);
  EXPECT_GT(samples.back().cwnd, 150.0);  // well into the probing region
}

TEST(Cubic, RenoFriendlyRegionOnShortRtt) {
  // With a 1 ms RTT Reno would grow far faster (per second) than the cubic curve, so
  // cwnd follows W_est: alpha_cubic per RTT until W_est reaches cwnd_prior, then 1 (4.3).
  Cubic cc(smss, 20 * smss);
  RefCubic ref{20.0};
  cc.on_congestion({}, 20 * smss);
  ref.congestion(20.0);
  const auto samples = run_ca(cc, ref, 1ms, 0.05);
  ASSERT_FALSE(::testing::Test::HasFailure());
  ASSERT_GT(samples.size(), 30u);
  // First RTTs: about alpha per RTT (the ACK count per RTT is floor(cwnd), so allow some).
  const double early = samples[6].cwnd - samples[1].cwnd;
  EXPECT_NEAR(early / 5, Cubic::alpha, 0.1);
  // Past cwnd_prior = 20: about one segment per RTT, like Reno.
  std::size_t i = 0;
  while (samples[i].cwnd < 21.0) ++i;
  ASSERT_LT(i + 6, samples.size());
  EXPECT_NEAR((samples[i + 5].cwnd - samples[i].cwnd) / 5, 1.0, 0.15);
  EXPECT_GE(cc.w_est(), cc.cwnd_prior());
}

TEST(Cubic, SlowStartBelowSsthresh) {
  Cubic cc(smss, 10 * smss);
  CcAck a;
  a.bytes_acked = smss;
  for (int i = 0; i < 10; ++i) cc.on_ack(a);
  EXPECT_EQ(cc.cwnd(), 20 * smss);
  a.bytes_acked = 4 * smss;
  cc.on_ack(a);
  EXPECT_EQ(cc.cwnd(), 22 * smss);  // RFC 3465 L = 2 SMSS
  EXPECT_FALSE(cc.in_epoch());
}

TEST(Cubic, TimeoutThenFirstEpochHasKZero) {
  Cubic cc(smss, 100 * smss);
  cc.on_rto({}, 100 * smss);
  EXPECT_EQ(cc.cwnd(), smss);           // RFC 5681 loss window
  EXPECT_EQ(cc.ssthresh(), 70 * smss);  // beta_cubic, 4.8
  cc.on_rto({}, smss);                  // the retransmission times out too
  EXPECT_EQ(cc.ssthresh(), 70 * smss);  // held (RFC 5681 3.1)
  CcAck a;
  a.bytes_acked = smss;
  a.srtt = 50ms;
  while (cc.cwnd() < cc.ssthresh()) {
    cc.on_ack(a);
    a.now += 1ms;
  }
  EXPECT_FALSE(cc.in_epoch());
  const double w_epoch = cc.cwnd() / double{smss};
  cc.on_ack(a);  // first congestion avoidance ACK starts the epoch (4.8)
  EXPECT_TRUE(cc.in_epoch());
  EXPECT_EQ(cc.k(), 0.0);
  EXPECT_DOUBLE_EQ(cc.w_max(), w_epoch);
  EXPECT_GE(cc.w_est(), w_epoch);
  // From the plateau the curve is convex at once: it grows.
  const std::uint32_t before = cc.cwnd();
  for (int i = 0; i < 2000; ++i) {
    a.now += 1ms;
    cc.on_ack(a);
  }
  EXPECT_GT(cc.cwnd(), before);
}

TEST(Cubic, RecoveryExitAndEpochRestart) {
  Cubic cc(smss, 100 * smss);
  cc.on_congestion({}, 100 * smss);
  cc.on_recovery_exit({});
  EXPECT_EQ(cc.cwnd(), 70 * smss);
  EXPECT_FALSE(cc.in_epoch());
}

TEST(Cubic, IdleRestartWindowEndsEpoch) {
  Cubic cc(smss, 10 * smss);
  cc.on_congestion({}, 100 * smss);  // ssthresh = cwnd = 70
  CcAck a;
  a.bytes_acked = smss;
  a.srtt = 10ms;
  cc.on_ack(a);
  ASSERT_TRUE(cc.in_epoch());
  cc.on_idle_restart(Instant{} + 10s, 1s);
  EXPECT_EQ(cc.cwnd(), 10 * smss);
  EXPECT_FALSE(cc.in_epoch());
}

}  // namespace
}  // namespace esock::tcp
