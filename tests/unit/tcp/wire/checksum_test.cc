#include "tcp/wire/checksum.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "base/endian.h"
#include "hex.h"
#include "tcp/wire/checksum_simd.h"

namespace esock::tcp {
namespace {

using test::from_hex;

// A deliberately naive RFC 1071 sum, one 16-bit word at a time, as the reference.
std::uint16_t reference_sum(const std::vector<std::uint8_t>& d) {
  std::uint32_t s = 0;
  for (std::size_t i = 0; i < d.size(); i += 2) {
    std::uint32_t w = std::uint32_t{d[i]} << 8;
    if (i + 1 < d.size()) w |= d[i + 1];
    s += w;
    s = (s & 0xffff) + (s >> 16);
  }
  return static_cast<std::uint16_t>(s);
}

TEST(Checksum, Rfc1071Example) {
  // RFC 1071 section 3: 00 01 f2 03 f4 f5 f6 f7 sums to ddf2.
  const auto d = from_hex("0001f203f4f5f6f7");
  InetChecksum c;
  c.add(d);
  EXPECT_EQ(c.sum(), 0xddf2);
  EXPECT_EQ(c.checksum(), 0x220d);
  EXPECT_EQ(internet_checksum(d), 0x220d);
}

TEST(Checksum, Rfc1071ExampleSplitAtEveryPoint) {
  const auto d = from_hex("0001f203f4f5f6f7");
  for (std::size_t a = 0; a <= d.size(); ++a) {
    for (std::size_t b = a; b <= d.size(); ++b) {
      InetChecksum c;
      c.add(bytes_view(d).subspan(0, a));
      c.add(bytes_view(d).subspan(a, b - a));
      c.add(bytes_view(d).subspan(b));
      EXPECT_EQ(c.sum(), 0xddf2) << a << "," << b;
    }
  }
}

TEST(Checksum, KnownIpv4Header) {
  // A widely used example header whose checksum field holds b861.
  auto h = from_hex("450000730000400040110000c0a80001c0a800c7");
  EXPECT_EQ(internet_checksum(h), 0xb861);
  store_be16(h.data() + 10, 0xb861);
  EXPECT_EQ(internet_checksum(h), 0);
}

TEST(Checksum, OddTrailingOctetIsPaddedWithZero) {
  EXPECT_EQ(internet_checksum(from_hex("ab")), static_cast<std::uint16_t>(~0xab00));
  EXPECT_EQ(internet_checksum(from_hex("0102ab")), static_cast<std::uint16_t>(~0xac02));
}

TEST(Checksum, EmptyAndAllOnes) {
  InetChecksum c;
  c.add({});
  EXPECT_EQ(c.sum(), 0);
  EXPECT_EQ(internet_checksum(from_hex("ffffffff")), 0);
}

TEST(Checksum, RandomPiecesMatchReference) {
  std::mt19937 rng(1071);
  for (int round = 0; round < 300; ++round) {
    std::vector<std::uint8_t> d(rng() % 3000);
    for (auto& b : d) b = static_cast<std::uint8_t>(rng());
    InetChecksum c;
    std::size_t pos = 0;
    while (pos < d.size()) {
      const std::size_t n = std::min<std::size_t>(d.size() - pos, rng() % 37);
      c.add(bytes_view(d).subspan(pos, n));
      pos += n;
    }
    ASSERT_EQ(c.sum(), reference_sum(d)) << "round " << round << " size " << d.size();
  }
}

TEST(Checksum, PseudoHeaderMatchesLinuxPartialChecksum) {
  // Linux leaves the pseudo-header sum in the TCP checksum field of loopback segments
  // (CHECKSUM_PARTIAL), the same convention device.h uses for offload: a 40-octet SYN
  // from 127.0.0.1 to itself carries fe30.
  const Ipv4Addr lo = Ipv4Addr::from_octets(127, 0, 0, 1);
  EXPECT_EQ(ipv4_pseudo_header_sum(lo, lo, ip_proto_tcp, 40), 0xfe30);
  EXPECT_EQ(ipv4_pseudo_header_sum(lo, lo, ip_proto_tcp, 45), 0xfe35);
}

TEST(Checksum, FillThenVerifyTcp) {
  const Ipv4Addr a = Ipv4Addr::from_octets(10, 0, 0, 1), b = Ipv4Addr::from_octets(10, 0, 0, 2);
  // The loopback PSH segment carrying "hello", its checksum field garbage.
  auto seg = from_hex("8ac8b8139dbb5a26e528927780180040fe2d00000101080a41ce4411bc9f61c068656c6c6f");
  mut_bytes header(seg.data(), 32);
  const bytes_view piece1(seg.data() + 32, 3), piece2(seg.data() + 35, 2);
  const bytes_view pieces[] = {piece1, piece2};
  fill_tcp_checksum(a, b, header, pieces);
  EXPECT_TRUE(tcp_checksum_ok(a, b, seg));
  EXPECT_FALSE(tcp_checksum_ok(b, Ipv4Addr::from_octets(10, 0, 0, 3), seg));
  // Independent check: the pseudo-header plus segment sum to all ones by the reference.
  std::vector<std::uint8_t> pseudo = from_hex("0a0000010a00000200060025");
  pseudo.insert(pseudo.end(), seg.begin(), seg.end());
  EXPECT_EQ(reference_sum(pseudo), 0xffff);
  for (std::size_t i = 0; i < seg.size(); ++i) {
    auto bad = seg;
    bad[i] ^= 0x10;
    EXPECT_FALSE(tcp_checksum_ok(a, b, bad)) << i;
  }
}

TEST(Checksum, FillOddPiecesMatchesContiguous) {
  const Ipv4Addr a = Ipv4Addr::from_octets(192, 168, 7, 1), b = Ipv4Addr::from_octets(8, 8, 8, 8);
  std::mt19937 rng(9293);
  std::vector<std::uint8_t> seg(20 + 1001);
  for (auto& x : seg) x = static_cast<std::uint8_t>(rng());
  const bytes_view all[] = {bytes_view(seg).subspan(20)};
  auto one = seg;
  fill_tcp_checksum(a, b, mut_bytes(one.data(), 20), all);
  const bytes_view split[] = {bytes_view(seg).subspan(20, 7), bytes_view(seg).subspan(27, 0),
                              bytes_view(seg).subspan(27, 501), bytes_view(seg).subspan(528)};
  auto many = seg;
  fill_tcp_checksum(a, b, mut_bytes(many.data(), 20), split);
  EXPECT_EQ(one, many);
  EXPECT_TRUE(tcp_checksum_ok(a, b, one));
}

// The vector bulk (checksum_simd.cc) against the word-at-a-time reference, at every start
// alignment and at lengths around its 64-octet rounds, including a buffer long enough to
// pass its 32-bit lane flush (16384 rounds) several times, all ones (the worst case for
// carries) and random octets.
TEST(Checksum, VectorBulkMatchesTheReferenceAtEveryAlignmentAndLength) {
  std::mt19937 rng(1071);
  std::vector<std::uint8_t> buf(64 + 4096);
  for (auto& x : buf) x = static_cast<std::uint8_t>(rng());
  for (std::size_t off = 0; off < 64; off += 7)
    for (std::size_t len : {0, 1, 63, 64, 65, 127, 128, 129, 1000, 1460, 4095}) {
      const std::vector<std::uint8_t> d(buf.begin() + off, buf.begin() + off + len);
      InetChecksum c;
      c.add(d);
      EXPECT_EQ(c.sum(), reference_sum(d)) << "offset " << off << " length " << len;
    }
  for (std::uint8_t fill : {std::uint8_t{0xff}, std::uint8_t{0x5a}}) {
    const std::vector<std::uint8_t> big(3 * 1024 * 1024 + 33, fill);
    InetChecksum c;
    c.add(big);
    EXPECT_EQ(c.sum(), reference_sum(big)) << int{fill};
  }
  std::vector<std::uint8_t> big(3 * 1024 * 1024 + 33);
  for (auto& x : big) x = static_cast<std::uint8_t>(rng());
  InetChecksum c;
  c.add(bytes_view(big).subspan(0, 1001));  // an odd piece first: the bulk runs swapped
  c.add(bytes_view(big).subspan(1001));
  EXPECT_EQ(c.sum(), reference_sum(big));
}

// Each vector kernel the CPU has, called directly (whichever sum_words_simd picks, the
// other must be right too: CI machines differ): its unfolded sum of the octets it consumed
// folds to the reference's, at every alignment, across its lane flush, on all ones.
TEST(Checksum, EveryVectorKernelMatchesTheReference) {
  std::mt19937 rng(8);
  std::vector<std::uint8_t> buf(3 * 1024 * 1024 + 200);
  for (auto& x : buf) x = static_cast<std::uint8_t>(rng());
  const std::vector<std::uint8_t> ones(3 * 1024 * 1024, 0xff);
  int ran = 0;
  for (const detail::SumKernel& k : detail::sum_kernels()) {
    if (!k.have) continue;
    ++ran;
    const auto check = [&](const std::uint8_t* p, std::size_t n) {
      std::uint64_t acc = 0;
      const std::size_t used = k.sum(p, n, &acc);
      ASSERT_LE(used, n);
      ASSERT_GE(used + 128, n + 1) << k.name << ": left more than one round";
      for (int i = 0; i < 4; ++i) acc = (acc & 0xffff) + (acc >> 16);  // RFC 1071 2(C)
      std::uint16_t got = static_cast<std::uint16_t>(acc);
      got = static_cast<std::uint16_t>((got << 8) | (got >> 8));  // native words, 2(B)
      const std::vector<std::uint8_t> d(p, p + used);
      // A zero sum and an all-ones sum are the same number in ones' complement.
      const std::uint16_t want = reference_sum(d);
      EXPECT_TRUE(got == want || (got == 0 && want == 0xffff) || (got == 0xffff && want == 0))
          << k.name << " length " << n << ": " << got << " != " << want;
    };
    for (std::size_t off = 0; off < 64; off += 9)
      for (std::size_t len : {0, 64, 127, 128, 129, 1460, 9000, 16000})
        check(buf.data() + off, len);
    check(buf.data() + 3, buf.size() - 3);
    check(ones.data(), ones.size());
  }
  if (ran == 0) GTEST_SKIP() << "no vector kernel on this CPU";
}

}  // namespace
}  // namespace esock::tcp
