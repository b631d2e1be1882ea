// Retransmission timer value per RFC 6298 (SRTT/RTTVAR smoothing, exponential backoff).
// Pure arithmetic on injected durations: the caller measures RTT samples (timestamps or a
// timed segment) and applies Karn's algorithm (RFC 6298 section 3: no samples from
// retransmitted segments unless timestamps disambiguate them).
#pragma once

#include "base/time.h"

namespace esock::tcp {

struct RttConfig {
  Duration initial_rto = 1s;  // RFC 6298 2.1
  // RFC 6298 2.4 says the RTO SHOULD be rounded up to 1 s. Like Linux (TCP_RTO_MIN) we
  // default to 200 ms: 1 s makes every tail loss on a data-centre path cost a second,
  // while 2.4 itself notes the 1 s floor is a conservative choice. Configurable.
  Duration min_rto = 200ms;
  Duration max_rto = 120s;     // RFC 6298 2.5 allows a maximum of at least 60 s
  Duration granularity = 1ms;  // G, the clock granularity of the caller's samples
};

class RttEstimator {
 public:
  explicit RttEstimator(const RttConfig& cfg);

  // A valid RTT measurement R (RFC 6298 2.2 for the first, 2.3 for later ones). It also
  // collapses any backoff: section 5, after 5.7, lets a new measurement bring the RTO back
  // down. Negative samples (clock trouble upstream) count as zero.
  void on_sample(Duration r);

  // The current RTO: the section 2 value clamped to [min_rto, max_rto] (2.4, 2.5), doubled
  // once per backoff (5.5) and clamped to max_rto again.
  Duration rto() const;

  // RFC 6298 5.5: the retransmission timer expired, double the RTO.
  void backoff();

  // RFC 6298 5.7: the SYN (or SYN-ACK) was retransmitted and no RTT sample was taken, so
  // once the handshake completes the RTO is 3 s rather than initial_rto (when smaller).
  // Also forgets the handshake's backoff.
  void on_syn_loss_established();

  bool has_sample() const { return has_sample_; }
  Duration srtt() const { return srtt_; }
  Duration rttvar() const { return rttvar_; }
  unsigned backoff_count() const { return backoff_count_; }

 private:
  Duration base_rto() const;

  RttConfig cfg_;
  Duration srtt_{0};
  Duration rttvar_{0};
  Duration no_sample_rto_;  // RTO before the first sample (2.1, or 3 s after 5.7)
  unsigned backoff_count_ = 0;
  bool has_sample_ = false;
};

}  // namespace esock::tcp
