// SYN cookies (RFC 4987 section 3.6): when a listener's half-open backlog is full, the
// SYN-ACK is sent without keeping any state, its ISN a keyed MAC of the connection and
// the client's ISN; the client's ACK (ack = ISN + 1) proves the handshake and rebuilds the
// connection. Layout of the ISN:
//
//   bits 31-27  time tick (64 s, mod 32): a cookie is good for the tick it was made in
//               and the next one (64 to 128 s)
//   bits 26-24  index of the client's MSS in mss_table (rounded down)
//   bits 23-0   SipHash-2-4 of (4-tuple, client ISN, whole tick count), keyed with the
//               stack's secret: the count, not its 5 bits, so a cookie stays dead when
//               the 5 bits wrap (every 34 minutes)
//
// What a SYN-ACK cannot carry in its ISN (the client's window scale and SACK-permitted)
// rides in the low 5 bits of our TSval, which the client echoes in TSecr (as Linux does);
// without timestamps a cookie connection has neither (RFC 4987 section 3.6 notes the
// loss). No I/O, no clock: time and key are passed in.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "base/time.h"
#include "tcp/engine/isn.h"
#include "tcp/wire/addr.h"

namespace esock::tcp::syn_cookie {

inline constexpr std::array<std::uint16_t, 8> mss_table{536,  1200, 1360, 1400,
                                                        1440, 1460, 4312, 8960};
inline constexpr std::int64_t tick_ns = 64'000'000'000;

// The ISN for a SYN-ACK to a client whose ISN is `irs` and whose MSS option said
// `peer_mss` (536 without one).
std::uint32_t make(const IsnGenerator& key, const FourTuple& t, std::uint32_t irs,
                   std::uint16_t peer_mss, Instant now);
// The MSS a valid cookie encodes, or nullopt (forged, or older than two ticks).
std::optional<std::uint16_t> check(const IsnGenerator& key, const FourTuple& t, std::uint32_t irs,
                                   std::uint32_t cookie, Instant now);

struct TsBits {
  std::optional<std::uint8_t> wscale;  // the client's shift (clamped to 14), if it sent one
  bool sack = false;
};
// TSval with its low 5 bits replaced by `b` (never above the clock: timestamps stay
// monotonic, RFC 7323 section 5.4).
std::uint32_t encode_ts(std::uint32_t tsval, TsBits b);
TsBits decode_ts(std::uint32_t tsecr);

}  // namespace esock::tcp::syn_cookie
