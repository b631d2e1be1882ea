// SYN cookies (RFC 4987 section 3.6, lib/tcp/engine/syn_cookie.h): a cookie checks only for
// its own connection and client ISN, within two 64-second ticks; it keeps the MSS rounded
// down to its table; the TSval bits keep window scale and SACK-permitted and never move
// TSval ahead of the clock.
#include "tcp/engine/syn_cookie.h"

#include <gtest/gtest.h>

namespace esock::tcp {
namespace {

const IsnGenerator key(IsnGenerator::Key{7});
const FourTuple tuple{Ipv4Addr::from_octets(10, 0, 0, 1), Ipv4Addr::from_octets(10, 0, 0, 2), 80,
                      40000};
constexpr Instant t0{1'000'000'000'000};

TEST(SynCookie, AValidCookieGivesBackTheMssRoundedDown) {
  const std::uint16_t mss[] = {536, 1460, 1400, 1459, 9000, 100};
  const std::uint16_t want[] = {536, 1460, 1400, 1440, 8960, 536};
  for (int i = 0; i < 6; ++i) {
    const std::uint32_t c = syn_cookie::make(key, tuple, 12345, mss[i], t0);
    EXPECT_EQ(syn_cookie::check(key, tuple, 12345, c, t0), want[i]) << mss[i];
  }
}

TEST(SynCookie, AForgedOrMisdirectedCookieFails) {
  const std::uint32_t c = syn_cookie::make(key, tuple, 12345, 1460, t0);
  EXPECT_FALSE(syn_cookie::check(key, tuple, 12346, c, t0));  // another client ISN
  FourTuple other = tuple;
  other.remote_port = 40001;
  EXPECT_FALSE(syn_cookie::check(key, other, 12345, c, t0));
  EXPECT_FALSE(syn_cookie::check(IsnGenerator(IsnGenerator::Key{8}), tuple, 12345, c, t0));
  int accepted = 0;
  for (std::uint32_t bit = 0; bit < 24; ++bit)
    accepted += syn_cookie::check(key, tuple, 12345, c ^ (1u << bit), t0).has_value();
  EXPECT_EQ(accepted, 0);
}

TEST(SynCookie, ACookieLastsTwoTicks) {
  const std::uint32_t c = syn_cookie::make(key, tuple, 1, 1460, t0);
  const Duration tick{syn_cookie::tick_ns};
  EXPECT_TRUE(syn_cookie::check(key, tuple, 1, c, t0 + tick));
  EXPECT_FALSE(syn_cookie::check(key, tuple, 1, c, t0 + 2 * tick + tick));
}

// The ISN carries the tick mod 32 only; the MAC covers the whole tick count, so an old
// cookie's ACK replayed when those 5 bits come round again (every 32 ticks, 34 minutes)
// is refused. Found by fuzz_tcp_listen: a SYN-ACK's ACK accepted 2144 s after it was sent.
TEST(SynCookie, AReplayAfterTheTickCounterWrapsIsRefused) {
  const std::uint32_t c = syn_cookie::make(key, tuple, 1, 1460, t0);
  const Duration tick{syn_cookie::tick_ns};
  for (int wraps = 1; wraps <= 3; ++wraps) {
    EXPECT_FALSE(syn_cookie::check(key, tuple, 1, c, t0 + 32 * wraps * tick));
    EXPECT_FALSE(syn_cookie::check(key, tuple, 1, c, t0 + (32 * wraps + 1) * tick));
  }
}

TEST(SynCookie, TimestampBitsRoundTripAndNeverRunAhead) {
  for (std::uint32_t tsval : {0x12345678u, 0x12345660u, 0x1fu, 0xffffffffu}) {
    for (int ws = -1; ws <= 14; ++ws) {
      for (bool sack : {false, true}) {
        syn_cookie::TsBits b;
        if (ws >= 0) b.wscale = static_cast<std::uint8_t>(ws);
        b.sack = sack;
        const std::uint32_t v = syn_cookie::encode_ts(tsval, b);
        EXPECT_TRUE(v <= tsval || tsval < 0x20) << tsval;
        const syn_cookie::TsBits d = syn_cookie::decode_ts(v);
        EXPECT_EQ(d.wscale, b.wscale);
        EXPECT_EQ(d.sack, sack);
      }
    }
  }
}

}  // namespace
}  // namespace esock::tcp
