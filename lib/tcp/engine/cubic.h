// CUBIC congestion control, RFC 9438. The window grows as a cubic function of the time
// since the last congestion event (section 4.2), never slower than an estimate of Reno's
// window (4.3), and shrinks by beta_cubic = 0.7 on loss (4.6) with fast convergence (4.7).
// The RFC counts windows in segments; we keep cwnd in bytes and convert with SMSS where an
// equation needs segments.
#pragma once

#include <cstdint>

#include "tcp/engine/congestion.h"

namespace esock::tcp {

class Cubic final : public CongestionControl {
 public:
  static constexpr double c = 0.4;     // RFC 9438 4.2, C in segments / s^3
  static constexpr double beta = 0.7;  // RFC 9438 4.6, beta_cubic
  // RFC 9438 4.3: alpha_cubic = 3 * (1 - beta_cubic) / (1 + beta_cubic), which gives the
  // same average window as Reno's AIMD(1, 0.5) for CUBIC's beta.
  static constexpr double alpha = 3.0 * (1.0 - beta) / (1.0 + beta);

  Cubic(std::uint32_t smss, std::uint32_t initial_cwnd);

  void on_ack(const CcAck& ack) override;
  void on_congestion(Instant now, std::uint32_t flight_size) override;
  void on_recovery_exit(Instant now) override;
  void on_rto(Instant now, std::uint32_t flight_size) override;
  void on_idle_restart(Instant now, Duration rto) override;

  std::uint32_t cwnd() const override;
  std::uint32_t ssthresh() const override { return ssthresh_; }
  const char* name() const override { return "cubic"; }

  // Introspection for tests and statistics, in segments / seconds as in the RFC.
  double w_max() const { return w_max_; }
  double k() const { return k_; }
  double w_est() const { return w_est_; }
  double cwnd_prior() const { return cwnd_prior_; }
  bool in_epoch() const { return epoch_valid_; }

 private:
  double w_cubic(double t) const;  // RFC 9438 eq. (1)
  void start_epoch(Instant now);
  void end_epoch();

  double smss_;
  double iw_;                            // bytes
  double cwnd_;                          // bytes; fractional growth accumulates here
  std::uint32_t ssthresh_ = UINT32_MAX;  // RFC 5681 3.1: arbitrarily high at first
  double w_max_ = 0;                     // segments: cwnd just before the last reduction (4.7)
  double k_ = 0;                         // seconds: eq. (2)
  double w_est_ = 0;                     // segments: Reno-friendly estimate (4.3)
  double cwnd_prior_ = 0;                // segments: cwnd when ssthresh was last set (4.3, 4.6)
  Instant t_epoch_{};                    // start of the current congestion avoidance stage
  bool epoch_valid_ = false;
  bool rto_epoch_ = false;       // next epoch is the first after a timeout (4.8)
  bool after_rto_ = false;       // no ACK advanced snd_una since the last RTO
  bool rto_slow_start_ = false;  // RFC 3465 2.3: L = 1 in the slow start after an RTO
};

}  // namespace esock::tcp
