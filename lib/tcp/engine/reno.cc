#include "tcp/engine/reno.h"

#include <algorithm>

namespace esock::tcp {

namespace reno_detail {

std::uint32_t slow_start_increase(std::uint32_t bytes_acked, std::uint32_t smss, bool after_rto) {
  const std::uint32_t l = after_rto ? smss : sat_add(smss, smss);
  return std::min(bytes_acked, l);
}

std::uint32_t halve_flight(std::uint32_t flight_size, std::uint32_t smss) {
  return std::max(flight_size / 2, sat_add(smss, smss));
}

}  // namespace reno_detail

using namespace reno_detail;

// At least one segment: a zero window could never grow (nothing to ACK).
Reno::Reno(std::uint32_t smss, std::uint32_t initial_cwnd)
    : smss_(std::max<std::uint32_t>(smss, 1)), iw_(std::max(initial_cwnd, smss_)), cwnd_(iw_) {}

void Reno::on_ack(const CcAck& ack) {
  after_rto_ = false;
  if (cwnd_ < ssthresh_) {
    // RFC 5681 3.1: slow start while cwnd < ssthresh (we pick congestion avoidance at
    // equality, which the RFC leaves to the implementation).
    cwnd_ = sat_add(cwnd_, slow_start_increase(ack.bytes_acked, smss_, rto_slow_start_));
    return;
  }
  rto_slow_start_ = false;
  // Congestion avoidance, RFC 3465 2.1 / RFC 5681 3.1: one SMSS per cwnd of acked bytes,
  // which is about one SMSS per RTT however the receiver spaces its ACKs.
  bytes_acked_ = sat_add(bytes_acked_, ack.bytes_acked);
  if (bytes_acked_ >= cwnd_) {
    bytes_acked_ -= cwnd_;
    cwnd_ = sat_add(cwnd_, smss_);
  }
}

void Reno::on_congestion(Instant, std::uint32_t flight_size) {
  ssthresh_ = halve_flight(flight_size, smss_);  // RFC 5681 3.2 step 2, eq. (4)
  cwnd_ = ssthresh_;                             // step 3 without the inflation
  bytes_acked_ = 0;
  after_rto_ = false;
  rto_slow_start_ = false;
}

void Reno::on_recovery_exit(Instant) {
  cwnd_ = ssthresh_;  // RFC 6582 3.2 step 3 (option 1)
  bytes_acked_ = 0;
}

void Reno::on_rto(Instant, std::uint32_t flight_size) {
  // RFC 5681 3.1: when the segment was already retransmitted by the timer (no ACK since
  // the last RTO), ssthresh is held constant: FlightSize is then about one segment and
  // would collapse ssthresh for no new evidence.
  if (!after_rto_) ssthresh_ = halve_flight(flight_size, smss_);
  cwnd_ = smss_;  // the loss window LW, one full-sized segment
  bytes_acked_ = 0;
  after_rto_ = true;
  rto_slow_start_ = true;
}

void Reno::on_idle_restart(Instant, Duration) {
  cwnd_ = std::min(iw_, cwnd_);  // RFC 5681 4.1, RW = min(IW, cwnd)
  bytes_acked_ = 0;
}

}  // namespace esock::tcp
