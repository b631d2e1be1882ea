// Framer::frame_pieces: the pieces concatenate to exactly frame()'s FPDU, the payload is
// only referenced (never copied), and the documented bounds on scratch and pieces hold.
#include <gtest/gtest.h>

#include "fpdu_stream.h"

namespace esock::mpa {
namespace {

using test::Bytes;

struct Framed {
  std::size_t count = 0;
  std::vector<FramePiece> pieces;
  Bytes scratch;
};

Framed frame_in_pieces(Framer& f, bytes_view hdr, std::span<const bytes_view> payload,
                       std::size_t views) {
  std::size_t plen = 0;
  for (const bytes_view& v : payload) plen += v.size();
  Framed r;
  r.scratch.resize(f.scratch_size(hdr.size(), plen));
  r.pieces.resize(Framer::max_pieces(f.fpdu_size(hdr.size() + plen), views));
  r.count = f.frame_pieces(hdr, payload, r.scratch, r.pieces);
  r.pieces.resize(r.count);
  return r;
}

class MpaFramePieces : public ::testing::TestWithParam<std::tuple<bool, bool, std::uint32_t>> {};

TEST_P(MpaFramePieces, ConcatenationIsFrameOutput) {
  const auto [markers, crc, start] = GetParam();
  std::mt19937 rng(start * 4 + markers * 2 + crc + 3);
  Framer by_pieces(markers, crc, start), by_copy(markers, crc, start);
  for (int k = 0; k < 1500; ++k) {
    const Bytes hdr = test::random_bytes(rng() % 33, rng);
    const Bytes pay = test::random_bytes(test::random_ulpdu_size(rng), rng);
    // Cut the payload into 1..4 views, some possibly empty (an SGE list).
    std::vector<bytes_view> views;
    const std::size_t nviews = 1 + rng() % 4;
    std::size_t off = 0;
    for (std::size_t v = 0; v + 1 < nviews; ++v) {
      const std::size_t n = rng() % (pay.size() - off + 1);
      views.push_back(bytes_view(pay).subspan(off, n));
      off += n;
    }
    views.push_back(bytes_view(pay).subspan(off));
    const std::size_t wire = by_copy.fpdu_size(hdr.size() + pay.size());

    const Framed got = frame_in_pieces(by_pieces, hdr, views, views.size());
    ASSERT_GT(got.count, 0u);
    const bytes_view ulpdu_parts[2] = {hdr, pay};
    Bytes want(wire);
    ASSERT_EQ(by_copy.frame(ulpdu_parts, want), wire);
    EXPECT_EQ(by_pieces.position(), by_copy.position());

    Bytes cat;
    std::size_t owned = 0;
    for (std::size_t i = 0; i < got.count; ++i) {
      const FramePiece& p = got.pieces[i];
      ASSERT_FALSE(p.bytes.empty());
      if (p.owned) {
        EXPECT_GE(p.bytes.data(), got.scratch.data());
        EXPECT_LE(p.bytes.data() + p.bytes.size(), got.scratch.data() + got.scratch.size());
        if (i > 0) {
          EXPECT_FALSE(got.pieces[i - 1].owned);  // adjacent owned parts are merged
        }
        owned += p.bytes.size();
      } else {
        ASSERT_LT(p.payload_index, views.size());
        const bytes_view v = views[p.payload_index];
        EXPECT_GE(p.bytes.data(), v.data());  // a view of the caller's payload: no copy
        EXPECT_LE(p.bytes.data() + p.bytes.size(), v.data() + v.size());
      }
      cat.insert(cat.end(), p.bytes.begin(), p.bytes.end());
    }
    EXPECT_EQ(cat, want) << "k " << k;
    EXPECT_EQ(owned, got.scratch.size());  // scratch_size is exact
  }
}

INSTANTIATE_TEST_SUITE_P(MarkersCrcOffsets, MpaFramePieces,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool(),
                                            ::testing::Values(0u, 4u, 500u, 508u, 1020u, 3u,
                                                              4000000000u)));

// The bound quoted in framer.h: an FPDU of at most one MSS (1460 octets) from one payload
// view needs at most 9 pieces, and some position needs all 9.
TEST(MpaFramePieces, AtMostNinePiecesPerMss) {
  std::size_t most = 0;
  for (std::uint32_t start = 0; start < 1024; start += 4) {
    Framer f(true, true, start);
    const Bytes hdr(14, 0x41);  // a DDP tagged header
    const std::size_t plen = f.max_ulpdu(1460) - hdr.size();
    const Bytes pay(plen, 0x5a);
    const bytes_view v = pay;
    EXPECT_LE(Framer::max_pieces(1460, 1), 9u);
    const Framed got = frame_in_pieces(f, hdr, {&v, 1}, 1);
    ASSERT_GT(got.count, 0u);
    most = std::max(most, got.count);
  }
  EXPECT_EQ(most, 9u);
}

TEST(MpaFramePieces, RefusesWithoutSideEffects) {
  Framer f(true, true, 0);
  const Bytes hdr(18, 1), pay(600, 2);
  const bytes_view v = pay;
  std::vector<FramePiece> out(16);
  Bytes scratch(f.scratch_size(hdr.size(), pay.size()));
  // Scratch one short, too few pieces, ULPDU too long: 0, position unchanged.
  EXPECT_EQ(f.frame_pieces(hdr, {&v, 1}, mut_bytes(scratch).first(scratch.size() - 1), out), 0u);
  EXPECT_EQ(f.frame_pieces(hdr, {&v, 1}, scratch, std::span(out).first(2)), 0u);
  const Bytes big(kMaxUlpduMarkers - hdr.size() + 1, 3);
  const bytes_view bv = big;
  Bytes big_scratch(70000);
  EXPECT_EQ(f.frame_pieces(hdr, {&bv, 1}, big_scratch, out), 0u);
  EXPECT_EQ(f.position(), 0u);
  // Leading Marker + length + header in one piece, payload split at the Marker at 512,
  // pad + CRC last.
  const std::size_t n = f.frame_pieces(hdr, {&v, 1}, scratch, out);
  ASSERT_EQ(n, 5u);
  EXPECT_TRUE(out[0].owned);
  EXPECT_EQ(out[0].bytes.size(), 4u + 2 + 18);
  EXPECT_EQ(out[1].bytes.data(), pay.data());
  EXPECT_EQ(out[1].bytes.size(), 512u - 24);
  EXPECT_TRUE(out[2].owned);
  EXPECT_EQ(out[2].bytes.size(), 4u);
  EXPECT_EQ(out[3].bytes.data(), pay.data() + 488);
  EXPECT_EQ(out[3].bytes.size(), 600u - 488);
  EXPECT_EQ(out[4].bytes.size(), kCrcLen);  // 2 + 18 + 600 is a multiple of 4: no pad
  EXPECT_EQ(f.position(), 4u + 2 + 18 + 600 + 4 + 4);
}

}  // namespace
}  // namespace esock::mpa
