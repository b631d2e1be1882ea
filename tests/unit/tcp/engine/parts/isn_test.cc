// RFC 6528 ISNs and RFC 7323 5.4 timestamp offsets.
#include "tcp/engine/isn.h"

#include <gtest/gtest.h>

#include <sodium.h>

#include <cstring>
#include <set>

namespace esock::tcp {
namespace {

constexpr IsnGenerator::Key key{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

FourTuple tuple(std::uint16_t local_port = 4791) {
  return {Ipv4Addr::from_octets(10, 0, 0, 1), Ipv4Addr::from_octets(10, 0, 0, 2), local_port, 5000};
}

// F computed here from the RFC 6528 recipe: SipHash-2-4 over the tuple with the key.
std::uint32_t reference_f(std::uint8_t domain, const FourTuple& t) {
  const std::uint8_t in[13] = {domain,
                               static_cast<std::uint8_t>(t.local_ip.v >> 24),
                               static_cast<std::uint8_t>(t.local_ip.v >> 16),
                               static_cast<std::uint8_t>(t.local_ip.v >> 8),
                               static_cast<std::uint8_t>(t.local_ip.v),
                               static_cast<std::uint8_t>(t.local_port >> 8),
                               static_cast<std::uint8_t>(t.local_port),
                               static_cast<std::uint8_t>(t.remote_ip.v >> 24),
                               static_cast<std::uint8_t>(t.remote_ip.v >> 16),
                               static_cast<std::uint8_t>(t.remote_ip.v >> 8),
                               static_cast<std::uint8_t>(t.remote_ip.v),
                               static_cast<std::uint8_t>(t.remote_port >> 8),
                               static_cast<std::uint8_t>(t.remote_port)};
  std::uint8_t out[8];
  crypto_shorthash_siphash24(out, in, sizeof in, key.data());
  return (std::uint32_t{out[0]} << 24) | (std::uint32_t{out[1]} << 16) |
         (std::uint32_t{out[2]} << 8) | out[3];
}

TEST(Isn, SipHashKnownAnswer) {
  // The SipHash-2-4 paper's test vector (key 00..0f, empty message) through libsodium:
  // proves the primitive the generator relies on.
  std::uint8_t out[8];
  crypto_shorthash_siphash24(out, nullptr, 0, key.data());
  const std::uint8_t want[8] = {0x31, 0x0e, 0x0e, 0xdd, 0x47, 0xdb, 0x6f, 0x72};
  EXPECT_EQ(0, std::memcmp(out, want, 8));
}

TEST(Isn, IsTimerPlusKeyedHash) {
  const IsnGenerator gen(key);
  const FourTuple t = tuple();
  const std::uint32_t f = reference_f(0x01, t);
  EXPECT_EQ(gen.isn(t, Instant{0}), f);
  EXPECT_EQ(gen.isn(t, Instant{3999}), f);      // still the same 4 us tick
  EXPECT_EQ(gen.isn(t, Instant{4000}), f + 1);  // M ticks every 4 microseconds
  EXPECT_EQ(gen.isn(t, Instant{} + 1s), f + 250000);
  EXPECT_EQ(gen.isn(t, Instant{-4000}), f - 1);  // a negative epoch still counts up
  // M wraps modulo 2^32 (every 2^32 * 4 us, about 4.77 hours).
  EXPECT_EQ(gen.isn(t, Instant{4000LL << 32}), f);
}

TEST(Isn, DependsOnEveryTupleFieldAndTheKey) {
  const IsnGenerator gen(key);
  std::set<std::uint32_t> seen;
  FourTuple t = tuple();
  seen.insert(gen.isn(t, {}));
  t.local_port++;
  seen.insert(gen.isn(t, {}));
  t.remote_port++;
  seen.insert(gen.isn(t, {}));
  t.local_ip.v++;
  seen.insert(gen.isn(t, {}));
  t.remote_ip.v++;
  seen.insert(gen.isn(t, {}));
  IsnGenerator::Key other = key;
  other[15] ^= 1;
  seen.insert(IsnGenerator(other).isn(t, {}));
  EXPECT_EQ(seen.size(), 6u);
}

TEST(Isn, TsOffsetIsPerConnectionAndSeparateFromIsn) {
  const IsnGenerator gen(key);
  const FourTuple t = tuple();
  EXPECT_EQ(gen.ts_offset(t), reference_f(0x02, t));
  EXPECT_NE(gen.ts_offset(t), gen.isn(t, {}));
  EXPECT_NE(gen.ts_offset(t), gen.ts_offset(tuple(4792)));
  EXPECT_EQ(gen.ts_offset(t), IsnGenerator(key).ts_offset(t));  // deterministic
}

TEST(Isn, RandomKeysDiffer) {
  const FourTuple t = tuple();
  const auto a = IsnGenerator::with_random_key();
  const auto b = IsnGenerator::with_random_key();
  // 2^-32 chance of a false failure; the generators must not share a fixed key.
  EXPECT_NE(a.isn(t, {}), b.isn(t, {}));
}

}  // namespace
}  // namespace esock::tcp
