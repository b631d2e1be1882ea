#include "tcp/engine/congestion.h"

#include <algorithm>

#include "tcp/engine/cubic.h"
#include "tcp/engine/reno.h"

namespace esock::tcp {

CongestionControl::~CongestionControl() = default;

std::uint32_t rfc5681_initial_window(std::uint32_t smss) {
  if (smss > 2190) return 2 * smss;  // eq. (1)
  if (smss > 1095) return 3 * smss;  // eq. (2)
  return 4 * smss;                   // eq. (3)
}

std::unique_ptr<CongestionControl> make_congestion_control(CcAlgorithm algorithm,
                                                           std::uint32_t smss,
                                                           std::uint32_t initial_cwnd) {
  smss = std::max<std::uint32_t>(smss, 1);
  if (initial_cwnd == 0) initial_cwnd = rfc5681_initial_window(smss);
  switch (algorithm) {
    case CcAlgorithm::reno:
      return std::make_unique<Reno>(smss, initial_cwnd);
    case CcAlgorithm::cubic:
      return std::make_unique<Cubic>(smss, initial_cwnd);
  }
  return std::make_unique<Reno>(smss, initial_cwnd);
}

}  // namespace esock::tcp
