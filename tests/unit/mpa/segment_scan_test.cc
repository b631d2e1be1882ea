// scan_segment: segments cut from Framer output at FPDU boundaries are found exactly (the
// ULPDUs rebuilt from hdr + pieces, pieces pointing into the segment); cut anywhere else,
// corrupted, or unverifiable they are refused and nothing is returned.
#include "mpa/segment_scan.h"

#include <gtest/gtest.h>

#include "base/endian.h"
#include "fpdu_stream.h"

namespace esock::mpa {
namespace {

using test::Bytes;

struct Scan {
  ScanResult r = ScanResult::ok;
  std::size_t count = 0;
  std::vector<ScannedFpdu> fpdus;
  std::vector<bytes_view> pieces;
};

Scan scan(bytes_view seg, std::uint64_t pos, ScanConfig cfg) {
  Scan s;
  s.fpdus.resize(scan_max_fpdus(seg.size()));
  s.pieces.resize(scan_max_pieces(seg.size()));
  s.r = scan_segment(seg, pos, cfg, s.fpdus, s.pieces, &s.count);
  if (s.r != ScanResult::ok) {
    EXPECT_EQ(s.count, 0u);
  }
  return s;
}

// The ULPDU from hdr + pieces, checking every piece is a non-empty view into seg.
Bytes ulpdu_of(const ScannedFpdu& f, bytes_view seg) {
  Bytes u(f.hdr.begin(), f.hdr.begin() + f.hdr_len);
  for (const bytes_view& p : f.pieces) {
    EXPECT_FALSE(p.empty());
    EXPECT_GE(p.data(), seg.data());
    EXPECT_LE(p.data() + p.size(), seg.data() + seg.size());
    u.insert(u.end(), p.begin(), p.end());
  }
  EXPECT_EQ(f.hdr_len, std::min<std::size_t>(f.ulpdu_len, kScanHdrLen));
  EXPECT_EQ(u.size(), f.ulpdu_len);
  return u;
}

// A whole Marker lies in stream range [from, to).
bool has_marker(std::uint64_t from, std::uint64_t to) {
  const std::uint64_t m = from + to_next_marker(from);
  return m + kMarkerLen <= to;
}

class MpaScan : public ::testing::TestWithParam<std::tuple<bool, bool, std::uint32_t>> {};

TEST_P(MpaScan, WholeFpduRunsFoundAndOtherCutsRefused) {
  const auto [markers, crc, start] = GetParam();
  const ScanConfig cfg{markers, crc, 9000};
  std::mt19937 rng(start * 4 + markers * 2 + crc + 11);
  for (int trial = 0; trial < 8; ++trial) {
    std::vector<std::size_t> sizes(25);
    for (auto& n : sizes) n = test::random_ulpdu_size(rng);
    const test::FpduStream s = test::make_fpdu_stream(markers, crc, start, sizes, rng);
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      for (std::size_t j = i + 1; j <= std::min(sizes.size(), i + 5); ++j) {
        const bytes_view seg = bytes_view(s.wire).subspan(s.at[i], s.end(j - 1) - s.at[i]);
        const std::uint64_t pos = start + s.at[i];
        const Scan got = scan(seg, pos, cfg);
        if (!markers && !crc) {
          ASSERT_EQ(got.r, ScanResult::not_self_describing);
          continue;
        }
        if (!crc && !has_marker(pos, pos + seg.size())) {
          ASSERT_EQ(got.r, ScanResult::not_self_describing);
          continue;
        }
        ASSERT_EQ(got.r, ScanResult::ok) << i << ".." << j << ": " << to_string(got.r);
        ASSERT_EQ(got.count, j - i);
        for (std::size_t k = 0; k < got.count; ++k) {
          const ScannedFpdu& f = got.fpdus[k];
          EXPECT_EQ(f.offset, s.at[i + k] - s.at[i]);
          EXPECT_EQ(f.wire_len, s.size[i + k]);
          EXPECT_EQ(ulpdu_of(f, seg), s.ulpdus[i + k]);
        }
        // Cut the start inside the first FPDU, or the end inside the last: never placed.
        const std::size_t cut = 1 + rng() % (s.size[i] - 1);
        const Scan head = scan(seg.subspan(cut), pos + cut, cfg);
        EXPECT_NE(head.r, ScanResult::ok) << i << ".." << j << " cut " << cut;
        const std::size_t tail_cut = 1 + rng() % (s.size[j - 1] - 1);
        const bytes_view short_seg = seg.first(seg.size() - tail_cut);
        const Scan tail = scan(short_seg, pos, cfg);
        const bool verifiable = crc || has_marker(pos, pos + short_seg.size());
        EXPECT_EQ(tail.r, verifiable ? ScanResult::partial : ScanResult::not_self_describing)
            << i << ".." << j << " cut " << tail_cut << " of " << s.size[j - 1] << " len "
            << short_seg.size() << " " << markers << crc << " " << start;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(MarkersCrcOffsets, MpaScan,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool(),
                                            ::testing::Values(0u, 4u, 500u, 508u, 1020u,
                                                              4000000000u)));

TEST_P(MpaScan, CorruptedOctetsRefused) {
  const auto [markers, crc, start] = GetParam();
  if (!crc) GTEST_SKIP() << "payload corruption is only detectable with CRC";
  const ScanConfig cfg{markers, crc, 9000};
  std::mt19937 rng(start + markers + 101);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<std::size_t> sizes(1 + rng() % 4);
    for (auto& n : sizes) n = std::max<std::size_t>(1, test::random_ulpdu_size(rng));
    const test::FpduStream s = test::make_fpdu_stream(markers, crc, start, sizes, rng);
    // Any single flipped bit: never ok. In a ULPDU octet or the CRC it is a CRC error.
    Bytes w = s.wire;
    const std::size_t at = rng() % w.size();
    w[at] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
    EXPECT_NE(scan(w, start, cfg).r, ScanResult::ok) << "flip at " << at;
    const Scan good = scan(s.wire, start, cfg);
    ASSERT_EQ(good.r, ScanResult::ok);
    const ScannedFpdu& f = good.fpdus[rng() % good.count];
    w = s.wire;
    if (!f.pieces.empty()) {
      const bytes_view p = f.pieces[rng() % f.pieces.size()];
      w[static_cast<std::size_t>(p.data() - s.wire.data()) + rng() % p.size()] ^= 0x40;
      EXPECT_EQ(scan(w, start, cfg).r, ScanResult::crc_error);
      w = s.wire;
    }
    w[f.offset + f.wire_len - 1 - rng() % 4] ^= 0x01;  // the CRC field
    EXPECT_EQ(scan(w, start, cfg).r, ScanResult::crc_error);
  }
}

TEST(MpaScan, RefusalsBeforeAnyFpdu) {
  std::mt19937 rng(1);
  const test::FpduStream s = test::make_fpdu_stream(true, true, 0, {600, 20}, rng);
  EXPECT_EQ(scan(s.wire, 0, {false, false, 9000}).r, ScanResult::not_self_describing);
  EXPECT_EQ(scan({}, 0, {true, true, 9000}).r, ScanResult::partial);
  // With Markers every FPDU and Marker is 4-aligned: other starts are mid-something.
  EXPECT_EQ(scan(bytes_view(s.wire).subspan(2), 2, {true, true, 9000}).r, ScanResult::partial);
  // Starts at the Marker inside the first FPDU (position 512, FPDUPTR 508).
  ASSERT_EQ(load_be16(&s.wire[514]), 508);
  EXPECT_EQ(scan(bytes_view(s.wire).subspan(512), 512, {true, true, 9000}).r, ScanResult::partial);
  // Markers without CRC and no Marker in the segment: nothing to verify the start with.
  const test::FpduStream t = test::make_fpdu_stream(true, false, 4, {20, 30}, rng);
  EXPECT_EQ(scan(t.wire, 4, {true, false, 9000}).r, ScanResult::not_self_describing);
  EXPECT_EQ(scan(t.wire, 4, {true, true, 9000}).r, ScanResult::crc_error);  // sent without
}

TEST(MpaScan, LengthAndMarkerErrors) {
  std::mt19937 rng(2);
  const test::FpduStream s = test::make_fpdu_stream(true, true, 0, {100, 1200, 8}, rng);
  EXPECT_EQ(scan(s.wire, 0, {true, true, 1200}).r, ScanResult::ok);
  EXPECT_EQ(scan(s.wire, 0, {true, true, 1199}).r, ScanResult::length_error);
  // The Marker at 1024 falls inside the second FPDU (header at 112, FPDUPTR 912). Its two
  // low bits are ignored; a pointer 4 octets off is a Marker error.
  Bytes w = s.wire;
  ASSERT_EQ(load_be16(&w[1026]), 912);
  w[1027] ^= 0x03;
  EXPECT_EQ(scan(w, 0, {true, false, 9000}).r, ScanResult::ok);
  EXPECT_EQ(scan(w, 0, {true, true, 9000}).r, ScanResult::crc_error);  // Markers are covered
  w[1027] ^= 0x04;
  EXPECT_EQ(scan(w, 0, {true, false, 9000}).r, ScanResult::marker_error);
  // The stream's leading Marker must say FPDUPTR 0; another value: the FPDU began earlier.
  w = s.wire;
  w[3] = 8;
  EXPECT_EQ(scan(w, 0, {true, false, 9000}).r, ScanResult::partial);
}

TEST(MpaScan, NoRoomIsAllOrNothing) {
  std::mt19937 rng(4);
  const test::FpduStream s = test::make_fpdu_stream(true, true, 0, {5, 700, 40}, rng);
  std::vector<ScannedFpdu> out(3);
  std::vector<bytes_view> pieces(4);  // 700 octets across a Marker: 2 pieces; 40: 1
  std::size_t n = 99;
  EXPECT_EQ(scan_segment(s.wire, 0, {true, true, 9000}, out, pieces, &n), ScanResult::ok);
  EXPECT_EQ(n, 3u);
  EXPECT_EQ(out[1].pieces.size(), 2u);
  EXPECT_EQ(out[2].pieces.size(), 1u);
  EXPECT_EQ(scan_segment(s.wire, 0, {true, true, 9000}, std::span(out).first(2), pieces, &n),
            ScanResult::no_room);
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(scan_segment(s.wire, 0, {true, true, 9000}, out, std::span(pieces).first(2), &n),
            ScanResult::no_room);
  EXPECT_EQ(n, 0u);
}

// What an optimized sender (RFC 5044 section 9) puts in each segment: one FPDU of at most
// an MSS. Every one is placeable alone, at every alignment against the Markers.
TEST(MpaScan, OneFpduPerMssSegment) {
  for (bool markers : {false, true}) {
    Framer f(markers, true);
    std::mt19937 rng(6);
    for (int k = 0; k < 2000; ++k) {
      const std::size_t ulen = rng() % 3 == 0 ? f.max_ulpdu(1460) : rng() % f.max_ulpdu(1460);
      const Bytes u = test::random_bytes(ulen, rng);
      const std::uint64_t pos = f.position();
      Bytes seg(f.fpdu_size(ulen));
      ASSERT_EQ(f.frame(u, seg), seg.size());
      ASSERT_LE(seg.size(), 1460u);
      const Scan got = scan(seg, pos, {markers, true, 1460});
      ASSERT_EQ(got.r, ScanResult::ok);
      ASSERT_EQ(got.count, 1u);
      EXPECT_LE(got.fpdus[0].pieces.size(), 4u);  // at most 3 Markers inside
      EXPECT_EQ(ulpdu_of(got.fpdus[0], seg), u);
    }
  }
}

}  // namespace
}  // namespace esock::mpa
