// RFC 6298 RTO computation: first and later samples, clamps, backoff, granularity.
#include "tcp/engine/rtt_estimator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace esock::tcp {
namespace {

TEST(RttEstimator, InitialRtoBeforeAnySample) {
  RttEstimator est(RttConfig{});
  EXPECT_FALSE(est.has_sample());
  EXPECT_EQ(est.rto(), 1s);  // RFC 6298 2.1
}

TEST(RttEstimator, FirstSampleRule22) {
  RttEstimator est(RttConfig{});
  est.on_sample(100ms);
  EXPECT_TRUE(est.has_sample());
  EXPECT_EQ(est.srtt(), 100ms);
  EXPECT_EQ(est.rttvar(), 50ms);
  EXPECT_EQ(est.rto(), 300ms);  // 100 + 4 * 50
}

TEST(RttEstimator, LaterSampleRule23UsesOldSrttForRttvar) {
  RttEstimator est(RttConfig{});
  est.on_sample(100ms);
  est.on_sample(200ms);
  // RTTVAR = 3/4 * 50 + 1/4 * |100 - 200| = 62.5; SRTT = 7/8 * 100 + 1/8 * 200 = 112.5.
  EXPECT_EQ(est.rttvar(), 62500us);
  EXPECT_EQ(est.srtt(), 112500us);
  EXPECT_EQ(est.rto(), 362500us);
}

TEST(RttEstimator, MatchesFloatingPointReferenceOverManySamples) {
  std::mt19937 rng(6298);
  std::uniform_int_distribution<int> ms(1, 500);
  RttConfig cfg;
  cfg.min_rto = 0ms;
  RttEstimator est(cfg);
  double srtt = 0;
  double rttvar = 0;
  for (int i = 0; i < 1000; ++i) {
    const double r = ms(rng) * 1e6;  // ns
    if (i == 0) {
      srtt = r;
      rttvar = r / 2;
    } else {
      rttvar = 0.75 * rttvar + 0.25 * std::fabs(srtt - r);
      srtt = 0.875 * srtt + 0.125 * r;
    }
    est.on_sample(Duration(static_cast<std::int64_t>(r)));
    // Integer nanoseconds lose under a nanosecond per step; the error does not build up
    // beyond a few nanoseconds because each step shrinks the previous error.
    ASSERT_NEAR(static_cast<double>(est.srtt().count()), srtt, 10.0);
    ASSERT_NEAR(static_cast<double>(est.rttvar().count()), rttvar, 10.0);
    const double rto = srtt + std::max(1e6, 4 * rttvar);
    ASSERT_NEAR(static_cast<double>(est.rto().count()), std::min(rto, 120e9), 50.0);
  }
}

TEST(RttEstimator, MinRtoClampRule24) {
  RttEstimator est(RttConfig{});
  est.on_sample(1ms);
  EXPECT_EQ(est.rto(), 200ms);  // 1 + 4 * 0.5 = 3 ms, raised to min_rto
  RttConfig rfc;
  rfc.min_rto = 1s;  // the RFC's SHOULD
  RttEstimator strict(rfc);
  strict.on_sample(1ms);
  EXPECT_EQ(strict.rto(), 1s);
}

TEST(RttEstimator, GranularityFloorsTheVarianceTerm) {
  RttConfig cfg;
  cfg.min_rto = 0ms;
  cfg.granularity = 10ms;
  RttEstimator est(cfg);
  for (int i = 0; i < 200; ++i) est.on_sample(50ms);  // RTTVAR decays towards 0
  EXPECT_LT(4 * est.rttvar(), 10ms);
  EXPECT_EQ(est.rto(), 60ms);  // SRTT + max(G, 4 * RTTVAR)
}

TEST(RttEstimator, BackoffDoublesAndCapsRule55) {
  RttEstimator est(RttConfig{});
  est.on_sample(100ms);
  est.backoff();
  EXPECT_EQ(est.backoff_count(), 1u);
  EXPECT_EQ(est.rto(), 600ms);
  est.backoff();
  EXPECT_EQ(est.rto(), 1200ms);
  for (int i = 0; i < 100; ++i) est.backoff();
  EXPECT_EQ(est.rto(), 120s);  // RFC 6298 2.5 maximum
}

TEST(RttEstimator, BackoffBeforeFirstSample) {
  RttEstimator est(RttConfig{});
  est.backoff();
  est.backoff();
  EXPECT_EQ(est.rto(), 4s);
}

TEST(RttEstimator, NewSampleCollapsesBackoff) {
  RttEstimator est(RttConfig{});
  est.on_sample(100ms);
  est.backoff();
  est.backoff();
  est.on_sample(100ms);
  EXPECT_EQ(est.backoff_count(), 0u);
  EXPECT_EQ(est.rto(), 100ms + 4 * 37500us);
}

TEST(RttEstimator, MaxRtoClampsLargeSamples) {
  RttEstimator est(RttConfig{});
  est.on_sample(100s);
  EXPECT_EQ(est.rto(), 120s);
}

TEST(RttEstimator, NegativeSampleCountsAsZero) {
  RttEstimator est(RttConfig{});
  est.on_sample(-5ms);
  EXPECT_EQ(est.srtt(), 0ms);
  EXPECT_EQ(est.rto(), 200ms);
}

TEST(RttEstimator, SynLossMeansThreeSecondsRule57) {
  RttEstimator est(RttConfig{});
  est.backoff();  // the SYN was retransmitted: no valid sample (Karn)
  est.on_syn_loss_established();
  EXPECT_EQ(est.backoff_count(), 0u);
  EXPECT_EQ(est.rto(), 3s);
  est.on_sample(100ms);  // then the first real sample takes over
  EXPECT_EQ(est.rto(), 300ms);
}

}  // namespace
}  // namespace esock::tcp
