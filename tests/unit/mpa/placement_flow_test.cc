// The three pieces together, the way the lib/tcp endpoint uses them: an optimized sender
// frames FPDUs with frame_pieces into segments of at most an MSS (each segment starts with
// an FPDU); the receiver gets the segments in a shuffled order, places the ones that arrive
// ahead of RCV.NXT when scan_segment accepts them, and when the hole fills feeds the stored
// ones to the Deframer and skips the placed ones. Every ULPDU must arrive exactly once.
#include <gtest/gtest.h>

#include <algorithm>

#include "fpdu_stream.h"
#include "mpa/segment_scan.h"

namespace esock::mpa {
namespace {

using test::Bytes;

struct Segment {
  std::size_t at = 0, len = 0;   // in the wire
  std::size_t first = 0, n = 0;  // FPDUs (indices into the ULPDUs) it carries
  bool arrived = false, placed = false;
};

class MpaPlacementFlow : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

TEST_P(MpaPlacementFlow, EveryUlpduExactlyOnce) {
  const auto [markers, crc] = GetParam();
  constexpr std::size_t kMss = 1460;
  std::mt19937 rng(markers * 2 + crc + 17);
  for (int trial = 0; trial < 40; ++trial) {
    // Sender: FPDUs as records, several small ones sometimes sharing a segment.
    Framer f(markers, crc);
    Bytes wire;
    std::vector<Bytes> ulpdus;
    std::vector<Segment> segs;
    std::array<FramePiece, 16> pieces;
    Bytes scratch(64);
    for (int k = 0; k < 300; ++k) {
      const std::size_t room = f.max_ulpdu(kMss);
      const std::size_t ulen = rng() % 2 ? room : rng() % 100;
      const std::size_t hlen = std::min<std::size_t>(ulen, 14 + rng() % 5);
      ulpdus.push_back(test::random_bytes(ulen, rng));
      const bytes_view hdr = bytes_view(ulpdus.back()).first(hlen);
      const bytes_view pay = bytes_view(ulpdus.back()).subspan(hlen);
      const std::size_t at = wire.size();
      const std::size_t n = f.frame_pieces(hdr, {&pay, 1}, scratch, pieces);
      ASSERT_GT(n, 0u);
      for (std::size_t i = 0; i < n; ++i)
        wire.insert(wire.end(), pieces[i].bytes.begin(), pieces[i].bytes.end());
      const std::size_t len = wire.size() - at;
      if (!segs.empty() && segs.back().len + len <= kMss && rng() % 2) {
        segs.back().len += len;
        ++segs.back().n;
      } else {
        segs.push_back({at, len, ulpdus.size() - 1, 1});
      }
    }
    // Receiver: a shuffled arrival order (lots of reordering).
    std::vector<std::size_t> order(segs.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    Deframer d(markers, crc, kMss);
    std::vector<Bytes> deframed, placed(ulpdus.size());
    std::vector<bool> was_placed(ulpdus.size());
    std::size_t next = 0;  // first segment not yet in order (RCV.NXT)
    std::vector<ScannedFpdu> out(scan_max_fpdus(kMss));
    std::vector<bytes_view> views(scan_max_pieces(kMss));
    for (std::size_t i : order) {
      Segment& s = segs[i];
      s.arrived = true;
      const bytes_view seg = bytes_view(wire).subspan(s.at, s.len);
      std::size_t count = 0;
      if (i > next &&
          scan_segment(seg, s.at, {markers, crc, kMss}, out, views, &count) == ScanResult::ok) {
        ASSERT_EQ(count, s.n);
        s.placed = true;
        for (std::size_t k = 0; k < count; ++k) {
          Bytes u(out[k].hdr.begin(), out[k].hdr.begin() + out[k].hdr_len);
          for (const bytes_view& p : out[k].pieces) u.insert(u.end(), p.begin(), p.end());
          placed[s.first + k] = u;
          was_placed[s.first + k] = true;
        }
      }
      // The hole fills: stored octets go through the Deframer, placed runs (adjacent ones
      // reported as one range) are skipped.
      while (next < segs.size() && segs[next].arrived) {
        if (segs[next].placed) {
          std::size_t len = 0;
          for (; next < segs.size() && segs[next].arrived && segs[next].placed; ++next)
            len += segs[next].len;
          ASSERT_TRUE(d.skip(len));
        } else {
          const Segment& t = segs[next++];
          ASSERT_EQ(test::feed_random(d, wire, t.at, t.at + t.len, rng, deframed, 1 + rng() % 800),
                    Error::none);
        }
      }
    }
    ASSERT_EQ(next, segs.size());
    EXPECT_EQ(d.position(), wire.size());
    std::vector<Bytes> want_deframed;
    std::size_t n_placed = 0;
    for (std::size_t k = 0; k < ulpdus.size(); ++k) {
      if (was_placed[k]) {
        EXPECT_EQ(placed[k], ulpdus[k]);
        ++n_placed;
      } else {
        want_deframed.push_back(ulpdus[k]);
      }
    }
    EXPECT_EQ(deframed, want_deframed);
    if (markers || crc) {
      EXPECT_GT(n_placed, ulpdus.size() / 4);  // many arrive ahead of the hole
    }
  }
}

INSTANTIATE_TEST_SUITE_P(MarkersCrc, MpaPlacementFlow,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool()));

}  // namespace
}  // namespace esock::mpa
