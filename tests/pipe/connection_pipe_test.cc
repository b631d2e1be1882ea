// Two software RNIC engines over byte streams (rnic::ByteStreamEngine) joined by an in-memory byte
// pipe that cuts the stream at seeded random points: MPA negotiation, framing and DDP/RDMAP
// exchanges end to end, every byte verified, across MPA revisions, markers, CRC and peer-to-peer
// RTR modes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "esock/rnic/byte_stream_engine.h"

namespace esock::rnic {
namespace {

struct Mode {
  std::uint8_t revision;
  bool markers;
  bool crc;
  bool p2p;
  mpa::Rtr rtr;  // the one RTR type both sides support when p2p
};

std::string mode_name(const testing::TestParamInfo<Mode>& info) {
  const Mode& m = info.param;
  std::string s = "v" + std::to_string(m.revision) + (m.markers ? "_markers" : "_nomarkers") +
                  (m.crc ? "_crc" : "_nocrc");
  if (m.p2p) {
    s += m.rtr == mpa::Rtr::send ? "_rtrsend" : m.rtr == mpa::Rtr::write ? "_rtrwrite" : "_rtrread";
  }
  return s;
}

mpa::Config mpa_config(const Mode& m, bool initiator) {
  mpa::Config c;
  c.initiator = initiator;
  c.revision = m.revision;
  c.markers = m.markers ? mpa::Policy::require : mpa::Policy::allow;
  c.crc = m.crc ? mpa::Policy::require : mpa::Policy::allow;
  c.p2p = m.p2p;
  c.rtr_send = !m.p2p || m.rtr == mpa::Rtr::send;
  c.rtr_write = !m.p2p || m.rtr == mpa::Rtr::write;
  c.rtr_read = !m.p2p || m.rtr == mpa::Rtr::read;
  return c;
}

// One side: its own context (STag table: another host) and engine with its completion queues.
struct Side {
  Side(const Mode& m, bool initiator, std::size_t emss)
      : conn(config(m, initiator, emss), ctx),
        stags(ctx.stags()),
        pd(ctx.pd()),
        scq(conn.engine().send_cq()),
        rcq(conn.engine().recv_cq()) {}

  static ByteStreamConfig config(const Mode& m, bool initiator, std::size_t emss) {
    ByteStreamConfig c;
    c.engine.mpa = mpa_config(m, initiator);
    c.engine.cq_depth = 1024;
    c.emss = emss;
    return c;
  }

  Context ctx;
  ByteStreamEngine conn;
  ddp::StagTable& stags;
  std::uint32_t pd;
  ddp::CompletionQueue& scq;
  ddp::CompletionQueue& rcq;
};

class PipeTest : public testing::TestWithParam<Mode> {
 protected:
  PipeTest()
      : a(GetParam(), true, 1460), b(GetParam(), false, 1460), rng(0x5eed + GetParam().revision) {}

  // Moves octets both ways in random-sized pieces until neither side has anything to send.
  void run() {
    bool quiet = false;
    for (int guard = 0; guard < 1000000 && !quiet; ++guard) {
      // Both directions every round (no short-circuit), until neither moves anything.
      const bool ab = move(a, b);
      const bool ba = move(b, a);
      quiet = !ab && !ba;
    }
    ASSERT_TRUE(quiet) << "pipe never went quiet";
    for (Side* s : {&a, &b}) {
      // A healthy exchange never fails; say why if it did.
      EXPECT_NE(s->conn.state(), Engine::State::failed) << s->conn.error();
      if (auto t = s->conn.qp().terminate_cause()) {
        ADD_FAILURE() << (s == &a ? "initiator" : "responder") << " Terminate "
                      << (s->conn.qp().terminate_received() ? "received" : "sent") << ": layer "
                      << int(t->layer) << " type " << int(t->type) << " code " << int(t->code);
      }
    }
  }

  bool move(Side& from, Side& to) {
    from.conn.pump();
    bytes_view out = from.conn.output();
    if (out.empty()) return false;
    std::size_t n = std::min<std::size_t>(out.size(), 1 + rng() % 3000);
    std::vector<std::uint8_t> piece(out.begin(), out.begin() + static_cast<long>(n));
    from.conn.consume(n);
    to.conn.on_bytes(piece);
    return true;
  }

  void connect() {
    run();
    ASSERT_EQ(a.conn.state(), Engine::State::established) << a.conn.error();
    ASSERT_EQ(b.conn.state(), Engine::State::established) << b.conn.error();
    const Mode& m = GetParam();
    EXPECT_EQ(a.conn.negotiated().revision, m.revision);
    EXPECT_EQ(a.conn.negotiated().crc, m.crc);
    EXPECT_EQ(a.conn.negotiated().markers_tx, m.markers);
    EXPECT_EQ(a.conn.negotiated().markers_rx, m.markers);
    EXPECT_EQ(b.conn.negotiated().markers_tx, m.markers);
    if (m.p2p) {
      EXPECT_EQ(a.conn.negotiated().rtr, m.rtr);
    }
  }

  std::vector<std::uint8_t> pattern(std::size_t n, std::uint8_t seed) {
    std::vector<std::uint8_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(seed + i * 7 + (i >> 9));
    return v;
  }

  ddp::Completion expect_one(ddp::CompletionQueue& cq) {
    ddp::Completion c{};
    EXPECT_EQ(cq.poll({&c, 1}), 1u);
    EXPECT_EQ(c.status, ddp::Status::success);
    return c;
  }

  Side a, b;
  std::mt19937 rng;
};

TEST_P(PipeTest, SendsOfManySizesArriveIntact) {
  connect();
  const std::vector<std::size_t> sizes = {1, 0, 13, 1460, 4096, 65536, 300001};
  std::vector<std::vector<std::uint8_t>> rx(sizes.size());
  std::vector<std::vector<std::uint8_t>> tx;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    rx[i].assign(sizes[i] + 16, 0);
    ddp::stag_t l = b.stags.register_mr(b.pd, rx[i].data(), rx[i].size(), ddp::access_local_write);
    ddp::Sge sge{rx[i].data(), static_cast<std::uint32_t>(rx[i].size()), l};
    ASSERT_EQ(b.conn.qp().post_recv(100 + i, {&sge, 1}), 0);
  }
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    // One spare octet so even the empty message has registered memory behind it.
    tx.push_back(pattern(sizes[i] + 1, static_cast<std::uint8_t>(i)));
  }
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    // Gather from two registered pieces to exercise multi-SGE sends.
    auto& t = tx[i];
    ddp::stag_t l = a.stags.register_mr(a.pd, t.data(), t.size(), 0);
    const std::uint32_t half = static_cast<std::uint32_t>(sizes[i] / 2);
    ddp::Sge sg[2] = {{t.data(), half, l},
                      {t.data() + half, static_cast<std::uint32_t>(sizes[i] - half), l}};
    ASSERT_EQ(a.conn.qp().post_send(i, sg, /*solicited=*/i % 2 == 1), 0);
  }
  run();
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    ddp::Completion s = expect_one(a.scq);
    EXPECT_EQ(s.wr_id, i);
    ddp::Completion r = expect_one(b.rcq);
    EXPECT_EQ(r.wr_id, 100 + i);
    ASSERT_EQ(r.byte_len, sizes[i]);
    EXPECT_TRUE(
        std::equal(tx[i].begin(), tx[i].begin() + static_cast<long>(sizes[i]), rx[i].begin()))
        << "message " << i;
  }
}

TEST_P(PipeTest, RdmaWriteThenReadBackIsByteExact) {
  connect();
  constexpr std::size_t len = 1 << 20;
  std::vector<std::uint8_t> sink(len, 0), src = pattern(len, 3), back(len, 0);
  ddp::stag_t remote = b.stags.register_mr(
      b.pd, sink.data(), len,
      ddp::access_remote_write | ddp::access_remote_read | ddp::access_local_write);
  ddp::stag_t lsrc = a.stags.register_mr(a.pd, src.data(), len, 0);
  ddp::stag_t lback = a.stags.register_mr(a.pd, back.data(), len, ddp::access_local_write);
  const auto base = reinterpret_cast<std::uint64_t>(sink.data());

  // Four writes at scattered offsets covering the region, then one read of all of it.
  const std::size_t q = len / 4;
  for (std::size_t i = 0; i < 4; ++i) {
    const std::size_t off = ((i * 3) % 4) * q;
    ddp::Sge sge{src.data() + off, static_cast<std::uint32_t>(q), lsrc};
    ASSERT_EQ(a.conn.qp().post_write(10 + i, {&sge, 1}, remote, base + off), 0);
  }
  ddp::Sge rd{back.data(), static_cast<std::uint32_t>(len), lback};
  ASSERT_EQ(a.conn.qp().post_read(20, {&rd, 1}, remote, base), 0);
  run();
  for (int i = 0; i < 5; ++i) expect_one(a.scq);
  EXPECT_EQ(sink, src);
  EXPECT_EQ(back, src);
  EXPECT_EQ(b.rcq.size(), 0u) << "one-sided operations must not complete at the target";
}

TEST_P(PipeTest, ResponderCanUseTheConnectionInBothDirections) {
  connect();
  // The initiator sends first (RFC 5044 section 7.1 / RFC 6581), then the responder writes back.
  std::vector<std::uint8_t> ping = pattern(100, 1), pong = pattern(5000, 2);
  std::vector<std::uint8_t> ping_rx(100), pong_rx(5000);
  ddp::stag_t l1 = b.stags.register_mr(b.pd, ping_rx.data(), 100, ddp::access_local_write);
  ddp::Sge r1{ping_rx.data(), 100, l1};
  ASSERT_EQ(b.conn.qp().post_recv(1, {&r1, 1}), 0);
  ddp::stag_t sink = a.stags.register_mr(a.pd, pong_rx.data(), 5000, ddp::access_remote_write);
  ddp::stag_t s1 = a.stags.register_mr(a.pd, ping.data(), 100, 0);
  ddp::Sge t1{ping.data(), 100, s1};
  ASSERT_EQ(a.conn.qp().post_send(1, {&t1, 1}), 0);
  run();
  expect_one(b.rcq);
  ddp::stag_t s2 = b.stags.register_mr(b.pd, pong.data(), 5000, 0);
  ddp::Sge t2{pong.data(), 5000, s2};
  ASSERT_EQ(
      b.conn.qp().post_write(2, {&t2, 1}, sink, reinterpret_cast<std::uint64_t>(pong_rx.data())),
      0);
  run();
  expect_one(b.scq);
  EXPECT_EQ(ping_rx, ping);
  EXPECT_EQ(pong_rx, pong);
}

std::vector<Mode> all_modes() {
  std::vector<Mode> modes;
  for (std::uint8_t rev : {std::uint8_t{1}, std::uint8_t{2}})
    for (bool markers : {false, true})
      for (bool crc : {false, true}) modes.push_back({rev, markers, crc, false, mpa::Rtr::none});
  for (mpa::Rtr rtr : {mpa::Rtr::send, mpa::Rtr::write, mpa::Rtr::read})
    for (bool markers : {false, true}) modes.push_back({2, markers, true, true, rtr});
  return modes;
}

INSTANTIATE_TEST_SUITE_P(AllModes, PipeTest, testing::ValuesIn(all_modes()), mode_name);

}  // namespace
}  // namespace esock::rnic
