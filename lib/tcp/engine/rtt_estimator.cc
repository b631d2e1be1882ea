#include "tcp/engine/rtt_estimator.h"

#include <algorithm>

namespace esock::tcp {

namespace {
constexpr int k_factor = 4;  // K in RFC 6298 2.2/2.3
}  // namespace

RttEstimator::RttEstimator(const RttConfig& cfg) : cfg_(cfg), no_sample_rto_(cfg.initial_rto) {}

void RttEstimator::on_sample(Duration r) {
  if (r < Duration::zero()) r = Duration::zero();
  if (!has_sample_) {
    // RFC 6298 2.2: SRTT <- R, RTTVAR <- R/2.
    srtt_ = r;
    rttvar_ = r / 2;
    has_sample_ = true;
  } else {
    // RFC 6298 2.3, alpha = 1/8, beta = 1/4. RTTVAR first: it uses the SRTT from before
    // this sample, as the RFC orders the two assignments. Nanosecond integers keep the
    // rounding error far below any clock granularity that matters.
    const Duration err = srtt_ > r ? srtt_ - r : r - srtt_;
    rttvar_ = (3 * rttvar_ + err) / 4;
    srtt_ = (7 * srtt_ + r) / 8;
  }
  // Section 5, after 5.7: a new measurement ends the backoff.
  backoff_count_ = 0;
}

Duration RttEstimator::base_rto() const {
  Duration rto = no_sample_rto_;
  if (has_sample_) rto = srtt_ + std::max(cfg_.granularity, k_factor * rttvar_);  // 2.2/2.3
  return std::clamp(rto, cfg_.min_rto, std::max(cfg_.min_rto, cfg_.max_rto));     // 2.4, 2.5
}

Duration RttEstimator::rto() const {
  Duration rto = base_rto();
  // 5.5 doubles per expiry; stop doubling at the cap so the value never overflows.
  for (unsigned i = 0; i < backoff_count_ && rto < cfg_.max_rto; ++i) rto *= 2;
  return std::min(rto, std::max(cfg_.min_rto, cfg_.max_rto));
}

void RttEstimator::backoff() {
  // Saturate: past ~64 doublings every RTO is max_rto anyway.
  if (backoff_count_ < 64) ++backoff_count_;
}

void RttEstimator::on_syn_loss_established() {
  backoff_count_ = 0;
  if (!has_sample_) no_sample_rto_ = std::max(no_sample_rto_, Duration(3s));
}

}  // namespace esock::tcp
