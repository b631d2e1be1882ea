// Framer and Deframer: round trips at any split, Marker placement checked independently,
// and every error.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "base/endian.h"
#include "mpa/crc32c.h"
#include "mpa/deframer.h"
#include "mpa/framer.h"

namespace esock::mpa {
namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes payload(std::size_t n, std::uint32_t seed) {
  Bytes b(n);
  std::mt19937 rng(seed);
  for (auto& x : b) x = static_cast<std::uint8_t>(rng());
  return b;
}

struct Stream {
  Bytes wire;
  std::vector<Bytes> ulpdus;
  std::vector<std::pair<std::uint64_t, std::size_t>> fpdus;  // stream start, wire size
};

Stream make_stream(bool markers, bool crc, std::uint32_t start,
                   const std::vector<std::size_t>& sizes) {
  Framer f(markers, crc, start);
  Stream s;
  std::uint32_t seed = 1;
  for (std::size_t n : sizes) {
    Bytes u = payload(n, seed++);
    const std::size_t size = f.fpdu_size(n);
    const std::uint64_t at = f.position();
    Bytes out(size + 8, 0xee);
    // Split the ULPDU in two gather pieces (like a DDP header + payload).
    const std::size_t cut = n / 3;
    const bytes_view parts[2] = {bytes_view(u).first(cut), bytes_view(u).subspan(cut)};
    EXPECT_EQ(f.frame(parts, out), size);
    EXPECT_EQ(out[size], 0xee);  // nothing written past the FPDU
    EXPECT_EQ(f.position(), at + size);
    s.wire.insert(s.wire.end(), out.begin(), out.begin() + static_cast<std::ptrdiff_t>(size));
    s.fpdus.emplace_back(at, size);
    s.ulpdus.push_back(std::move(u));
  }
  return s;
}

// Independent check of the wire format: Markers exactly at multiples of 512 with the
// RFC 5044 section 5 FPDUPTR, and the rest exactly length | ULPDU | zero pad | CRC, where
// the CRC covers every octet of the FPDU on the wire before it, Markers included.
void check_wire(const Stream& s, bool markers, bool crc, std::uint32_t start) {
  Bytes unmarked;
  for (std::size_t i = 0; i < s.wire.size(); ++i) {
    const std::uint64_t p = start + i;
    if (markers && p % 512 == 0) {
      ASSERT_LE(i + 4, s.wire.size());
      EXPECT_EQ(load_be16(&s.wire[i]), 0) << "reserved at " << p;
      std::size_t k = 0;
      while (!(s.fpdus[k].first <= p && p < s.fpdus[k].first + s.fpdus[k].second)) ++k;
      const std::uint64_t fpdu_start = s.fpdus[k].first;
      const std::uint64_t header = fpdu_start % 512 == 0 ? fpdu_start + 4 : fpdu_start;
      const std::uint64_t want = p == fpdu_start ? 0 : p - header;
      EXPECT_EQ(load_be16(&s.wire[i + 2]), want) << "FPDUPTR at " << p;
      i += 3;
      continue;
    }
    unmarked.push_back(s.wire[i]);
  }
  Bytes expect;
  for (std::size_t k = 0; k < s.ulpdus.size(); ++k) {
    const Bytes& u = s.ulpdus[k];
    const std::size_t at = expect.size();
    expect.push_back(static_cast<std::uint8_t>(u.size() >> 8));
    expect.push_back(static_cast<std::uint8_t>(u.size()));
    expect.insert(expect.end(), u.begin(), u.end());
    while ((expect.size() - at) % 4 != 0) expect.push_back(0);
    const bytes_view on_wire =
        bytes_view(s.wire).subspan(s.fpdus[k].first - start, s.fpdus[k].second - 4);
    const std::uint32_t c = crc ? crc32c(on_wire) : 0;
    expect.resize(expect.size() + 4);
    store_crc(&expect[expect.size() - 4], c);
  }
  EXPECT_EQ(unmarked, expect);
}

std::vector<Bytes> deframe(const Bytes& wire, bool markers, bool crc, std::uint32_t start,
                           const std::vector<std::size_t>& splits, Error* err = nullptr) {
  Deframer d(markers, crc, 9000, start);
  std::vector<Bytes> got;
  auto sink = [&](bytes_view u) { got.emplace_back(u.begin(), u.end()); };
  std::size_t off = 0, i = 0;
  Error e = Error::none;
  while (off < wire.size() && e == Error::none) {
    const std::size_t n = std::min(splits[i++ % splits.size()], wire.size() - off);
    e = d.feed(bytes_view(wire).subspan(off, n), sink);
    off += n;
  }
  if (err) *err = e;
  EXPECT_TRUE(e != Error::none || d.at_boundary());
  return got;
}

std::vector<std::size_t> sizes_0_to_9000() {
  std::vector<std::size_t> v;
  for (std::size_t n = 0; n <= 40; ++n) v.push_back(n);
  for (std::size_t n :
       {500u,  503u,  504u,  505u,  506u,  507u,  508u,  509u,  510u,  511u,  512u,  513u,
        1016u, 1020u, 1024u, 1460u, 1500u, 4096u, 8192u, 8996u, 8997u, 8998u, 8999u, 9000u})
    v.push_back(n);
  for (std::size_t n = 41; n < 9000; n += 397) v.push_back(n);
  return v;
}

class MpaRoundTrip : public ::testing::TestWithParam<std::tuple<bool, bool, std::uint32_t>> {};

TEST_P(MpaRoundTrip, AnySplitSameUlpdus) {
  const auto [markers, crc, start] = GetParam();
  const auto sizes = sizes_0_to_9000();
  const Stream s = make_stream(markers, crc, start, sizes);
  check_wire(s, markers, crc, start);
  EXPECT_EQ(deframe(s.wire, markers, crc, start, {1}), s.ulpdus);
  EXPECT_EQ(deframe(s.wire, markers, crc, start, {1460}), s.ulpdus);
  EXPECT_EQ(deframe(s.wire, markers, crc, start, {s.wire.size()}), s.ulpdus);
  std::mt19937 rng(start * 31 + markers * 2 + crc);
  std::vector<std::size_t> random;
  for (int i = 0; i < 1000; ++i) random.push_back(1 + rng() % 3000);
  EXPECT_EQ(deframe(s.wire, markers, crc, start, random), s.ulpdus);
}

INSTANTIATE_TEST_SUITE_P(MarkersCrcOffsets, MpaRoundTrip,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool(),
                                            ::testing::Values(0u, 4u, 8u, 500u, 504u, 508u, 1024u,
                                                              4000000000u)));

TEST(MpaDeframer, UnalignedOffsetsWithoutMarkers) {
  for (std::uint32_t start : {1u, 2u, 3u, 511u}) {
    const Stream s = make_stream(false, true, start, {0, 1, 7, 600});
    EXPECT_EQ(deframe(s.wire, false, true, start, {1}), s.ulpdus);
  }
}

TEST(MpaDeframer, ZeroCopyWholeFpdu) {
  const Stream s = make_stream(false, true, 0, {100});
  Deframer d(false, true, 9000);
  const std::uint8_t* seen = nullptr;
  EXPECT_EQ(d.feed(s.wire, [&](bytes_view u) { seen = u.data(); }), Error::none);
  EXPECT_EQ(seen, s.wire.data() + 2);
}

TEST(MpaFramer, MarkerAtFpduStartAndFpduSize) {
  Framer f(true, true, 0);
  EXPECT_EQ(f.fpdu_size(0), 12u);  // leading marker + 8
  Bytes out(64);
  ASSERT_EQ(f.frame(Bytes{}, out), 12u);
  EXPECT_EQ(load_be32(out.data()), 0u);  // reserved 0, FPDUPTR 0
  EXPECT_EQ(f.fpdu_size(0), 8u);
  Framer g(true, false, 508);  // a Marker falls after 4 octets: inside the FPDU
  Bytes u(10, 1);
  ASSERT_EQ(g.frame(u, out), 20u);
  EXPECT_EQ(load_be16(out.data()), 10);
  EXPECT_EQ(load_be16(out.data() + 4 + 2), 4);  // FPDUPTR back to ULPDU_Length
}

TEST(MpaFramer, MaxUlpduFitsEmssExactly) {
  for (bool markers : {false, true}) {
    for (std::uint32_t start = 0; start < 1024; start += 4) {
      Framer f(markers, true, start);
      for (std::size_t emss : {12u, 64u, 512u, 536u, 1448u, 1460u, 4096u, 8960u, 9000u}) {
        const std::size_t m = f.max_ulpdu(emss);
        ASSERT_LE(f.fpdu_size(m), emss) << markers << " " << start << " " << emss;
        ASSERT_GT(f.fpdu_size(m + 1), emss) << markers << " " << start << " " << emss;
        // RFC 5044's position-independent MULPDU is never more than what fits here.
        ASSERT_LE(Framer::mulpdu(emss, markers), m);
      }
    }
  }
  Framer f(false, true);
  EXPECT_EQ(f.max_ulpdu(1460), 1454u);  // 2 + 1454 + 4, no pad
  EXPECT_EQ(Framer::mulpdu(1460, false), 1454u);
}

TEST(MpaFramer, RejectsOversizeAndShortBuffer) {
  Framer f(true, true);
  Bytes big(kMaxUlpduMarkers + 1), out(70000);
  EXPECT_EQ(f.frame(big, out), 0u);
  EXPECT_EQ(f.position(), 0u);
  Bytes small(10);
  EXPECT_EQ(f.frame(Bytes(10), small), 0u);
}

TEST(MpaDeframer, FlippedBitIsCrcError) {
  const Stream s = make_stream(false, true, 0, {10, 100, 30});
  for (std::size_t bit : {2u * 8, 20u * 8 + 3, 14u * 8 + 7}) {  // ULPDU, next FPDU, CRC
    Bytes w = s.wire;
    w[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
    Error e;
    const auto got = deframe(w, false, true, 0, {7}, &e);
    EXPECT_EQ(e, Error::crc);
    EXPECT_EQ(terminate_code(e), (TerminateCode{2, 0, 2}));
  }
  // Without CRC the field is not checked (RFC 5044 4.4).
  Bytes w = s.wire;
  w[15] ^= 1;  // CRC of the first FPDU
  Error e;
  EXPECT_EQ(deframe(w, false, false, 0, {5}, &e).size(), 3u);
  EXPECT_EQ(e, Error::none);
}

TEST(MpaDeframer, LengthErrors) {
  Stream s = make_stream(false, true, 0, {10, 20});
  Bytes w = s.wire;
  store_be16(&w[16], 9001);  // second FPDU claims more than the 9000 we accept
  Error e;
  auto got = deframe(w, false, true, 0, {1}, &e);
  EXPECT_EQ(e, Error::length);
  EXPECT_EQ(got.size(), 1u);
  EXPECT_EQ(terminate_code(e).code, kLlpMarker);
  got = deframe(w, false, true, 0, {w.size()}, &e);  // fast path too
  EXPECT_EQ(e, Error::length);
  // Inconsistent (smaller) length: framing lost, caught by the CRC.
  w = s.wire;
  store_be16(&w[0], 6);
  deframe(w, false, true, 0, {3}, &e);
  EXPECT_EQ(e, Error::crc);
}

TEST(MpaDeframer, MarkerErrorsAndStickyFailure) {
  const Stream s = make_stream(true, false, 0, {600, 40});
  // Marker 0 (FPDUPTR 0) and marker 512 (inside the first FPDU, FPDUPTR 508).
  ASSERT_EQ(load_be16(&s.wire[2]), 0);
  ASSERT_EQ(load_be16(&s.wire[514]), 508);
  for (std::size_t at : {3u, 515u}) {
    Bytes w = s.wire;
    w[at] ^= 0x10;
    Deframer d(true, false, 9000);
    int n = 0;
    auto sink = [&](bytes_view) { ++n; };
    EXPECT_EQ(d.feed(w, sink), Error::marker);
    EXPECT_EQ(d.feed(w, sink), Error::marker);  // stays failed
    EXPECT_EQ(n, 0);
  }
  // Low two bits of FPDUPTR are ignored by the receiver.
  Bytes w = s.wire;
  w[515] |= 0x03;
  Error e;
  EXPECT_EQ(deframe(w, true, false, 0, {9}, &e).size(), 2u);
  EXPECT_EQ(e, Error::none);
}

}  // namespace
}  // namespace esock::mpa
