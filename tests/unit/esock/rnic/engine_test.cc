// The software RNIC engine (lib/esock/rnic/engine.h) over an in-memory segment transport:
// what every transport relies on, from negotiation to close, with in-order delivery cut at
// random points and out-of-order delivery through early placement.
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <tuple>
#include <utility>

#include "segment_link.h"

namespace esock::rnic::testing {
namespace {

std::vector<std::uint8_t> pattern(std::size_t n, std::uint8_t seed) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(seed + i * 7 + i / 251);
  return v;
}

// Both sides connected: the initiator's Request and the responder's Reply delivered.
struct Pair {
  Pair(EngineConfig ca, EngineConfig cb, std::uint32_t seed = 1)
      : a(std::move(ca)), b(std::move(cb)), link(seed) {
    a.engine.start();
    b.engine.start();
    link.deliver_in_order(a, b, false);
    link.deliver_in_order(b, a, false);
  }
  Side a, b;
  Link link;
};

Pair plain_pair(mpa::Policy markers, mpa::Policy crc, std::uint32_t seed = 1) {
  return Pair(engine_config(true, markers, crc), engine_config(false, markers, crc), seed);
}

ddp::Completion one(ddp::CompletionQueue& cq) {
  ddp::Completion c{};
  EXPECT_EQ(cq.poll({&c, 1}), 1u);
  return c;
}

// n receives of `size` octets each posted at b, n Sends of those sizes posted at a.
struct SendsFixture {
  SendsFixture(Pair& p, std::size_t n, std::size_t size) {
    for (std::size_t i = 0; i < n; ++i) {
      rx.push_back(std::vector<std::uint8_t>(size, 0));
      tx.push_back(pattern(size, static_cast<std::uint8_t>(i)));
    }
    for (std::size_t i = 0; i < n; ++i) {
      const ddp::stag_t l = p.b.ctx.reg_mr(rx[i].data(), size, ddp::access_local_write);
      const ddp::Sge r{rx[i].data(), static_cast<std::uint32_t>(size), l};
      EXPECT_EQ(p.b.engine.post_recv(100 + i, {&r, 1}), 0);
    }
    for (std::size_t i = 0; i < n; ++i) {
      const ddp::stag_t l = p.a.ctx.reg_mr(tx[i].data(), size, 0);
      const ddp::Sge s{tx[i].data(), static_cast<std::uint32_t>(size), l};
      EXPECT_EQ(p.a.engine.post_send(i, {&s, 1}), 0);
    }
  }
  void expect_delivered_in_order(Pair& p) {
    for (std::size_t i = 0; i < rx.size(); ++i) {
      const ddp::Completion c = one(p.b.engine.recv_cq());
      EXPECT_EQ(c.wr_id, 100 + i) << "receives complete in posting order";
      EXPECT_EQ(c.status, ddp::Status::success);
      EXPECT_EQ(rx[i], tx[i]) << "message " << i;
    }
  }
  std::vector<std::vector<std::uint8_t>> rx, tx;
};

TEST(RnicEngine, NegotiatesAndStartsStreamPositionsAtZero) {
  Pair p = plain_pair(mpa::Policy::require, mpa::Policy::require);
  ASSERT_EQ(p.a.engine.state(), Engine::State::established) << p.a.engine.error();
  ASSERT_EQ(p.b.engine.state(), Engine::State::established) << p.b.engine.error();
  EXPECT_TRUE(p.a.engine.negotiated().markers_rx);
  EXPECT_TRUE(p.b.engine.negotiated().crc);
  EXPECT_EQ(p.a.engine.rx_position(), 0u);
  EXPECT_EQ(p.b.engine.rx_position(), 0u);
}

TEST(RnicEngine, NegotiationTakesOnlyThePeersFrameAndTheRestIsFpduStream) {
  Side a(engine_config(true, mpa::Policy::allow, mpa::Policy::require));
  Side b(engine_config(false, mpa::Policy::allow, mpa::Policy::require));
  a.engine.start();
  Link link(3);
  link.deliver_in_order(a, b, false);
  // The responder's Reply and its first FPDUs reach the initiator in one buffer.
  std::vector<std::uint8_t> rx(64), tx = pattern(64, 9);
  const ddp::Sge r{rx.data(), 64, a.ctx.reg_mr(rx.data(), 64, ddp::access_local_write)};
  ASSERT_EQ(a.engine.post_recv(1, {&r, 1}), 0);
  const ddp::Sge s{tx.data(), 64, b.ctx.reg_mr(tx.data(), 64, 0)};
  ASSERT_EQ(b.engine.post_send(7, {&s, 1}), 0);
  std::vector<std::uint8_t> all;
  for (const auto& rec : b.tx.records) all.insert(all.end(), rec.bytes.begin(), rec.bytes.end());
  const std::size_t reply_len = b.tx.records.front().bytes.size();
  const std::size_t used = a.engine.feed(bytes_view(all));
  EXPECT_EQ(used, reply_len);
  ASSERT_EQ(a.engine.state(), Engine::State::established);
  EXPECT_EQ(a.engine.feed(bytes_view(all).subspan(used)), all.size() - used);
  // RFC 5044 7.1: the responder sends nothing before the initiator's first FPDU (no RTR).
  EXPECT_EQ(b.tx.records.size(), 1u) << "the Send is held back";
  EXPECT_EQ(a.engine.recv_cq().size(), 0u);
}

class RnicEngineModes : public ::testing::TestWithParam<std::tuple<bool, bool>> {
 protected:
  // Markers and CRC required when the parameter says so, refused otherwise.
  static std::pair<mpa::Policy, mpa::Policy> policies() {
    const auto pick = [](bool on) { return on ? mpa::Policy::require : mpa::Policy::refuse; };
    return {pick(std::get<0>(GetParam())), pick(std::get<1>(GetParam()))};
  }
};

TEST_P(RnicEngineModes, InOrderRecordsCutAnywhereArriveIntact) {
  const auto [m, c] = policies();
  for (std::uint32_t seed = 1; seed <= 8; ++seed) {
    Pair p = plain_pair(m, c, seed);
    SendsFixture f(p, 6, 5000 + seed * 131);
    p.link.deliver_in_order(p.a, p.b, /*cut=*/true);
    f.expect_delivered_in_order(p);
    EXPECT_EQ(p.b.engine.state(), Engine::State::established) << p.b.engine.error();
  }
}

TEST_P(RnicEngineModes, WholeAlignedRecordsArePlacedStraightFromTheSegment) {
  const auto [markers, crc] = GetParam();
  const auto [m, c] = policies();
  Pair p = plain_pair(m, c);
  SendsFixture f(p, 4, 3000);
  p.link.deliver_in_order(p.a, p.b, /*cut=*/false);
  f.expect_delivered_in_order(p);
  const EngineStats& s = p.b.engine.stats();
  EXPECT_GT(s.fpdus_rx, 0u);
  // Without CRC or Markers nothing verifies a segment by itself (RFC 5044 section 8).
  EXPECT_EQ(s.fpdus_rx_direct, markers || crc ? s.fpdus_rx : 0u);
}

TEST_P(RnicEngineModes, OutOfOrderRecordsArePlacedEarlyAndDeliveredInOrder) {
  const auto [markers, crc] = GetParam();
  const auto [m, c] = policies();
  for (std::uint32_t seed = 1; seed <= 6; ++seed) {
    Pair p = plain_pair(m, c, seed);
    SendsFixture f(p, 8, 4000 + seed * 17);
    p.link.deliver_shuffled(p.a, p.b, 7);
    ASSERT_EQ(p.b.engine.state(), Engine::State::established) << p.b.engine.error();
    f.expect_delivered_in_order(p);
    const EngineStats& s = p.b.engine.stats();
    EXPECT_EQ(p.b.engine.placed_pending(), 0u);
    if (markers || crc) {
      EXPECT_GT(s.fpdus_placed_early, 0u) << "seed " << seed;
      EXPECT_EQ(s.ooo_segments_placed, s.ooo_segments);
    } else {
      EXPECT_EQ(s.fpdus_placed_early, 0u);
      EXPECT_EQ(s.ooo_not_self_describing, s.ooo_segments);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(MarkersCrc, RnicEngineModes,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool()),
                         [](const auto& p) {
                           return std::string(std::get<0>(p.param) ? "markers" : "nomarkers") +
                                  (std::get<1>(p.param) ? "_crc" : "_nocrc");
                         });

TEST(RnicEngine, RdmaWritesAheadOfAHoleLandBeforeTheirTurn) {
  Pair p = plain_pair(mpa::Policy::allow, mpa::Policy::require);
  constexpr std::size_t len = 32 * 1024;
  std::vector<std::uint8_t> sink(len, 0), src = pattern(len, 5);
  const ddp::stag_t remote = p.b.ctx.reg_mr(sink.data(), len, ddp::access_remote_write);
  const ddp::Sge s{src.data(), len, p.a.ctx.reg_mr(src.data(), len, 0)};
  ASSERT_EQ(p.a.engine.post_write(1, {&s, 1}, remote, reinterpret_cast<std::uint64_t>(sink.data())),
            0);
  // Everything but the first FPDU arrives: the tail is placed, nothing is delivered.
  auto& recs = p.a.tx.records;
  ASSERT_GT(recs.size(), 2u);
  const RecordingTransport::Record first = recs.front();
  recs.pop_front();
  std::uint64_t pos = first.bytes.size();
  std::vector<std::uint32_t> lens;
  for (const auto& r : recs) {
    ASSERT_TRUE(p.b.engine.place_out_of_order(pos, bytes_view(r.bytes)));
    pos += r.bytes.size();
    lens.push_back(static_cast<std::uint32_t>(r.bytes.size()));
  }
  EXPECT_TRUE(std::equal(src.begin() + 2048, src.end(), sink.begin() + 2048))
      << "the tail is in place before the hole fills";
  EXPECT_EQ(p.b.engine.placed_pending(), recs.size());
  // The hole fills: the first FPDU in order, then the placed ranges.
  Link::feed_all(p.b, bytes_view(first.bytes));
  for (std::uint32_t l : lens) ASSERT_TRUE(p.b.engine.skip_placed(l));
  EXPECT_EQ(sink, src);
  EXPECT_EQ(p.b.engine.placed_pending(), 0u);
  EXPECT_EQ(p.b.engine.stats().fpdus_placed_early, recs.size());
  EXPECT_EQ(p.b.engine.state(), Engine::State::established);
}

TEST(RnicEngine, CorruptSegmentAheadOfAHoleIsLeftToTheInOrderPathWhichTerminates) {
  Pair p = plain_pair(mpa::Policy::allow, mpa::Policy::require);
  SendsFixture f(p, 2, 800);
  auto& recs = p.a.tx.records;
  ASSERT_EQ(recs.size(), 2u);
  recs[1].bytes[20] ^= 0x40;
  const std::uint64_t pos1 = recs[0].bytes.size();
  EXPECT_FALSE(p.b.engine.place_out_of_order(pos1, bytes_view(recs[1].bytes)));
  EXPECT_EQ(p.b.engine.stats().ooo_crc_errors, 1u);
  Link::feed_all(p.b, bytes_view(recs[0].bytes));
  Link::feed_all(p.b, bytes_view(recs[1].bytes));
  EXPECT_EQ(p.b.engine.state(), Engine::State::failed);
  EXPECT_NE(p.b.engine.error().find("MPA receive error"), std::string::npos) << p.b.engine.error();
  ASSERT_TRUE(p.b.engine.qp().terminate_cause().has_value());
  EXPECT_EQ(p.b.engine.qp().terminate_cause()->layer, 2) << "LLP layer (RFC 5044 section 8)";
  EXPECT_FALSE(p.b.engine.terminated()) << "until the Terminate is sent";
  EXPECT_TRUE(p.b.engine.transmit());
  EXPECT_TRUE(p.b.engine.terminated());
  EXPECT_EQ(p.b.tx.records.size(), 1u) << "the Terminate";
}

TEST(RnicEngine, SegmentsThatAreNotWholeFpdusAreCountedAsSuch) {
  Pair p = plain_pair(mpa::Policy::refuse, mpa::Policy::require);
  SendsFixture f(p, 1, 1000);
  const auto& r = p.a.tx.records.front().bytes;
  EXPECT_FALSE(p.b.engine.place_out_of_order(100, bytes_view(r).first(r.size() - 1)));
  EXPECT_EQ(p.b.engine.stats().ooo_not_whole_fpdus, 1u);
  EXPECT_EQ(p.b.engine.stats().ooo_not_self_describing, 0u);
  EXPECT_EQ(p.b.engine.stats().ooo_crc_errors, 0u);
}

TEST(RnicEngine, FpdusFitTheTransportSegmentAtEveryMarkerPosition) {
  for (std::size_t segment : {200u, 536u, 1460u, 3000u, 9000u}) {
    Pair p = plain_pair(mpa::Policy::require, mpa::Policy::require);
    p.a.tx.segment = segment;
    SendsFixture f(p, 3, 20000);
    EXPECT_TRUE(p.a.tx.markers_seen);
    for (const auto& r : p.a.tx.records) EXPECT_LE(r.bytes.size(), segment);
    p.link.deliver_in_order(p.a, p.b, true);
    f.expect_delivered_in_order(p);
  }
}

TEST(RnicEngine, ASegmentTooSmallForAnyDdpSegmentIsALocalError) {
  Pair p = plain_pair(mpa::Policy::refuse, mpa::Policy::require);
  p.a.tx.segment = 40;
  SendsFixture f(p, 1, 100);
  EXPECT_EQ(p.a.engine.state(), Engine::State::failed);
  ASSERT_TRUE(p.a.engine.qp().terminate_cause().has_value());
  EXPECT_EQ(*p.a.engine.qp().terminate_cause(), ddp::term::llp_local_catastrophic);
  EXPECT_TRUE(p.a.tx.records.empty()) << "nothing fits, not even the Terminate";
}

TEST(RnicEngine, NothingIsFramedWithoutRoomForAWholeFpdu) {
  Pair p = plain_pair(mpa::Policy::refuse, mpa::Policy::require);
  p.a.tx.room = 100;
  SendsFixture f(p, 1, 5000);
  EXPECT_TRUE(p.a.tx.records.empty());
  EXPECT_TRUE(p.a.engine.tx_pending());
  p.a.tx.room = SIZE_MAX;
  EXPECT_TRUE(p.a.engine.transmit());
  EXPECT_FALSE(p.a.engine.tx_pending());
  p.link.deliver_in_order(p.a, p.b, false);
  f.expect_delivered_in_order(p);
}

TEST(RnicEngine, CompleteOnAckHoldsSendCompletionsUntilTheTransportLetsGo) {
  EngineConfig ca = engine_config(true, mpa::Policy::refuse, mpa::Policy::require);
  ca.complete_on_ack = true;
  Pair p(ca, engine_config(false, mpa::Policy::refuse, mpa::Policy::require));
  SendsFixture f(p, 2, 3000);
  EXPECT_EQ(p.a.engine.send_cq().size(), 0u) << "framed is not done";
  const std::uint64_t last = p.a.tx.records.back().seg_id;
  p.a.engine.on_acked(last);
  EXPECT_EQ(p.a.engine.send_cq().size(), 2u);
}

TEST(RnicEngine, OrderlyTransportCloseFlushesPostedReceives) {
  Pair p = plain_pair(mpa::Policy::refuse, mpa::Policy::require);
  std::vector<std::uint8_t> rx(10);
  const ddp::Sge r{rx.data(), 10, p.b.ctx.reg_mr(rx.data(), 10, ddp::access_local_write)};
  ASSERT_EQ(p.b.engine.post_recv(5, {&r, 1}), 0);
  p.b.engine.on_transport_closed(true);
  EXPECT_EQ(p.b.engine.state(), Engine::State::closed);
  EXPECT_EQ(one(p.b.engine.recv_cq()).status, ddp::Status::flushed);
  p.b.engine.on_transport_closed(false, "late");  // over already: nothing changes
  EXPECT_EQ(p.b.engine.state(), Engine::State::closed);
}

TEST(RnicEngine, BrokenTransportFailsWithItsReasonAndTerminates) {
  Pair p = plain_pair(mpa::Policy::refuse, mpa::Policy::require);
  p.a.engine.on_transport_closed(false, "TCP connection reset");
  EXPECT_EQ(p.a.engine.state(), Engine::State::failed);
  EXPECT_EQ(p.a.engine.error(), "TCP connection reset");
  ASSERT_TRUE(p.a.engine.qp().terminate_cause().has_value());
  EXPECT_EQ(*p.a.engine.qp().terminate_cause(), ddp::term::llp_connection_lost);
  EXPECT_EQ(p.a.engine.feed(bytes_view(pattern(10, 1))), 10u) << "octets after failure dropped";
}

TEST(RnicEngine, PeerCloseDuringNegotiationEndsTheEngine) {
  Side a(engine_config(true, mpa::Policy::allow, mpa::Policy::allow));
  a.engine.start();
  a.engine.on_transport_closed(true);
  EXPECT_EQ(a.engine.state(), Engine::State::closed);
}

TEST(RnicEngine, RejectedNegotiationFailsAndTheRejectGoesOut) {
  Side a(engine_config(true, mpa::Policy::require, mpa::Policy::allow));
  Side b(engine_config(false, mpa::Policy::refuse, mpa::Policy::allow));
  a.engine.start();
  Link link(2);
  link.deliver_in_order(a, b, true);
  EXPECT_EQ(b.engine.state(), Engine::State::failed);
  ASSERT_EQ(b.tx.records.size(), 1u) << "the Reject";
  link.deliver_in_order(b, a, true);
  EXPECT_EQ(a.engine.state(), Engine::State::failed);
  EXPECT_NE(a.engine.error().find("rejected"), std::string::npos) << a.engine.error();
}

}  // namespace
}  // namespace esock::rnic::testing
