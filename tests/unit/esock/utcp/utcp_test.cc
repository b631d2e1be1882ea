// iWARP over lib/tcp (esock::utcp) between two stacks in memory: negotiation, the three
// operations, and the fault matrix of issue 4 (seeded loss, reordering, duplication,
// corruption) proving every octet lands where it must, corrupted FPDUs are never placed,
// and aligned FPDUs leave TCP with no out-of-order octets to buffer (TcbStats::
// peak_ooo_bytes, the counter that proves it).
#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <optional>

#include "base/endian.h"

#include "utcp_pair.h"
#include "workload.h"

namespace esock::utcp::test {
namespace {

Options with(mpa::Policy markers, mpa::Policy crc, bool placement = true) {
  Options o;
  o.mpa.markers = markers;
  o.mpa.crc = crc;
  o.ooo_placement = placement;
  return o;
}
Options markers_crc() {
  return with(mpa::Policy::require, mpa::Policy::require);
}

tcp::FaultSpec spec_loss(double p) {
  tcp::FaultSpec s;
  s.loss = p;
  return s;
}

std::string stats(const Endpoint& e) {
  const Stats& s = e.stats();
  return "fpdus tx " + std::to_string(s.fpdus_tx) + " rx " + std::to_string(s.fpdus_rx) +
         " placed early " + std::to_string(s.fpdus_placed_early) + " ooo segs " +
         std::to_string(s.ooo_segments) + " placed " + std::to_string(s.ooo_segments_placed) +
         " not self-describing " + std::to_string(s.ooo_not_self_describing) + " not whole " +
         std::to_string(s.ooo_not_whole_fpdus) + " crc " + std::to_string(s.ooo_crc_errors) +
         " framing " + std::to_string(s.ooo_framing_errors) + " not placeable " +
         std::to_string(s.ooo_not_placeable);
}

TEST(Utcp, NegotiatesMarkersAndCrcBothWays) {
  UtcpPair p({{}, {}, markers_crc(), {}});
  ASSERT_TRUE(p.connect());
  for (const Endpoint* e : {p.ea.get(), p.eb.get()}) {
    EXPECT_TRUE(e->negotiated().markers_tx);
    EXPECT_TRUE(e->negotiated().markers_rx);
    EXPECT_TRUE(e->negotiated().crc);
    EXPECT_EQ(e->negotiated().revision, 2);
  }
}

TEST(Utcp, SendWriteReadClean) {
  UtcpPair p({{}, {}, markers_crc(), {}});
  ASSERT_TRUE(p.connect());
  Outcome o = write_then_send(p, 1 << 20, 64 * 1024);
  EXPECT_TRUE(o.ok) << o.why;
  // Aligned segments with Markers: every FPDU placed straight from its frame (one copy),
  // none staged by the deframer.
  EXPECT_GT(p.eb->stats().fpdus_rx, 700u);
  EXPECT_EQ(p.eb->stats().fpdus_rx_direct, p.eb->stats().fpdus_rx) << stats(*p.eb);
  o = send_train(p, 300, 3000);
  EXPECT_TRUE(o.ok) << o.why;
  o = read_bulk(p, 1 << 20, 128 * 1024);
  EXPECT_TRUE(o.ok) << o.why;
  // A clean in-memory link delivers in order: nothing to place early, nothing buffered.
  EXPECT_EQ(p.tcp_stats_b().ooo_segments, 0u);
  EXPECT_EQ(p.tcp_stats_b().peak_ooo_bytes, 0u);
  EXPECT_GT(p.ea->stats().tx_payload_bytes, (1u << 20) + 300 * 3000) << "payload went by reference";
}

// Every data segment leaves with whole FPDUs at its start, so every segment that arrives
// ahead of a hole is self-describing and placed: TCP never holds an out-of-order octet.
class UtcpFaults : public ::testing::TestWithParam<int> {};

TEST_P(UtcpFaults, LossPlacesEverythingAndBuffersNothing) {
  PairConfig pc{{}, {}, markers_crc(), {}};
  pc.faults_a.seed = static_cast<std::uint64_t>(GetParam());
  pc.faults_a.tx = spec_loss(0.02);
  pc.faults_b.seed = pc.faults_a.seed + 100;
  pc.faults_b.tx = spec_loss(0.02);
  UtcpPair p(pc);
  ASSERT_TRUE(p.connect());
  Outcome o = write_then_send(p, 2 << 20, 64 * 1024);
  ASSERT_TRUE(o.ok) << o.why << "\n" << stats(*p.eb);
  o = send_train(p, 400, 5000);
  ASSERT_TRUE(o.ok) << o.why << "\n" << stats(*p.eb);
  EXPECT_GT(p.eb->stats().ooo_segments_placed, 0u) << stats(*p.eb);
  EXPECT_EQ(p.eb->stats().ooo_segments_placed, p.eb->stats().ooo_segments) << stats(*p.eb);
  EXPECT_EQ(p.tcp_stats_b().peak_ooo_bytes, 0u) << stats(*p.eb);
  EXPECT_GT(p.tcp_stats_b().ooo_placed_by_user, 0u);
  // Reads: the Read Responses land out of order at A, placed into A's sink buffer.
  o = read_bulk(p, 1 << 20, 64 * 1024);
  ASSERT_TRUE(o.ok) << o.why << "\n" << stats(*p.ea);
  EXPECT_GT(p.ea->stats().ooo_segments_placed, 0u) << stats(*p.ea);
}

TEST_P(UtcpFaults, ReorderingAndDuplicationKeepEveryOctetInPlace) {
  PairConfig pc{{}, {}, markers_crc(), {}};
  pc.faults_a.seed = static_cast<std::uint64_t>(GetParam());
  pc.faults_a.tx.reorder = 0.03;
  pc.faults_a.tx.reorder_frames = 3;
  pc.faults_a.tx.duplicate = 0.03;
  pc.faults_b.seed = pc.faults_a.seed + 7;
  pc.faults_b.tx.duplicate = 0.03;
  UtcpPair p(pc);
  ASSERT_TRUE(p.connect());
  Outcome o = write_then_send(p, 2 << 20, 32 * 1024);
  ASSERT_TRUE(o.ok) << o.why << "\n" << stats(*p.eb);
  o = send_train(p, 300, 2500);
  ASSERT_TRUE(o.ok) << o.why << "\n" << stats(*p.eb);
  EXPECT_GT(p.eb->stats().ooo_segments_placed, 0u) << stats(*p.eb);
  EXPECT_EQ(p.tcp_stats_b().peak_ooo_bytes, 0u) << stats(*p.eb);
}

TEST_P(UtcpFaults, CorruptionTcpCatchesIsRepairedByRetransmission) {
  PairConfig pc{{}, {}, markers_crc(), {}};
  pc.faults_a.seed = static_cast<std::uint64_t>(GetParam());
  pc.faults_a.tx.corrupt = 0.02;
  pc.faults_a.tx.loss = 0.01;
  UtcpPair p(pc);
  ASSERT_TRUE(p.connect());
  const Outcome o = write_then_send(p, 2 << 20, 64 * 1024);
  ASSERT_TRUE(o.ok) << o.why << "\n" << stats(*p.eb);
  EXPECT_GT(p.fa->tx_counters().corrupted, 0u);
  EXPECT_EQ(p.eb->stats().ooo_crc_errors, 0u);
}

INSTANTIATE_TEST_SUITE_P(Seeds, UtcpFaults, ::testing::Values(1, 2, 3));

// Damage TCP cannot see (the checksum is recomputed): MPA's CRC must catch it, the FPDU
// must never be placed, and the stream ends with a Terminate (RFC 5044 section 8: a CRC
// error is fatal). Whatever the receiver's buffer holds is either untouched or correct.
TEST(Utcp, CorruptionBehindTheChecksumIsNeverPlaced) {
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    PairConfig pc{{}, {}, markers_crc(), {}};
    pc.faults_a.seed = seed;
    pc.faults_a.tx.corrupt = 0.01;
    pc.faults_a.tx.corrupt_keeps_checksum = true;
    pc.faults_a.tx.loss = 0.01;                     // so some damaged segments arrive out of order
    pc.faults_a.tx.filter = tcp::longer_than(200);  // data segments only
    UtcpPair p(pc);
    ASSERT_TRUE(p.connect());
    auto src = UtcpPair::region(p.ctx_a, 4 << 20, 5, true);
    auto dst = UtcpPair::region(p.ctx_b, 4 << 20, 0, false);
    for (std::size_t off = 0; off < src.mem.size(); off += 256 * 1024) {
      const ddp::Sge s = src.sge(off, 256 * 1024);
      ASSERT_EQ(p.ea->post_write(off, {&s, 1}, dst.stag, dst.to(off)), 0);
    }
    p.run_until([&] { return p.eb->state() == Endpoint::State::failed; }, 60s);
    ASSERT_EQ(p.eb->state(), Endpoint::State::failed) << "seed " << seed << " " << stats(*p.eb);
    EXPECT_NE(p.eb->error().find("CRC"), std::string::npos) << p.eb->error();
    for (std::size_t i = 0; i < dst.mem.size(); ++i)
      ASSERT_TRUE(dst.mem[i] == 0 || dst.mem[i] == src.mem[i]) << "seed " << seed << " octet " << i;
    // The peer learns why (RFC 5040 section 4.8 Terminate, LLP layer).
    p.run_until([&] { return p.ea->qp().terminate_received(); }, 5s);
    EXPECT_TRUE(p.ea->qp().terminate_received()) << "seed " << seed;
  }
}

// Placement forced off: the same losses leave TCP buffering out-of-order octets (the
// kernel-socket situation), and the result is still right.
TEST(Utcp, PlacementOffBuffersInTcpInstead) {
  PairConfig pc{{}, {}, with(mpa::Policy::require, mpa::Policy::require, false), {}};
  pc.faults_a.seed = 9;
  pc.faults_a.tx = spec_loss(0.02);
  UtcpPair p(pc);
  ASSERT_TRUE(p.connect());
  const Outcome o = write_then_send(p, 2 << 20, 64 * 1024);
  ASSERT_TRUE(o.ok) << o.why;
  EXPECT_EQ(p.eb->stats().ooo_segments_placed, 0u);
  EXPECT_GT(p.tcp_stats_b().peak_ooo_bytes, 0u);
}

// Without Markers the receiver relies on the sender's alignment, checked by the CRC.
TEST(Utcp, NoMarkersStillPlacesAlignedSegments) {
  PairConfig pc{{}, {}, with(mpa::Policy::refuse, mpa::Policy::require), {}};
  pc.faults_a.seed = 4;
  pc.faults_a.tx = spec_loss(0.02);
  UtcpPair p(pc);
  ASSERT_TRUE(p.connect());
  EXPECT_FALSE(p.eb->negotiated().markers_rx);
  const Outcome o = write_then_send(p, 2 << 20, 64 * 1024);
  ASSERT_TRUE(o.ok) << o.why;
  EXPECT_GT(p.eb->stats().ooo_segments_placed, 0u) << stats(*p.eb);
  EXPECT_EQ(p.tcp_stats_b().peak_ooo_bytes, 0u);
}

// Neither Markers nor CRC: nothing identifies an FPDU in a stray segment, so nothing is
// placed early; TCP reassembles and the data is still right.
TEST(Utcp, NoMarkersNoCrcFallsBackToInOrder) {
  PairConfig pc{{}, {}, with(mpa::Policy::refuse, mpa::Policy::refuse), {}};
  pc.faults_a.seed = 4;
  pc.faults_a.tx = spec_loss(0.02);
  UtcpPair p(pc);
  ASSERT_TRUE(p.connect());
  EXPECT_FALSE(p.eb->negotiated().crc);
  const Outcome o = write_then_send(p, 1 << 20, 64 * 1024);
  ASSERT_TRUE(o.ok) << o.why;
  EXPECT_EQ(p.eb->stats().ooo_segments_placed, 0u);
  EXPECT_GT(p.eb->stats().ooo_not_self_describing, 0u);
}

// Sends that arrive ahead of a hole before their receive is posted cannot be placed; TCP
// keeps them, and they complete in order once the receive is there and the hole filled.
TEST(Utcp, SendsWithoutPostedReceivesFallBack) {
  PairConfig pc{{}, {}, markers_crc(), {}};
  // Lose the first data segment and its first three retransmissions: fast retransmit and
  // two RTOs later the hole fills, long after everything behind it arrived out of order.
  auto first_seq = std::make_shared<std::optional<std::uint32_t>>();
  auto dropped = std::make_shared<int>(0);
  pc.faults_a.tx.loss = 1.0;
  pc.faults_a.tx.filter = [first_seq, dropped](const tcp::FaultFrameInfo& f) {
    if (f.length < 1000 || f.head.size() < 14 + 20 + 8) return false;
    const std::uint32_t seq = load_be32(f.head.data() + 14 + 20 + 4);  // TCP SEG.SEQ
    if (!*first_seq) *first_seq = seq;
    return seq == **first_seq && (*dropped)++ < 4;
  };
  UtcpPair p(pc);
  ASSERT_TRUE(p.connect());
  constexpr std::size_t count = 20, size = 4000;
  auto src = UtcpPair::region(p.ctx_a, count * size, 3, true);
  auto dst = UtcpPair::region(p.ctx_b, count * size, 0, false);
  const ddp::Sge first = dst.sge(0, size);
  ASSERT_EQ(p.eb->post_recv(0, {&first, 1}), 0);
  for (std::size_t k = 0; k < count; ++k) {
    const ddp::Sge s = src.sge(k * size, size);
    ASSERT_EQ(p.ea->post_send(k, {&s, 1}), 0);
  }
  // Before the retransmission (an RTO away) fills the hole, messages 1.. arrive with no
  // receive posted: not placeable, so TCP holds their octets.
  ASSERT_TRUE(p.run_until([&] { return p.eb->stats().ooo_not_placeable >= count - 1; }, 1s))
      << stats(*p.eb);
  EXPECT_GT(p.tcp_stats_b().peak_ooo_bytes, 0u);
  for (std::size_t k = 1; k < count; ++k) {
    const ddp::Sge s = dst.sge(k * size, size);
    ASSERT_EQ(p.eb->post_recv(k, {&s, 1}), 0);
  }
  std::size_t rdone = 0;
  std::array<ddp::Completion, 64> cq;
  ASSERT_TRUE(p.run_until(
      [&] {
        for (std::size_t n = p.eb->poll_recv_cq(cq), i = 0; i < n; ++i) {
          EXPECT_EQ(cq[i].wr_id, rdone);
          EXPECT_EQ(cq[i].status, ddp::Status::success);
          ++rdone;
        }
        return rdone == count;
      },
      60s))
      << stats(*p.eb) << " " << p.eb->error();
  EXPECT_TRUE(std::equal(src.mem.begin(), src.mem.end(), dst.mem.begin()));
}

}  // namespace
}  // namespace esock::utcp::test
