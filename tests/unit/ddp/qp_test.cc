// Two Qps back to back: Send (SE, Invalidate), Write, Read with gather/scatter lists,
// segmentation at small MULPDUs, shuffled delivery, ORD/IRD and RFC 6581 RTRs.
#include <gtest/gtest.h>

#include "harness.h"

namespace esock::ddp {
namespace {

using namespace testing;

QpConfig cfg(std::uint32_t mulpdu = 100) {
  QpConfig c{};
  c.mulpdu = mulpdu;
  return c;
}

struct Pair : ::testing::Test {
  Side a{cfg()}, b{cfg()};
  void SetUp() override {
    ASSERT_EQ(a.qp.rts(), 0);
    ASSERT_EQ(b.qp.rts(), 0);
  }
  stag_t reg(Side& s, std::vector<std::uint8_t>& buf, std::uint32_t acc) {
    const stag_t k = s.stags.register_mr(s.pd, buf.data(), buf.size(), acc);
    EXPECT_NE(k, 0u);
    return k;
  }
};

TEST_F(Pair, SendGatherScatterSegmented) {
  auto src = pattern(5000, 1);
  std::vector<std::uint8_t> dst(6000, 0);
  const stag_t ls = reg(a, src, 0);
  const stag_t ld = reg(b, dst, access_local_write);
  Sge rx[] = {{dst.data(), 1000, ld}, {dst.data() + 1000, 333, ld}, {dst.data() + 1333, 4667, ld}};
  ASSERT_EQ(b.qp.post_recv(7, rx), 0);
  Sge tx[] = {{src.data(), 10, ls}, {src.data() + 10, 0, ls}, {src.data() + 10, 4990, ls}};
  ASSERT_EQ(a.qp.post_send(1, tx), 0);
  Wire w;
  pump(a, b, &w);
  EXPECT_GT(w.a_to_b.size(), 5000u / 82);
  for (const auto& s : w.a_to_b) EXPECT_LE(s.size(), 100u);
  EXPECT_TRUE(std::equal(src.begin(), src.end(), dst.begin()));
  auto sc = a.poll_send();
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].wr_id, 1u);
  EXPECT_EQ(sc[0].status, Status::success);
  EXPECT_EQ(sc[0].byte_len, 5000u);
  auto rc = b.poll_recv();
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].wr_id, 7u);
  EXPECT_EQ(rc[0].opcode, Opcode::recv);
  EXPECT_EQ(rc[0].byte_len, 5000u);
  EXPECT_FALSE(rc[0].solicited);
  EXPECT_EQ(a.qp.state(), QpState::rts);
  EXPECT_EQ(b.qp.state(), QpState::rts);
}

TEST_F(Pair, SendWithSolicitedEventAndInvalidate) {
  std::vector<std::uint8_t> dst(64), exposed(128);
  const stag_t ld = reg(b, dst, access_local_write);
  const stag_t ex = reg(b, exposed, access_remote_write);
  Sge rx[] = {{dst.data(), 64, ld}};
  ASSERT_EQ(b.qp.post_recv(1, rx), 0);
  ASSERT_EQ(b.qp.post_recv(2, rx), 0);
  ASSERT_EQ(b.qp.post_recv(3, rx), 0);
  ASSERT_EQ(a.qp.post_send(10, {}, true), 0);       // Send with SE, zero length
  ASSERT_EQ(a.qp.post_send(11, {}, false, ex), 0);  // Send with Invalidate
  ASSERT_EQ(a.qp.post_send(12, {}, true, ex), 0);   // SE + Invalidate: already invalid
  Wire w;
  pump(a, b, &w);
  ASSERT_GE(w.a_to_b.size(), 3u);
  EXPECT_EQ(w.a_to_b[0][1] & 0x0f, 5);
  EXPECT_EQ(w.a_to_b[1][1] & 0x0f, 4);
  EXPECT_EQ(w.a_to_b[2][1] & 0x0f, 6);
  auto rc = b.poll_recv();
  ASSERT_EQ(rc.size(), 3u);
  EXPECT_TRUE(rc[0].solicited);
  EXPECT_EQ(rc[0].invalidated_stag, 0u);
  EXPECT_FALSE(rc[1].solicited);
  EXPECT_EQ(rc[1].invalidated_stag, ex);
  EXPECT_EQ(
      b.stags.check(ex, b.pd, 0, reinterpret_cast<std::uintptr_t>(exposed.data()), 1, nullptr),
      StagTable::Check::invalid_stag);
  // The second invalidation of the same STag cannot succeed: RDMAP Terminate.
  EXPECT_EQ(rc[2].status, Status::remote_invalid_request_error);
  EXPECT_EQ(b.qp.terminate_cause(), term::rdmap_op_cannot_invalidate);
  EXPECT_EQ(b.qp.state(), QpState::error);
  EXPECT_EQ(a.qp.state(), QpState::error);
  EXPECT_TRUE(a.qp.terminate_received());
}

// Hardening (issue 20, item 5): a peer's Send with Invalidate of a local-only STag (here the
// receive buffer's own key) succeeded: the peer could revoke memory it was never given.
TEST_F(Pair, SendWithInvalidateOfALocalOnlyStagIsAProtectionError) {
  std::vector<std::uint8_t> dst(64);
  const stag_t ld = reg(b, dst, access_local_write);
  Sge rx[] = {{dst.data(), 64, ld}};
  ASSERT_EQ(b.qp.post_recv(1, rx), 0);
  ASSERT_EQ(a.qp.post_send(10, {}, false, ld), 0);
  Wire w;
  pump(a, b, &w);
  EXPECT_EQ(b.qp.terminate_cause(), term::rdmap_prot_cannot_invalidate);
  EXPECT_EQ(b.stags.check(ld, b.pd, access_local_write,
                          reinterpret_cast<std::uintptr_t>(dst.data()), 1, nullptr),
            StagTable::Check::ok);  // still valid
}

TEST_F(Pair, WriteGatherSegmented) {
  auto src = pattern(3000, 2);
  std::vector<std::uint8_t> dst(4000, 0);
  const stag_t ls = reg(a, src, 0);
  const stag_t rk = reg(b, dst, access_remote_write);
  Sge tx[] = {{src.data(), 1500, ls}, {src.data() + 1500, 1500, ls}};
  ASSERT_EQ(a.qp.post_write(5, tx, rk, reinterpret_cast<std::uintptr_t>(dst.data()) + 500), 0);
  pump(a, b);
  EXPECT_TRUE(std::equal(src.begin(), src.end(), dst.begin() + 500));
  EXPECT_TRUE(std::all_of(dst.begin(), dst.begin() + 500, [](auto x) { return x == 0; }));
  auto sc = a.poll_send();
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].opcode, Opcode::write);
  EXPECT_EQ(sc[0].byte_len, 3000u);
  EXPECT_TRUE(b.poll_recv().empty());  // RDMA Write is invisible to the responder
}

TEST_F(Pair, ReadScatterSegmented) {
  auto src = pattern(2500, 3);
  std::vector<std::uint8_t> dst(2500, 0);
  const stag_t rk = reg(b, src, access_remote_read);
  const stag_t ld = reg(a, dst, access_local_write);
  Sge sink[] = {{dst.data(), 700, ld}, {dst.data() + 700, 1800, ld}};
  ASSERT_EQ(a.qp.post_read(9, sink, rk, reinterpret_cast<std::uintptr_t>(src.data())), 0);
  pump(a, b);
  EXPECT_EQ(dst, src);
  auto sc = a.poll_send();
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].opcode, Opcode::read);
  EXPECT_EQ(sc[0].status, Status::success);
  EXPECT_EQ(sc[0].byte_len, 2500u);
  EXPECT_EQ(a.qp.outstanding_reads(), 0u);
  EXPECT_EQ(b.qp.incoming_reads(), 0u);
}

TEST_F(Pair, CompletionsInPostingOrderBehindARead) {
  auto src = pattern(400, 4);
  std::vector<std::uint8_t> dst(400);
  const stag_t rk = reg(b, src, access_remote_read);
  const stag_t ld = reg(a, dst, access_local_write);
  Sge sink[] = {{dst.data(), 400, ld}};
  std::vector<std::uint8_t> rbuf(16);
  Sge rx[] = {{rbuf.data(), 16, reg(b, rbuf, access_local_write)}};
  ASSERT_EQ(b.qp.post_recv(1, rx), 0);
  ASSERT_EQ(a.qp.post_read(1, sink, rk, reinterpret_cast<std::uintptr_t>(src.data())), 0);
  ASSERT_EQ(a.qp.post_send(2, {}), 0);
  a.drain();  // the Send is handed out, the Read is not answered yet
  EXPECT_TRUE(a.poll_send().empty());
}

// Shuffled delivery: every batch of segments is delivered in a seeded random order.
// Placement happens as segments arrive; receive completions still come out by MSN.
class Shuffled : public ::testing::TestWithParam<std::uint32_t> {};

TEST_P(Shuffled, PlacementAsArrivedCompletionInOrder) {
  Side a{cfg(80)}, b{cfg(80)};
  ASSERT_EQ(a.qp.rts(), 0);
  ASSERT_EQ(b.qp.rts(), 0);
  constexpr int n = 12;
  auto src = pattern(n * 700, GetParam());
  std::vector<std::uint8_t> dst(n * 700, 0), wdst(4096, 0), rsrc = pattern(3000, 77), rdst(3000, 0);
  const stag_t ls = a.stags.register_mr(a.pd, src.data(), src.size(), 0);
  const stag_t ld = b.stags.register_mr(b.pd, dst.data(), dst.size(), access_local_write);
  const stag_t wk = b.stags.register_mr(b.pd, wdst.data(), wdst.size(), access_remote_write);
  const stag_t rk = b.stags.register_mr(b.pd, rsrc.data(), rsrc.size(), access_remote_read);
  const stag_t rl = a.stags.register_mr(a.pd, rdst.data(), rdst.size(), access_local_write);
  for (int i = 0; i < n; ++i) {
    Sge rx[] = {{dst.data() + i * 700, 350, ld}, {dst.data() + i * 700 + 350, 350, ld}};
    ASSERT_EQ(b.qp.post_recv(100 + i, rx), 0);
  }
  for (int i = 0; i < n; ++i) {
    const std::uint32_t len = 100 + 50 * static_cast<std::uint32_t>(i);
    Sge tx[] = {{src.data() + i * 700, len, ls}};
    ASSERT_EQ(a.qp.post_send(i, tx), 0);
  }
  Sge wtx[] = {{src.data(), 4096, ls}};
  ASSERT_EQ(a.qp.post_write(50, wtx, wk, reinterpret_cast<std::uintptr_t>(wdst.data())), 0);
  Sge sink[] = {{rdst.data(), 1000, rl}, {rdst.data() + 1000, 2000, rl}};
  ASSERT_EQ(a.qp.post_read(60, sink, rk, reinterpret_cast<std::uintptr_t>(rsrc.data())), 0);
  pump(a, b, nullptr, GetParam());
  ASSERT_EQ(b.qp.state(), QpState::rts);
  ASSERT_EQ(a.qp.state(), QpState::rts);
  auto rc = b.poll_recv();
  ASSERT_EQ(rc.size(), static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(rc[i].wr_id, 100u + i);
    EXPECT_EQ(rc[i].byte_len, 100u + 50u * i);
    EXPECT_TRUE(std::equal(src.begin() + i * 700, src.begin() + i * 700 + rc[i].byte_len,
                           dst.begin() + i * 700));
  }
  EXPECT_TRUE(std::equal(wdst.begin(), wdst.end(), src.begin()));
  EXPECT_EQ(rdst, rsrc);
  auto sc = a.poll_send();
  ASSERT_EQ(sc.size(), static_cast<std::size_t>(n + 2));
  for (int i = 0; i < n; ++i) EXPECT_EQ(sc[i].wr_id, static_cast<std::uint64_t>(i));
  EXPECT_EQ(sc[n].wr_id, 50u);
  EXPECT_EQ(sc[n + 1].wr_id, 60u);
}

INSTANTIATE_TEST_SUITE_P(Seeds, Shuffled, ::testing::Values(1u, 2u, 3u, 42u, 1234u));

TEST(QpLimits, OrdQueuesExtraReadsLocally) {
  QpConfig c = cfg();
  c.ord = 2;
  Side a{c}, b{cfg()};
  ASSERT_EQ(a.qp.rts(), 0);
  ASSERT_EQ(b.qp.rts(), 0);
  auto src = pattern(500, 5);
  std::vector<std::uint8_t> dst(500);
  const stag_t rk = b.stags.register_mr(b.pd, src.data(), src.size(), access_remote_read);
  const stag_t ld = a.stags.register_mr(a.pd, dst.data(), dst.size(), access_local_write);
  for (int i = 0; i < 5; ++i) {
    Sge sink[] = {{dst.data() + i * 100, 100, ld}};
    ASSERT_EQ(a.qp.post_read(i, sink, rk, reinterpret_cast<std::uintptr_t>(src.data()) + i * 100),
              0);
  }
  auto first = a.drain();
  EXPECT_EQ(first.size(), 2u);  // only ORD Read Requests go out
  EXPECT_EQ(a.qp.outstanding_reads(), 2u);
  EXPECT_FALSE(a.qp.tx_pending());
  for (auto& s : first) b.qp.on_segment(s);
  pump(a, b);
  EXPECT_EQ(dst, src);
  EXPECT_EQ(a.poll_send().size(), 5u);
}

TEST(QpLimits, QueueDepthsAndStates) {
  QpConfig c = cfg();
  c.sq_depth = 2;
  c.rq_depth = 1;
  Side a{c};
  std::vector<std::uint8_t> buf(16);
  const stag_t k = a.stags.register_mr(a.pd, buf.data(), buf.size(), access_local_write);
  Sge s[] = {{buf.data(), 16, k}};
  EXPECT_EQ(a.qp.post_send(1, s), ENOTCONN);  // idle
  EXPECT_EQ(a.qp.post_recv(1, s), 0);         // receives may be posted before RTS
  EXPECT_EQ(a.qp.post_recv(2, s), ENOMEM);
  ASSERT_EQ(a.qp.rts(), 0);
  EXPECT_EQ(a.qp.rts(), EINVAL);
  EXPECT_EQ(a.qp.post_send(1, s), 0);
  EXPECT_EQ(a.qp.post_send(2, s), 0);
  EXPECT_EQ(a.qp.post_send(3, s), ENOMEM);
  Sge bad[] = {{buf.data(), 17, k}};
  EXPECT_EQ(a.qp.post_recv(9, bad), ENOMEM);
  a.drain();
  a.poll_send();
  EXPECT_EQ(a.qp.post_send(3, bad), EINVAL);       // beyond the region
  EXPECT_EQ(a.qp.post_read(3, {}, 1, 0), EINVAL);  // no sink
  std::vector<Sge> many(max_sge + 1, Sge{buf.data(), 1, k});
  EXPECT_EQ(a.qp.post_send(3, many), EINVAL);
  Sge wrong_key[] = {{buf.data(), 16, k + 1}};
  EXPECT_EQ(a.qp.post_send(3, wrong_key), EINVAL);
  EXPECT_EQ(a.qp.close(), 0);
  EXPECT_EQ(a.qp.post_send(3, s), ENOTCONN);
  a.qp.llp_closed();
  EXPECT_EQ(a.qp.state(), QpState::idle);  // nothing was pending
  auto rc = a.poll_recv();
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].status, Status::flushed);
}

TEST(QpLimits, CompleteOnAck) {
  Side a{cfg()}, b{cfg()};
  ASSERT_EQ(a.qp.rts(), 0);
  ASSERT_EQ(b.qp.rts(), 0);
  a.qp.set_complete_on_ack(true);
  auto src = pattern(300, 6);
  std::vector<std::uint8_t> dst(300);
  const stag_t ls = a.stags.register_mr(a.pd, src.data(), src.size(), 0);
  const stag_t wk = b.stags.register_mr(b.pd, dst.data(), dst.size(), access_remote_write);
  Sge tx[] = {{src.data(), 300, ls}};
  ASSERT_EQ(a.qp.post_write(1, tx, wk, reinterpret_cast<std::uintptr_t>(dst.data())), 0);
  OutSegment s;
  std::uint64_t last = 0;
  while (a.qp.next_segment(s)) last = s.id;
  EXPECT_EQ(last, 4u);  // 300 octets at 86 per segment
  EXPECT_TRUE(a.poll_send().empty());
  a.qp.on_acked(last - 1);
  EXPECT_TRUE(a.poll_send().empty());
  a.qp.on_acked(last);
  EXPECT_EQ(a.poll_send().size(), 1u);
}

TEST(QpRtr, EachKindIsSwallowed) {
  for (RtrOp r : {RtrOp::send, RtrOp::write, RtrOp::read}) {
    Side a{cfg()}, b{cfg()};
    ASSERT_EQ(a.qp.rts(), 0);
    ASSERT_EQ(b.qp.rts(), 0);
    a.qp.send_rtr(r);
    b.qp.expect_rtr(r);
    // The responder has a Send queued but must hold it until the RTR arrives.
    std::vector<std::uint8_t> abuf(8), bbuf(8);
    const stag_t ak = a.stags.register_mr(a.pd, abuf.data(), 8, access_local_write);
    Sge arx[] = {{abuf.data(), 8, ak}};
    ASSERT_EQ(a.qp.post_recv(1, arx), 0);
    ASSERT_EQ(b.qp.post_send(2, {}), 0);
    EXPECT_FALSE(b.qp.tx_pending());
    EXPECT_TRUE(b.drain().empty());
    Wire w;
    pump(a, b, &w);
    ASSERT_FALSE(w.a_to_b.empty());
    EXPECT_EQ(w.a_to_b[0].size(), r == RtrOp::write ? 14u : r == RtrOp::send ? 18u : 46u);
    if (r == RtrOp::read) {
      ASSERT_GE(w.b_to_a.size(), 2u);
      EXPECT_EQ(w.b_to_a[0].size(), 14u);  // zero-length Read Response first
      EXPECT_EQ(w.b_to_a[0][1] & 0x0f, 2);
    }
    EXPECT_TRUE(b.poll_recv().empty()) << "RTR reached the application";
    EXPECT_TRUE(a.poll_send().empty()) << "RTR completed on the initiator";
    auto rc = a.poll_recv();
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].status, Status::success);
    EXPECT_EQ(a.qp.state(), QpState::rts);
    EXPECT_EQ(b.qp.state(), QpState::rts);
    // After a Send RTR the next Send uses MSN 2 and still lands in the first buffer.
    const stag_t bk = b.stags.register_mr(b.pd, bbuf.data(), 8, access_local_write);
    Sge brx[] = {{bbuf.data(), 8, bk}};
    ASSERT_EQ(b.qp.post_recv(3, brx), 0);
    ASSERT_EQ(a.qp.post_send(4, {}), 0);
    pump(a, b);
    EXPECT_EQ(b.poll_recv().size(), 1u);
    EXPECT_EQ(b.qp.state(), QpState::rts);
  }
}

}  // namespace
}  // namespace esock::ddp

namespace esock::ddp {
namespace {

// Read Requests held ahead of a missing lower MSN are among the k before a new one: the
// IRD check once counted them twice and refused a full window arriving shuffled.
TEST(QpShuffled, AFullOrdWindowOfReadRequestsInAnyOrderIsAccepted) {
  for (std::uint32_t seed = 1; seed <= 20; ++seed) {
    QpConfig c{};
    c.ird = c.ord = 8;
    testing::Side x{c}, y{c};
    ASSERT_EQ(x.qp.rts(), 0);
    ASSERT_EQ(y.qp.rts(), 0);
    auto src = testing::pattern(64 * 16, seed);
    std::vector<std::uint8_t> sink(src.size());
    const stag_t sk = y.stags.register_mr(y.pd, src.data(), src.size(), access_remote_read);
    const stag_t lk = x.stags.register_mr(x.pd, sink.data(), sink.size(), access_local_write);
    for (int i = 0; i < 64; ++i) {
      Sge s[] = {{sink.data() + i * 16, 16, lk}};
      ASSERT_EQ(x.qp.post_read(i, s, sk, reinterpret_cast<std::uintptr_t>(src.data()) + i * 16), 0);
    }
    testing::pump(x, y, nullptr, seed);
    EXPECT_EQ(y.qp.state(), QpState::rts) << seed;
    EXPECT_EQ(src, sink) << seed;
  }
}

}  // namespace
}  // namespace esock::ddp
