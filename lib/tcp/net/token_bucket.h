// A token bucket (RFC 2697's single-rate idea, without colours): at most `burst` events at
// once and `rate` per second on average. For rate limits on what a peer can make the stack
// send (ICMP echo replies). Time comes from the caller (injected), so tests need no sleep.
#pragma once

#include <algorithm>
#include <cstdint>

#include "base/time.h"

namespace esock::tcp {

class TokenBucket {
 public:
  // rate 0: unlimited.
  TokenBucket(std::uint32_t rate, std::uint32_t burst)
      : rate_(rate), burst_(burst), tokens_(burst) {}

  // Takes a token if one is there at `now`.
  bool take(Instant now) {
    if (rate_ == 0) return true;
    refill(now);
    if (tokens_ == 0) return false;
    --tokens_;
    return true;
  }

 private:
  void refill(Instant now) {
    if (!started_) {
      last_ = now;
      started_ = true;
      return;
    }
    const std::int64_t per = std::max<std::int64_t>(1, 1'000'000'000 / rate_);  // ns a token
    const std::int64_t elapsed = (now - last_).count();
    if (elapsed < per) return;
    const std::int64_t add = elapsed / per;
    if (tokens_ + add >= burst_) {
      tokens_ = burst_;
      last_ = now;
    } else {
      tokens_ += static_cast<std::uint32_t>(add);
      last_ = last_ + Duration(add * per);  // the remainder counts towards the next token
    }
  }

  std::uint32_t rate_, burst_, tokens_;
  Instant last_{};
  bool started_ = false;
};

}  // namespace esock::tcp
