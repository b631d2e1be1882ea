// RFC 5681 congestion control ("Reno"): slow start with appropriate byte counting
// (RFC 3465) and congestion avoidance by byte counting (RFC 5681 3.1, the RFC 3465
// variant it recommends).
#pragma once

#include <cstdint>

#include "tcp/engine/congestion.h"

namespace esock::tcp {

class Reno final : public CongestionControl {
 public:
  Reno(std::uint32_t smss, std::uint32_t initial_cwnd);

  void on_ack(const CcAck& ack) override;
  void on_congestion(Instant now, std::uint32_t flight_size) override;
  void on_recovery_exit(Instant now) override;
  void on_rto(Instant now, std::uint32_t flight_size) override;
  void on_idle_restart(Instant now, Duration rto) override;

  std::uint32_t cwnd() const override { return cwnd_; }
  std::uint32_t ssthresh() const override { return ssthresh_; }
  const char* name() const override { return "reno"; }

 private:
  std::uint32_t smss_;
  std::uint32_t iw_;
  std::uint32_t cwnd_;
  // RFC 5681 3.1: the initial ssthresh is arbitrarily high.
  std::uint32_t ssthresh_ = UINT32_MAX;
  std::uint32_t bytes_acked_ = 0;  // RFC 3465 2.1 counter for congestion avoidance
  bool after_rto_ = false;         // no ACK advanced snd_una since the last RTO
  bool rto_slow_start_ = false;    // in the slow start that follows an RTO (L = 1)
};

// Helpers shared with CUBIC (the parts of RFC 5681 both follow).
namespace reno_detail {
// Slow start growth for one ACK, RFC 3465 2.2: min(N, L * SMSS), with L = 2 normally and
// L = 1 in the slow start that follows an RTO (RFC 3465 2.3: the ACKs then cover segments
// that may have been sent long ago, so they say little about the path now).
std::uint32_t slow_start_increase(std::uint32_t bytes_acked, std::uint32_t smss, bool after_rto);
// RFC 5681 eq. (4): max(FlightSize / 2, 2 * SMSS).
std::uint32_t halve_flight(std::uint32_t flight_size, std::uint32_t smss);
// Saturating add for window arithmetic.
inline std::uint32_t sat_add(std::uint32_t a, std::uint32_t b) {
  return a > UINT32_MAX - b ? UINT32_MAX : a + b;
}
}  // namespace reno_detail

}  // namespace esock::tcp
