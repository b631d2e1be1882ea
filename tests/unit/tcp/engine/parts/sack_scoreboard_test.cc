// RFC 6675 scoreboard: IsLost, SetPipe and NextSeg in hand-built loss scenarios, and
// against a per-octet transcription of the RFC's definitions on random scoreboards.
#include "tcp/engine/sack_scoreboard.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace esock::tcp {
namespace {

std::uint32_t r32(std::mt19937& g) {
  return static_cast<std::uint32_t>(g());
}

using Seg = SackScoreboard::Seg;
constexpr std::uint32_t mss = 1000;

std::uint32_t update(SackScoreboard& sb, std::uint32_t una, std::uint32_t max,
                     std::vector<SackBlock> blocks, bool* dsack = nullptr) {
  return sb.update(una, max, blocks, dsack);
}

TEST(SackScoreboard, RecordsMergesAndCounts) {
  SackScoreboard sb;
  EXPECT_TRUE(sb.empty());
  EXPECT_EQ(update(sb, 0, 10000, {{1000, 2000}}), 1000u);
  EXPECT_EQ(update(sb, 0, 10000, {{1000, 3000}}), 1000u);  // RFC 2018: blocks grow
  EXPECT_EQ(update(sb, 0, 10000, {{4000, 5000}, {1000, 3000}}), 1000u);
  EXPECT_EQ(sb.range_count(), 2u);
  EXPECT_EQ(update(sb, 0, 10000, {{3000, 4000}}), 1000u);  // fills the gap: one range
  EXPECT_EQ(sb.range_count(), 1u);
  EXPECT_EQ(sb.sacked_bytes(), 4000u);
  EXPECT_EQ(sb.highest_sacked(), 5000u);
  EXPECT_TRUE(sb.is_sacked(1000));
  EXPECT_TRUE(sb.is_sacked(4999));
  EXPECT_FALSE(sb.is_sacked(999));
  EXPECT_FALSE(sb.is_sacked(5000));
  EXPECT_EQ(update(sb, 0, 10000, {{1000, 5000}}), 0u);  // nothing new
}

TEST(SackScoreboard, IgnoresBogusBlocks) {
  SackScoreboard sb;
  EXPECT_EQ(update(sb, 1000, 5000, {{3000, 2000}}), 0u);  // inverted
  EXPECT_EQ(update(sb, 1000, 5000, {{3000, 3000}}), 0u);  // empty
  EXPECT_EQ(update(sb, 1000, 5000, {{4000, 6000}}), 0u);  // beyond snd_max
  EXPECT_TRUE(sb.empty());
  EXPECT_EQ(update(sb, 1000, 5000, {{500, 2000}}), 1000u);  // clipped at snd_una
  EXPECT_FALSE(sb.is_sacked(999));
  EXPECT_TRUE(sb.is_sacked(1000));
}

TEST(SackScoreboard, DsackReportedNotRecorded) {
  SackScoreboard sb;
  bool dsack = false;
  // RFC 2883 4.1.1: a duplicate below the cumulative ACK.
  EXPECT_EQ(update(sb, 4000, 9000, {{1000, 2000}}, &dsack), 0u);
  EXPECT_TRUE(dsack);
  EXPECT_TRUE(sb.empty());
  // RFC 2883 4.1.2: the first block inside the second one.
  EXPECT_EQ(update(sb, 4000, 9000, {{6000, 7000}, {5000, 8000}}, &dsack), 3000u);
  EXPECT_TRUE(dsack);
  EXPECT_EQ(sb.sacked_bytes(), 3000u);
  update(sb, 4000, 9000, {{5000, 8000}}, &dsack);
  EXPECT_FALSE(dsack);
}

TEST(SackScoreboard, CumAckForgetsBelow) {
  SackScoreboard sb;
  update(sb, 0, 10000, {{2000, 4000}, {6000, 8000}});
  sb.on_cum_ack(3000);
  EXPECT_EQ(sb.sacked_bytes(), 3000u);
  EXPECT_FALSE(sb.is_sacked(2500));
  sb.on_cum_ack(8000);
  EXPECT_TRUE(sb.empty());
  EXPECT_EQ(sb.sacked_bytes(), 0u);
}

TEST(SackScoreboard, BoundedRangesKeepTheLowest) {
  SackScoreboard sb;
  std::uint32_t added = 0;
  for (std::uint32_t i = 0; i < 100; ++i)
    added += update(sb, 0, 1000000, {{i * 2000 + 1000, i * 2000 + 2000}});
  EXPECT_EQ(sb.range_count(), SackScoreboard::max_ranges);
  EXPECT_EQ(added, SackScoreboard::max_ranges * 1000);
  EXPECT_EQ(sb.sacked_bytes(), SackScoreboard::max_ranges * 1000);
  EXPECT_TRUE(sb.is_sacked(1000));
  // A new low range evicts the highest one.
  EXPECT_EQ(update(sb, 0, 1000000, {{100, 200}}), 100u);
  EXPECT_EQ(sb.range_count(), SackScoreboard::max_ranges);
  EXPECT_TRUE(sb.is_sacked(100));
  EXPECT_FALSE(sb.is_sacked(63 * 2000 + 1000));
  EXPECT_EQ(sb.sacked_bytes(), 63 * 1000 + 100);
}

TEST(SackScoreboard, SingleLoss) {
  // Ten segments 0..9999 sent, the first lost; ACKs for 1, 2, 3 carry growing SACKs.
  SackScoreboard sb;
  update(sb, 0, 10000, {{1000, 2000}});
  EXPECT_FALSE(sb.is_lost(0, mss));
  update(sb, 0, 10000, {{1000, 3000}});
  EXPECT_FALSE(sb.is_lost(0, mss));  // 2 SMSS SACKed: not more than (DupThresh - 1) SMSS
  update(sb, 0, 10000, {{1000, 4000}});
  EXPECT_TRUE(sb.is_lost(0, mss));
  // SetPipe: [0,1000) lost, [4000,10000) in flight.
  EXPECT_EQ(sb.pipe(0, 10000, mss), 6000u);
  auto s = sb.next_seg(0, 10000, 10000, mss, true, 5000);
  ASSERT_TRUE(s);
  EXPECT_EQ(*s, (Seg{0, 1000, false}));  // rule 1 before new data
  sb.mark_retransmitted(0, 1000);
  EXPECT_EQ(sb.high_rxt(), 1000u);
  EXPECT_EQ(sb.pipe(0, 10000, mss), 7000u);  // the retransmission is in flight
  s = sb.next_seg(0, 10000, 10000, mss, true, 5000);
  EXPECT_EQ(*s, (Seg{10000, 1000, true}));                    // rule 2
  EXPECT_FALSE(sb.next_seg(0, 10000, 10000, mss, false, 0));  // nothing left
  // The retransmission arrives: cumulative ACK to 4000.
  sb.on_cum_ack(4000);
  EXPECT_TRUE(sb.empty());
  EXPECT_EQ(sb.pipe(4000, 10000, mss), 6000u);
}

TEST(SackScoreboard, MultipleLosses) {
  // Segments 0, 2 and 5 lost out of ten.
  SackScoreboard sb;
  update(sb, 0, 10000, {{6000, 10000}, {3000, 5000}, {1000, 2000}});
  EXPECT_TRUE(sb.is_lost(0, mss));     // three ranges above
  EXPECT_TRUE(sb.is_lost(2000, mss));  // 6000 bytes above
  EXPECT_TRUE(sb.is_lost(5000, mss));  // 4000 bytes above
  EXPECT_EQ(sb.pipe(0, 10000, mss), 0u);
  std::vector<std::uint32_t> sent;
  while (auto s = sb.next_seg(0, 10000, 10000, mss, false, 0)) {
    EXPECT_FALSE(s->new_data);
    sent.push_back(s->seq);
    sb.mark_retransmitted(s->seq, s->len);
  }
  EXPECT_EQ(sent, (std::vector<std::uint32_t>{0, 2000, 5000}));
  EXPECT_EQ(sb.pipe(0, 10000, mss), 3000u);
}

TEST(SackScoreboard, Rule3RetransmitsUnlostHoleWhenNothingElse) {
  // One segment SACKed above a hole: not lost yet (1 range, 1 SMSS).
  SackScoreboard sb;
  update(sb, 0, 3000, {{2000, 3000}});
  EXPECT_FALSE(sb.is_lost(0, mss));
  auto s = sb.next_seg(0, 3000, 3000, mss, true, 100);
  EXPECT_EQ(*s, (Seg{3000, 100, true}));  // rule 2 beats rule 3
  s = sb.next_seg(0, 3000, 3000, mss, false, 0);
  EXPECT_EQ(*s, (Seg{0, 1000, false}));  // rule 3
  sb.mark_retransmitted(0, 1000);
  s = sb.next_seg(0, 3000, 3000, mss, false, 0);
  EXPECT_EQ(*s, (Seg{1000, 1000, false}));
  sb.mark_retransmitted(1000, 1000);
  EXPECT_FALSE(sb.next_seg(0, 3000, 3000, mss, false, 0));
}

TEST(SackScoreboard, LossOfRetransmissionNeedsRto) {
  SackScoreboard sb;
  update(sb, 0, 10000, {{1000, 4000}});
  sb.mark_retransmitted(0, 1000);
  // The retransmission is lost too; later SACKs keep coming but NextSeg will not send
  // [0, 1000) again (it is below HighRxt): RFC 6675 leaves that to the RTO.
  update(sb, 0, 10000, {{1000, 10000}});
  EXPECT_FALSE(sb.next_seg(0, 10000, 10000, mss, false, 0));
  EXPECT_EQ(sb.pipe(0, 10000, mss), 1000u);  // only the (lost) retransmission counts
  // RTO: the caller resets the scoreboard (section 5.1) and goes back to snd_una.
  sb.reset();
  EXPECT_TRUE(sb.empty());
  auto s = sb.next_seg(0, 0, 10000, mss, false, 0);
  EXPECT_EQ(*s, (Seg{0, 1000, false}));
}

TEST(SackScoreboard, RtoRewindSkipsSackedData) {
  SackScoreboard sb;
  update(sb, 0, 10000, {{1000, 4000}});
  sb.mark_retransmitted(0, 1000);
  auto s = sb.next_seg(0, 1000, 10000, mss, false, 0);  // snd_nxt rewound and advanced
  EXPECT_EQ(*s, (Seg{4000, 1000, false}));
  s = sb.next_seg(0, 9500, 10000, mss, true, 3000);
  EXPECT_EQ(*s, (Seg{9500, 500, false}));
}

TEST(SackScoreboard, RenegingToleratedByReset) {
  // The receiver SACKed 1000..4000, then dropped it (RFC 2018 section 8): the ACK after
  // the retransmission of 0..1000 only moves to 1000. The RTO resets the scoreboard and
  // the data becomes eligible again.
  SackScoreboard sb;
  update(sb, 0, 4000, {{1000, 4000}});
  sb.mark_retransmitted(0, 1000);
  update(sb, 1000, 4000, {});
  EXPECT_TRUE(sb.is_sacked(1000));  // still believed: SACK info is only advisory
  EXPECT_FALSE(sb.next_seg(1000, 4000, 4000, mss, false, 0));
  sb.reset();
  auto s = sb.next_seg(1000, 1000, 4000, mss, false, 0);
  EXPECT_EQ(*s, (Seg{1000, 1000, false}));
}

TEST(SackScoreboard, RescueRetransmissionRule4) {
  SackScoreboard sb;
  EXPECT_FALSE(sb.rescue_seg(0, 0, mss));
  update(sb, 0, 10000, {{1000, 2000}});
  EXPECT_EQ(*sb.rescue_seg(0, 10000, mss), (Seg{9000, 1000, false}));
  update(sb, 0, 10000, {{1000, 10000}});
  EXPECT_EQ(*sb.rescue_seg(0, 10000, mss), (Seg{0, 1000, false}));
  update(sb, 500, 10000, {});
  EXPECT_EQ(*sb.rescue_seg(500, 10000, mss), (Seg{500, 500, false}));
}

TEST(SackScoreboard, WorksAcrossSequenceWrap) {
  SackScoreboard sb;
  const std::uint32_t una = 0xfffff000u;
  const std::uint32_t max = una + 10000;
  update(sb, una, max, {{una + 1000, una + 5000}});
  EXPECT_TRUE(sb.is_sacked(una + 4500));  // beyond the wrap
  EXPECT_TRUE(sb.is_lost(una, mss));
  EXPECT_EQ(sb.pipe(una, max, mss), 5000u);
  EXPECT_EQ(*sb.next_seg(una, max, max, mss, false, 0), (Seg{una, 1000, false}));
  sb.on_cum_ack(una + 3000);
  EXPECT_EQ(sb.sacked_bytes(), 2000u);
}

// RFC 6675 section 4, per octet: IsLost and SetPipe straight from the text.
struct Ref {
  std::vector<bool> sacked;  // index = offset from snd_una
  std::uint32_t high_rxt;    // offset one past the highest retransmitted octet
  std::uint32_t smss;
  bool is_lost(std::uint32_t o) const {
    std::uint32_t bytes = 0;
    std::uint32_t runs = 0;
    for (std::uint32_t i = o + 1; i < sacked.size(); ++i) {
      if (sacked[i]) {
        ++bytes;
        if (i == o + 1 || !sacked[i - 1]) ++runs;
      }
    }
    return runs >= 3 || bytes > 2 * smss;
  }
  std::uint32_t pipe() const {
    std::uint32_t p = 0;
    for (std::uint32_t o = 0; o < sacked.size(); ++o) {
      if (sacked[o]) continue;
      if (!is_lost(o)) ++p;
      if (o < high_rxt) ++p;
    }
    return p;
  }
};

TEST(SackScoreboard, MatchesPerOctetRfcDefinitionsOnRandomBoards) {
  std::mt19937 rng(6675);
  for (int round = 0; round < 300; ++round) {
    const std::uint32_t una = r32(rng);
    const std::uint32_t wnd = 1 + r32(rng) % 200;
    const std::uint32_t smss = 1 + r32(rng) % 20;
    SackScoreboard sb;
    Ref ref{std::vector<bool>(wnd, false), 0, smss};
    const int nblocks = static_cast<int>(r32(rng) % 8);
    for (int b = 0; b < nblocks; ++b) {
      const std::uint32_t l = 1 + r32(rng) % wnd;
      const std::uint32_t r = l + r32(rng) % (wnd - l + 1);
      SackBlock blk{una + l, una + r};
      sb.update(una, una + wnd, std::span<const SackBlock>(&blk, 1));
      for (std::uint32_t o = l; o < r; ++o) ref.sacked[o] = true;
    }
    if (r32(rng) % 2) {
      const std::uint32_t h = r32(rng) % (wnd + 1);
      if (h > 0) sb.mark_retransmitted(una, h);
      ref.high_rxt = h;
    }
    std::uint32_t count = 0;
    for (bool s : ref.sacked) count += s;
    ASSERT_EQ(sb.sacked_bytes(), count);
    for (std::uint32_t o = 0; o < wnd; ++o) {
      ASSERT_EQ(sb.is_sacked(una + o), ref.sacked[o]) << round << " " << o;
      if (!ref.sacked[o]) {
        ASSERT_EQ(sb.is_lost(una + o, smss), ref.is_lost(o)) << round << " " << o;
      }
    }
    ASSERT_EQ(sb.pipe(una, una + wnd, smss), ref.pipe()) << "round " << round;
    // NextSeg rules 1 and 3 (no new data): the first unSACKed octet at or above HighRxt
    // below the highest SACKed octet, lost or not (rule 3 falls back to it).
    std::uint32_t top = 0;
    for (std::uint32_t o = 0; o < wnd; ++o)
      if (ref.sacked[o]) top = o + 1;
    std::optional<std::uint32_t> want;
    for (std::uint32_t o = ref.high_rxt; o < top; ++o)
      if (!ref.sacked[o]) {
        want = o;
        break;
      }
    const auto s = sb.next_seg(una, una + wnd, una + wnd, smss, false, 0);
    ASSERT_EQ(s.has_value(), want.has_value()) << "round " << round;
    if (s) {
      EXPECT_EQ(s->seq, una + *want);
      EXPECT_LE(s->len, smss);
      for (std::uint32_t o = *want; o < *want + s->len; ++o) EXPECT_FALSE(ref.sacked[o]);
    }
  }
}

}  // namespace
}  // namespace esock::tcp
