// Out-of-order store: random arrival orders reassemble the stream, overlaps keep the
// stored bytes, limits hold, range-only pieces mix in, SACK blocks follow RFC 2018.
#include "tcp/engine/reassembly.h"

#include "base/seq32.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace esock::tcp {
namespace {

std::uint32_t r32(std::mt19937& g) {
  return static_cast<std::uint32_t>(g());
}

struct Chunk {
  std::uint32_t seq;
  std::vector<std::uint8_t> data;  // empty: a range-only delivery
  std::uint32_t len;
  bool had_ref;
};

// Counts live references so the tests can see pieces being released.
struct Holder {
  BufHolder h{0, [](BufHolder*) {}};
  BufRef ref() { return BufRef(&h); }
};

std::vector<Chunk> pop_all(Reassembly& r, std::uint32_t& rcv_nxt) {
  std::vector<Chunk> out;
  r.pop_ready(rcv_nxt,
              [&](std::uint32_t seq, bytes_view data, const BufRef& ref, std::uint32_t len) {
                out.push_back({seq, std::vector<std::uint8_t>(data.begin(), data.end()), len,
                               static_cast<bool>(ref)});
              });
  return out;
}

std::vector<std::uint8_t> pattern(std::size_t n, std::uint32_t seed) {
  std::vector<std::uint8_t> v(n);
  std::mt19937 rng(seed);
  for (auto& b : v) b = static_cast<std::uint8_t>(rng());
  return v;
}

TEST(Reassembly, InOrderPopAfterHoleFilled) {
  Holder h;
  Reassembly r(1 << 20, 64);
  const auto bytes = pattern(300, 1);
  EXPECT_TRUE(r.insert(100, 200, 100, bytes_view(bytes).subspan(100, 100), h.ref()));
  EXPECT_TRUE(r.insert(100, 300, 100, bytes_view(bytes).subspan(200, 100), h.ref()));
  EXPECT_EQ(r.bytes_held(), 200u);
  EXPECT_EQ(h.h.refs, 2u);
  std::uint32_t rcv_nxt = 100;
  EXPECT_TRUE(pop_all(r, rcv_nxt).empty());  // hole at 100..200
  rcv_nxt = 200;                             // the engine received the hole in order
  const auto out = pop_all(r, rcv_nxt);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].seq, 200u);
  EXPECT_EQ(out[1].seq, 300u);
  EXPECT_EQ(rcv_nxt, 400u);
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(r.bytes_held(), 0u);
  EXPECT_EQ(r.peak_bytes_held(), 200u);
  EXPECT_EQ(h.h.refs, 0u);  // every reference dropped
}

TEST(Reassembly, RandomPermutationsReassembleTheStream) {
  for (std::uint32_t seed = 0; seed < 50; ++seed) {
    std::mt19937 rng(seed);
    const std::uint32_t isn = r32(rng);
    const std::size_t total = 2000 + r32(rng) % 3000;
    const auto stream = pattern(total, seed + 1000);
    // Random segments covering the stream, with overlaps and duplicates.
    struct Seg {
      std::uint32_t off, len;
    };
    std::vector<Seg> segs;
    for (std::uint32_t off = 0; off < total;) {
      const std::uint32_t len =
          std::min<std::uint32_t>(1 + r32(rng) % 200, static_cast<std::uint32_t>(total) - off);
      segs.push_back({off, len});
      if (r32(rng) % 4 == 0) {  // an overlapping resend reaching back and forward
        const std::uint32_t back = std::min<std::uint32_t>(off, r32(rng) % 50);
        segs.push_back({off - back,
                        std::min<std::uint32_t>(len + back + r32(rng) % 50,
                                                static_cast<std::uint32_t>(total) - (off - back))});
      }
      off += len;
    }
    std::shuffle(segs.begin(), segs.end(), rng);
    Reassembly r(1 << 20, 1024);
    std::uint32_t rcv_nxt = isn;
    std::vector<std::uint8_t> got;
    for (const Seg& s : segs) {
      ASSERT_TRUE(r.insert(rcv_nxt, isn + s.off, s.len, bytes_view(stream).subspan(s.off, s.len),
                           BufRef()));
      for (const Chunk& c : pop_all(r, rcv_nxt)) {
        ASSERT_EQ(c.seq, isn + static_cast<std::uint32_t>(got.size()));
        ASSERT_EQ(c.data.size(), c.len);
        got.insert(got.end(), c.data.begin(), c.data.end());
      }
    }
    EXPECT_EQ(got, stream) << "seed " << seed;
    EXPECT_TRUE(r.empty());
    EXPECT_EQ(r.bytes_held(), 0u);
  }
}

// A per-byte model: each byte is missing, held as data, or held as a range only; the
// first arrival wins. Random inserts, in-order arrivals and pops must agree with it, and
// the SACK blocks must be exactly its islands, the newest segment's first.
TEST(Reassembly, MatchesPerByteModel) {
  enum : std::uint8_t { none, data, range };
  for (std::uint32_t seed = 0; seed < 30; ++seed) {
    std::mt19937 rng(seed);
    const std::uint32_t isn = r32(rng);
    const std::uint32_t total = 3000;
    const auto stream = pattern(total, seed);
    std::vector<std::uint8_t> model(total, none);
    std::uint32_t nxt = 0;  // offset of rcv_nxt
    Reassembly r(1 << 20, 4096);
    for (int step = 0; step < 300 && nxt < total; ++step) {
      const std::uint32_t off = nxt + 1 + r32(rng) % 400;
      if (off >= total) continue;
      const std::uint32_t len = std::min(1 + r32(rng) % 120, total - off);
      const bool range_only = r32(rng) % 3 == 0;
      ASSERT_TRUE(r.insert(isn + nxt, isn + off, len,
                           range_only ? bytes_view{} : bytes_view(stream).subspan(off, len),
                           BufRef()));
      for (std::uint32_t i = off; i < off + len; ++i)
        if (model[i] == none) model[i] = range_only ? range : data;

      std::size_t held = 0;
      for (std::uint32_t i = nxt; i < total; ++i) held += model[i] == data;
      ASSERT_EQ(r.bytes_held(), held);
      // Islands of the model beyond rcv_nxt.
      std::vector<SackBlock> islands;
      for (std::uint32_t i = nxt; i < total; ++i) {
        if (model[i] == none) continue;
        if (i > nxt && model[i - 1] != none && !islands.empty())
          islands.back().right = isn + i + 1;
        else
          islands.push_back({isn + i, isn + i + 1});
      }
      std::vector<SackBlock> got(islands.size() + 4);
      got.resize(r.sack_blocks(got));
      ASSERT_EQ(got.size(), islands.size());
      ASSERT_TRUE(seq_in_range(isn + off, got[0].left, got[0].right));
      auto sorted = got;
      std::sort(sorted.begin(), sorted.end(), [&](const SackBlock& a, const SackBlock& b) {
        return a.left - isn < b.left - isn;
      });
      ASSERT_EQ(sorted, islands);

      if (r32(rng) % 4 == 0) {
        // In-order data arrives (handled by the engine), then the store hands over what
        // became contiguous.
        nxt = std::min(total, nxt + r32(rng) % 200);
        std::uint32_t rcv_nxt = isn + nxt;
        for (const Chunk& c : pop_all(r, rcv_nxt)) {
          const std::uint32_t o = c.seq - isn;
          ASSERT_EQ(o, nxt);
          for (std::uint32_t i = o; i < o + c.len; ++i) {
            ASSERT_EQ(model[i], c.data.empty() ? range : data) << "seed " << seed;
          }
          if (!c.data.empty()) {
            ASSERT_TRUE(std::equal(c.data.begin(), c.data.end(), stream.begin() + o));
          }
          nxt = o + c.len;
        }
        ASSERT_EQ(rcv_nxt, isn + nxt);
        ASSERT_TRUE(nxt >= total || model[nxt] == none);
      }
    }
  }
}

TEST(Reassembly, OverlapKeepsStoredBytes) {
  Reassembly r(1 << 20, 64);
  const std::vector<std::uint8_t> a(100, 0xaa);
  const std::vector<std::uint8_t> b(300, 0xbb);
  ASSERT_TRUE(r.insert(0, 200, 100, a, BufRef()));
  ASSERT_TRUE(r.insert(0, 100, 300, b, BufRef()));  // covers 100..400 around the stored
  EXPECT_EQ(r.bytes_held(), 300u);
  EXPECT_EQ(r.piece_count(), 3u);
  std::uint32_t rcv_nxt = 100;
  std::vector<std::uint8_t> got;
  for (const Chunk& c : pop_all(r, rcv_nxt)) got.insert(got.end(), c.data.begin(), c.data.end());
  ASSERT_EQ(got.size(), 300u);
  EXPECT_EQ(got[0], 0xbb);
  EXPECT_EQ(got[100], 0xaa);  // the stored bytes won
  EXPECT_EQ(got[199], 0xaa);
  EXPECT_EQ(got[200], 0xbb);
}

TEST(Reassembly, TrimsAtRcvNxtAndIgnoresOldData) {
  Reassembly r(1 << 20, 64);
  const auto bytes = pattern(200, 2);
  EXPECT_TRUE(r.insert(1000, 800, 100, bytes_view(bytes).subspan(0, 100), BufRef()));
  EXPECT_TRUE(r.empty());  // entirely below rcv_nxt
  EXPECT_TRUE(r.insert(1000, 900, 200, bytes, BufRef()));
  EXPECT_EQ(r.bytes_held(), 100u);
  std::uint32_t rcv_nxt = 1000;
  const auto out = pop_all(r, rcv_nxt);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].seq, 1000u);
  EXPECT_EQ(out[0].data, std::vector<std::uint8_t>(bytes.begin() + 100, bytes.end()));
  // A piece the engine has overtaken in order is dropped silently on pop.
  ASSERT_TRUE(r.insert(rcv_nxt, 1200, 50, bytes_view(bytes).subspan(0, 50), BufRef()));
  ASSERT_TRUE(r.insert(rcv_nxt, 1300, 50, bytes_view(bytes).subspan(0, 50), BufRef()));
  rcv_nxt = 1320;
  const auto out2 = pop_all(r, rcv_nxt);
  ASSERT_EQ(out2.size(), 1u);
  EXPECT_EQ(out2[0].seq, 1320u);
  EXPECT_EQ(out2[0].len, 30u);
  EXPECT_EQ(rcv_nxt, 1350u);
  EXPECT_EQ(r.bytes_held(), 0u);
}

TEST(Reassembly, LimitsRejectWithoutChange) {
  Reassembly r(250, 3);
  const auto bytes = pattern(1000, 3);
  auto seg = [&](std::uint32_t seq, std::uint32_t len) {
    return r.insert(0, seq, len, bytes_view(bytes).subspan(seq, len), BufRef());
  };
  EXPECT_TRUE(seg(100, 100));
  EXPECT_TRUE(seg(300, 100));
  EXPECT_FALSE(seg(500, 100));  // 300 bytes > 250
  EXPECT_EQ(r.bytes_held(), 200u);
  EXPECT_TRUE(seg(500, 50));
  EXPECT_FALSE(seg(700, 1));    // a fourth piece
  EXPECT_FALSE(seg(150, 200));  // its new part 200..300 would be a fourth piece
  EXPECT_EQ(r.piece_count(), 3u);
  EXPECT_EQ(r.bytes_held(), 250u);
  EXPECT_TRUE(seg(120, 50));  // entirely stored already: accepted, nothing added
  EXPECT_EQ(r.bytes_held(), 250u);
  // Range-only pieces hold no bytes but still count as pieces.
  Reassembly q(0, 2);
  EXPECT_TRUE(q.insert(0, 10, 10, {}, BufRef()));
  EXPECT_TRUE(q.insert(0, 30, 10, {}, BufRef()));
  EXPECT_FALSE(q.insert(0, 50, 10, {}, BufRef()));
  EXPECT_FALSE(q.insert(0, 60, 10, bytes_view(bytes).subspan(0, 10), BufRef()));
  // Malformed: data of the wrong length.
  EXPECT_FALSE(q.insert(0, 60, 10, bytes_view(bytes).subspan(0, 5), BufRef()));
}

TEST(Reassembly, RangeOnlyPiecesMixAndMerge) {
  Holder h;
  Reassembly r(1 << 20, 64);
  const auto bytes = pattern(600, 4);
  ASSERT_TRUE(r.insert(0, 100, 100, {}, h.ref()));  // placed by DDP already
  ASSERT_TRUE(r.insert(0, 200, 100, {}, h.ref()));
  EXPECT_EQ(r.piece_count(), 1u);  // adjacent range-only pieces merge
  EXPECT_EQ(h.h.refs, 0u);         // and pin nothing
  EXPECT_EQ(r.bytes_held(), 0u);
  ASSERT_TRUE(r.insert(0, 250, 150, bytes_view(bytes).subspan(250, 150), h.ref()));
  EXPECT_EQ(r.bytes_held(), 100u);  // only 300..400 is new
  ASSERT_TRUE(r.insert(0, 400, 100, {}, h.ref()));
  std::uint32_t rcv_nxt = 0;
  EXPECT_TRUE(pop_all(r, rcv_nxt).empty());
  rcv_nxt = 100;
  const auto out = pop_all(r, rcv_nxt);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].seq, 100u);
  EXPECT_EQ(out[0].len, 200u);
  EXPECT_TRUE(out[0].data.empty());
  EXPECT_FALSE(out[0].had_ref);
  EXPECT_EQ(out[1].seq, 300u);
  EXPECT_EQ(out[1].data, std::vector<std::uint8_t>(bytes.begin() + 300, bytes.begin() + 400));
  EXPECT_TRUE(out[1].had_ref);
  EXPECT_EQ(out[2].seq, 400u);
  EXPECT_EQ(out[2].len, 100u);
  EXPECT_EQ(rcv_nxt, 500u);
  EXPECT_EQ(h.h.refs, 0u);
}

std::vector<SackBlock> sacks(const Reassembly& r, std::size_t max = 4) {
  std::vector<SackBlock> out(max);
  out.resize(r.sack_blocks(out));
  return out;
}

// RFC 2018 section 7's receiver examples: eight 500-byte segments from 5000.
TEST(Reassembly, SackBlocksRfc2018FirstSegmentLost) {
  Reassembly r(1 << 20, 64);
  const std::vector<std::uint8_t> seg(500, 1);
  for (std::uint32_t s = 5500; s < 9000; s += 500) {
    ASSERT_TRUE(r.insert(5000, s, 500, seg, BufRef()));
    EXPECT_EQ(sacks(r), (std::vector<SackBlock>{{5500, s + 500}}));
  }
}

TEST(Reassembly, SackBlocksRfc2018AlternateSegmentsLost) {
  Reassembly r(1 << 20, 64);
  const std::vector<std::uint8_t> seg(500, 1);
  ASSERT_TRUE(r.insert(5500, 6000, 500, seg, BufRef()));
  EXPECT_EQ(sacks(r), (std::vector<SackBlock>{{6000, 6500}}));
  ASSERT_TRUE(r.insert(5500, 7000, 500, seg, BufRef()));
  EXPECT_EQ(sacks(r), (std::vector<SackBlock>{{7000, 7500}, {6000, 6500}}));
  ASSERT_TRUE(r.insert(5500, 8000, 500, seg, BufRef()));
  EXPECT_EQ(sacks(r), (std::vector<SackBlock>{{8000, 8500}, {7000, 7500}, {6000, 6500}}));
  // The 4th segment (6500) arrives out of order: its block comes first.
  ASSERT_TRUE(r.insert(5500, 6500, 500, seg, BufRef()));
  EXPECT_EQ(sacks(r), (std::vector<SackBlock>{{6000, 7500}, {8000, 8500}}));
  // A short option keeps the most recent blocks.
  EXPECT_EQ(sacks(r, 1), (std::vector<SackBlock>{{6000, 7500}}));
}

TEST(Reassembly, SackBlocksFillBeyondRecentAndSkipDelivered) {
  Reassembly r(1 << 20, 64);
  const std::vector<std::uint8_t> seg(10, 1);
  for (std::uint32_t i = 0; i < 12; ++i)  // 12 islands, only 8 remembered as recent
    ASSERT_TRUE(r.insert(0, 100 + i * 100, 10, seg, BufRef()));
  const auto b = sacks(r, 4);
  EXPECT_EQ(b, (std::vector<SackBlock>{{1200, 1210}, {1100, 1110}, {1000, 1010}, {900, 910}}));
  std::uint32_t rcv_nxt = 1050;  // the engine received everything up to 1050 in order
  pop_all(r, rcv_nxt);
  EXPECT_EQ(sacks(r, 4), (std::vector<SackBlock>{{1200, 1210}, {1100, 1110}}));
  // Older islands than the recent list are reported in sequence order after it.
  Reassembly q(1 << 20, 64);
  for (std::uint32_t i = 0; i < 10; ++i) ASSERT_TRUE(q.insert(0, 100 + i * 100, 10, seg, BufRef()));
  const auto all = sacks(q, 10);
  ASSERT_EQ(all.size(), 10u);
  EXPECT_EQ(all[8], (SackBlock{100, 110}));
  EXPECT_EQ(all[9], (SackBlock{200, 210}));
}

TEST(Reassembly, ClearDropsEverything) {
  Holder h;
  Reassembly r(1 << 20, 64);
  const std::vector<std::uint8_t> seg(10, 1);
  ASSERT_TRUE(r.insert(0, 100, 10, seg, h.ref()));
  EXPECT_EQ(h.h.refs, 1u);
  r.clear();
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(h.h.refs, 0u);
  EXPECT_EQ(r.bytes_held(), 0u);
  EXPECT_EQ(sacks(r).size(), 0u);
}

TEST(Reassembly, WorksAcrossSequenceWrap) {
  Reassembly r(1 << 20, 64);
  const auto bytes = pattern(300, 5);
  const std::uint32_t nxt = 0xffffff00u;
  ASSERT_TRUE(r.insert(nxt, nxt + 200, 100, bytes_view(bytes).subspan(200), BufRef()));
  ASSERT_TRUE(r.insert(nxt, nxt + 100, 100, bytes_view(bytes).subspan(100, 100), BufRef()));
  EXPECT_EQ(sacks(r), (std::vector<SackBlock>{{nxt + 100, nxt + 300}}));
  std::uint32_t rcv_nxt = nxt + 100;
  std::vector<std::uint8_t> got;
  for (const Chunk& c : pop_all(r, rcv_nxt)) got.insert(got.end(), c.data.begin(), c.data.end());
  EXPECT_EQ(got, std::vector<std::uint8_t>(bytes.begin() + 100, bytes.end()));
  EXPECT_EQ(rcv_nxt, nxt + 300);
}

// The engine offers a segment for placement only when this holds; it must agree with
// what insert() of a range-only piece then does.
TEST(Reassembly, CanStoreRangeOnlyMeansDisjointAndRoomForOnePiece) {
  Reassembly r(1000, 3);
  const std::uint32_t nxt = 0xfffffff0u;  // across the wrap
  std::vector<std::uint8_t> d(100, 1);
  EXPECT_FALSE(r.first_seq().has_value());
  ASSERT_TRUE(r.insert(nxt, nxt + 100, 100, d, {}));
  EXPECT_EQ(r.first_seq(), nxt + 100);
  EXPECT_FALSE(r.can_store_range_only(nxt + 150, 10));  // inside
  EXPECT_FALSE(r.can_store_range_only(nxt + 50, 51));   // overlaps the start
  EXPECT_FALSE(r.can_store_range_only(nxt + 199, 5));   // overlaps the end
  EXPECT_FALSE(r.can_store_range_only(nxt + 300, 0));   // nothing to store
  EXPECT_TRUE(r.can_store_range_only(nxt + 50, 50));    // adjacent below
  EXPECT_TRUE(r.can_store_range_only(nxt + 200, 50));   // adjacent above
  ASSERT_TRUE(r.insert(nxt, nxt + 300, 10, {}, {}));
  ASSERT_TRUE(r.insert(nxt, nxt + 400, 10, {}, {}));
  EXPECT_EQ(r.piece_count(), 3u);
  // Full: even a range that would merge with a range-only neighbour is refused, because
  // insert() counts the piece before merging.
  EXPECT_FALSE(r.can_store_range_only(nxt + 310, 5));
  EXPECT_FALSE(r.insert(nxt, nxt + 310, 5, {}, {}));
  EXPECT_FALSE(r.can_store_range_only(nxt + 600, 5));
}

}  // namespace
}  // namespace esock::tcp
