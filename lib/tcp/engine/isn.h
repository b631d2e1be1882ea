// Initial sequence numbers, RFC 6528 section 3: ISN = M + F(localip, localport, remoteip,
// remoteport, secretkey), M a timer ticking every 4 microseconds and F SipHash-2-4 keyed
// with a per-stack secret. An off-path attacker cannot guess another connection's ISN,
// while one 4-tuple still sees increasing ISNs (RFC 9293 3.4.1, old duplicates).
// The clock is injected (Instant), the key too: the engine stays deterministic in tests.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "base/time.h"
#include "tcp/wire/addr.h"

namespace esock::tcp {

class IsnGenerator {
 public:
  using Key = std::array<std::uint8_t, 16>;  // crypto_shorthash_siphash24_KEYBYTES

  explicit IsnGenerator(const Key& key) : key_(key) {}
  // A key from libsodium's CSPRNG (runtimes; tests pass a fixed key).
  static Key random_key();
  static IsnGenerator with_random_key() { return IsnGenerator(random_key()); }

  // RFC 6528 section 3. M is now / 4 us, taken modulo 2^32 (it wraps every ~4.77 h,
  // as the RFC's timer does).
  std::uint32_t isn(const FourTuple& tuple, Instant now) const;

  // RFC 7323 section 5.4: a per-connection random offset added to TSval, so timestamps
  // reveal neither uptime nor a clock shared across connections. Same key, its own
  // domain separation byte, so it is unrelated to the ISN's F.
  std::uint32_t ts_offset(const FourTuple& tuple) const;

  // The MAC of a SYN cookie (syn_cookie.h): the tuple, the client's ISN and the time tick,
  // under the same key with its own domain byte.
  std::uint32_t cookie_mac(const FourTuple& tuple, std::uint32_t irs, std::uint32_t tick) const;

 private:
  static constexpr std::size_t max_extra = 2;  // words after the tuple (cookie: ISN, tick)
  std::uint32_t hash(std::uint8_t domain, const FourTuple& tuple,
                     std::span<const std::uint32_t> extra = {}) const;
  Key key_;
};

}  // namespace esock::tcp
