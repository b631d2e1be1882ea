#include "tcp/engine/syn_cookie.h"

#include <algorithm>

namespace esock::tcp::syn_cookie {

namespace {
constexpr std::uint32_t mac_mask = 0x00ffffff;

constexpr std::uint32_t tick_bits = 0x1f;

// The whole tick count (floor division: monotonic for a negative epoch too); the MAC
// covers all of it and the ISN carries its low 5 bits, so a cookie cannot come back to
// life when those 5 bits wrap (as Linux hashes its full minute counter).
std::uint32_t ticks_of(Instant now) {
  std::int64_t t = now.ns / tick_ns;
  if (now.ns % tick_ns < 0) --t;
  return static_cast<std::uint32_t>(static_cast<std::uint64_t>(t));
}
}  // namespace

std::uint32_t make(const IsnGenerator& key, const FourTuple& t, std::uint32_t irs,
                   std::uint16_t peer_mss, Instant now) {
  std::uint32_t idx = 0;
  for (std::uint32_t i = 0; i < mss_table.size(); ++i)
    if (mss_table[i] <= peer_mss) idx = i;
  const std::uint32_t ticks = ticks_of(now);
  return ((ticks & tick_bits) << 27) | (idx << 24) | (key.cookie_mac(t, irs, ticks) & mac_mask);
}

std::optional<std::uint16_t> check(const IsnGenerator& key, const FourTuple& t, std::uint32_t irs,
                                   std::uint32_t cookie, Instant now) {
  // The tick it was made in: now's, or the one before, whose low 5 bits it carries.
  const std::uint32_t now_ticks = ticks_of(now);
  const std::uint32_t age = (now_ticks - (cookie >> 27)) & tick_bits;
  if (age > 1) return std::nullopt;
  const std::uint32_t ticks = now_ticks - age;
  if ((key.cookie_mac(t, irs, ticks) & mac_mask) != (cookie & mac_mask)) return std::nullopt;
  return mss_table[(cookie >> 24) & 0x7];
}

std::uint32_t encode_ts(std::uint32_t tsval, TsBits b) {
  const std::uint32_t ws = b.wscale ? std::min<std::uint8_t>(*b.wscale, 14) : 15;
  const std::uint32_t bits = ws | (b.sack ? 0x10u : 0u);
  std::uint32_t v = (tsval & ~0x1fu) | bits;
  if (v > tsval) v -= 0x20;  // never ahead of the clock (a wrap is harmless, 5.4)
  return v;
}

TsBits decode_ts(std::uint32_t tsecr) {
  TsBits b;
  const std::uint32_t ws = tsecr & 0x0f;
  if (ws != 15) b.wscale = static_cast<std::uint8_t>(ws);
  b.sack = (tsecr & 0x10) != 0;
  return b;
}

}  // namespace esock::tcp::syn_cookie
