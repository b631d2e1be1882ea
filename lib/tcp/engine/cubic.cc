#include "tcp/engine/cubic.h"

#include <algorithm>
#include <cmath>

#include "tcp/engine/reno.h"

namespace esock::tcp {

namespace {
double seconds(Duration d) {
  return static_cast<double>(d.count()) * 1e-9;
}
}  // namespace

// A window below one segment would stall the sender and divide by zero in eq. (4).
Cubic::Cubic(std::uint32_t smss, std::uint32_t initial_cwnd)
    : smss_(std::max<std::uint32_t>(smss, 1)),
      iw_(std::max(static_cast<double>(initial_cwnd), smss_)),
      cwnd_(iw_) {}

std::uint32_t Cubic::cwnd() const {
  return cwnd_ >= static_cast<double>(UINT32_MAX) ? UINT32_MAX : static_cast<std::uint32_t>(cwnd_);
}

double Cubic::w_cubic(double t) const {
  const double d = t - k_;
  return c * d * d * d + w_max_;  // RFC 9438 eq. (1)
}

void Cubic::start_epoch(Instant now) {
  t_epoch_ = now;
  const double cwnd_epoch = cwnd_ / smss_;
  if (rto_epoch_) {
    // RFC 9438 4.8: the first congestion avoidance stage after a timeout starts the curve
    // at its plateau: K = 0 and W_max = the window at the start of the stage.
    w_max_ = cwnd_epoch;
    k_ = 0;
    rto_epoch_ = false;
  } else {
    // RFC 9438 eq. (2). When cwnd_epoch exceeds W_max (slow start overshot it) K is
    // negative and the stage starts in the convex region, as the equation says.
    k_ = std::cbrt((w_max_ - cwnd_epoch) / c);
  }
  w_est_ = cwnd_epoch;  // 4.3: W_est starts at cwnd_epoch (4.8 likewise after an RTO)
  epoch_valid_ = true;
}

void Cubic::end_epoch() {
  epoch_valid_ = false;
}

void Cubic::on_ack(const CcAck& ack) {
  after_rto_ = false;
  if (cwnd_ < static_cast<double>(ssthresh_)) {
    // RFC 9438 4.10: standard slow start below ssthresh (RFC 5681 with RFC 3465 byte
    // counting; HyStart++ is not implemented).
    cwnd_ += reno_detail::slow_start_increase(ack.bytes_acked, static_cast<std::uint32_t>(smss_),
                                              rto_slow_start_);
    return;
  }
  rto_slow_start_ = false;
  if (!epoch_valid_) start_epoch(ack.now);

  const double w = cwnd_ / smss_;
  // The RFC states the per-ACK updates for an ACK of one segment; we scale them by the
  // segments this ACK covers so delayed or stretch ACKs grow the window equally fast.
  const double segments_acked = static_cast<double>(ack.bytes_acked) / smss_;
  const double t = std::max(0.0, seconds(ack.now - t_epoch_));

  // 4.3 eq. (4); alpha_cubic becomes 1 once W_est has reached cwnd_prior, so the estimate
  // then grows like Reno (AIMD(1, 0.5)) would from that point.
  const double a = w_est_ >= cwnd_prior_ ? 1.0 : alpha;
  w_est_ += a * segments_acked / w;

  double next = w;
  if (w_cubic(t) < w_est_) {
    // 4.3 Reno-friendly region: cwnd = W_est. We never shrink cwnd on an ACK, which the
    // RFC does not intend either (W_est can trail a cwnd the cubic target has raised).
    next = std::max(w, w_est_);
  } else {
    // 4.4 concave / 4.5 convex region: aim for W_cubic one RTT ahead, bounded to
    // [cwnd, 1.5 * cwnd] (4.2), and close (target - cwnd) / cwnd per acked segment. RTT is
    // the smoothed RTT; min_rtt stands in before we have one.
    const Duration rtt = ack.srtt > Duration::zero() ? ack.srtt : ack.min_rtt;
    const double target = std::clamp(w_cubic(t + seconds(rtt)), w, 1.5 * w);
    next = w + (target - w) / w * segments_acked;
  }
  cwnd_ = next * smss_;
}

void Cubic::on_congestion(Instant, std::uint32_t flight_size) {
  const double w = cwnd_ / smss_;
  // 4.7 fast convergence: a flow whose W_max keeps shrinking releases bandwidth to new
  // flows by remembering a lower plateau.
  w_max_ = w < w_max_ ? w * (1.0 + beta) / 2.0 : w;
  cwnd_prior_ = w;
  // 4.6: ssthresh from FlightSize (the RFC's choice; using cwnd would need extra care
  // when the flow is application-limited), never below 2 SMSS, and cwnd = ssthresh.
  const double floor2 = 2.0 * smss_;
  const double sst = std::max(static_cast<double>(flight_size) * beta, floor2);
  ssthresh_ = static_cast<std::uint32_t>(std::min(sst, static_cast<double>(UINT32_MAX)));
  cwnd_ = std::max(static_cast<double>(ssthresh_), floor2);
  end_epoch();
  rto_epoch_ = false;
  after_rto_ = false;
  rto_slow_start_ = false;
}

void Cubic::on_recovery_exit(Instant) {
  cwnd_ = std::max(static_cast<double>(ssthresh_), 2.0 * smss_);  // RFC 6582 3.2 step 3
  end_epoch();  // the congestion avoidance stage starts with the next ACK
}

void Cubic::on_rto(Instant, std::uint32_t flight_size) {
  // 4.8: follow RFC 5681 (cwnd = 1 SMSS, and hold ssthresh when the timer fires again for
  // the same retransmission) but compute ssthresh with beta_cubic as in 4.6.
  if (!after_rto_) {
    cwnd_prior_ = cwnd_ / smss_;
    const double sst = std::max(static_cast<double>(flight_size) * beta, 2.0 * smss_);
    ssthresh_ = static_cast<std::uint32_t>(std::min(sst, static_cast<double>(UINT32_MAX)));
  }
  cwnd_ = smss_;
  end_epoch();
  rto_epoch_ = true;
  after_rto_ = true;
  rto_slow_start_ = true;
}

void Cubic::on_idle_restart(Instant, Duration) {
  // RFC 5681 4.1 restart window. The RFC 9438 4.2 time t must not include periods in
  // which cwnd was not updated, so the next congestion avoidance stage starts a new epoch.
  cwnd_ = std::min(iw_, cwnd_);
  end_epoch();
}

}  // namespace esock::tcp
