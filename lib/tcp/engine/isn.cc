#include "tcp/engine/isn.h"

#include <sodium.h>

#include <algorithm>

#include "base/endian.h"

namespace esock::tcp {

namespace {
// Domain separation: the first input byte tells the uses of the key apart.
constexpr std::uint8_t domain_isn = 0x01;
constexpr std::uint8_t domain_ts = 0x02;
constexpr std::uint8_t domain_cookie = 0x03;
constexpr std::int64_t isn_tick_ns = 4000;  // RFC 6528 section 3: 4 microseconds

static_assert(crypto_shorthash_siphash24_KEYBYTES == 16);
}  // namespace

IsnGenerator::Key IsnGenerator::random_key() {
  // sodium_init is idempotent and thread-safe. It fails only without an entropy source,
  // and then randombytes_buf aborts inside libsodium rather than hand out predictable
  // bytes: a stack must not run with guessable ISNs (RFC 6528 section 3), so we let it.
  if (sodium_init() < 0) {
    // Fall through to randombytes_buf, which reports the failure (see above).
  }
  Key key{};
  randombytes_buf(key.data(), key.size());
  return key;
}

std::uint32_t IsnGenerator::hash(std::uint8_t domain, const FourTuple& t,
                                 std::span<const std::uint32_t> extra) const {
  // Fixed big-endian layout: the result does not depend on host byte order. Input: the
  // domain byte, the tuple (12 octets), then the extra words (none for the ISN's F).
  std::array<std::uint8_t, 13 + 4 * max_extra> in{};
  in[0] = domain;
  store_be32(&in[1], t.local_ip.v);
  store_be16(&in[5], t.local_port);
  store_be32(&in[7], t.remote_ip.v);
  store_be16(&in[11], t.remote_port);
  const std::size_t words = std::min(extra.size(), max_extra);
  for (std::size_t i = 0; i < words; ++i) store_be32(&in[13 + 4 * i], extra[i]);
  std::array<std::uint8_t, crypto_shorthash_siphash24_BYTES> out{};
  crypto_shorthash_siphash24(out.data(), in.data(), 13 + 4 * words, key_.data());
  return load_be32(out.data());
}

std::uint32_t IsnGenerator::cookie_mac(const FourTuple& tuple, std::uint32_t irs,
                                       std::uint32_t tick) const {
  const std::uint32_t extra[] = {irs, tick};
  return hash(domain_cookie, tuple, extra);
}

std::uint32_t IsnGenerator::isn(const FourTuple& tuple, Instant now) const {
  // Floor division keeps M monotonic even for an epoch that makes `now` negative.
  std::int64_t ticks = now.ns / isn_tick_ns;
  if (now.ns % isn_tick_ns < 0) --ticks;
  const auto m = static_cast<std::uint32_t>(static_cast<std::uint64_t>(ticks));
  return m + hash(domain_isn, tuple);
}

std::uint32_t IsnGenerator::ts_offset(const FourTuple& tuple) const {
  return hash(domain_ts, tuple);
}

}  // namespace esock::tcp
