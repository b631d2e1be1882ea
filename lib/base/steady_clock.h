// The real monotonic clock, for runtimes (poll loops, examples). Engines never include
// this: they are handed `now`.
#pragma once

#include <time.h>

#include "base/time.h"

namespace esock {

class SteadyClock final : public Clock {
 public:
  Instant now() const override {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return {static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec};
  }
};

}  // namespace esock
