// Tripwires, RFC 7306 atomics and Immediate Data over esock's own TCP stack with seeded
// loss, reordering and duplication: segments really arrive ahead of holes and are placed
// early (lib/ddp README), so these check the ordering promises where they can break.
#include <gtest/gtest.h>

#include <cstring>

#include "utcp_pair.h"

namespace esock::utcp::test {
namespace {

PairConfig faulty(std::uint64_t seed) {
  PairConfig pc{};
  pc.opts.mpa.markers = mpa::Policy::require;
  pc.opts.mpa.crc = mpa::Policy::require;
  pc.faults_a.seed = seed;
  pc.faults_a.tx.loss = 0.02;
  pc.faults_a.tx.reorder = 0.03;
  pc.faults_a.tx.reorder_frames = 3;
  pc.faults_a.tx.duplicate = 0.01;
  pc.faults_b.seed = seed + 50;
  pc.faults_b.tx.loss = 0.02;
  return pc;
}

class Rfc7306Faults : public ::testing::TestWithParam<int> {};

// 64 slots written in order by 64 RDMA Writes of several segments each, one one-shot
// tripwire per slot, unarmed gaps between the slots written too. Each event must come in
// slot order, once, and find its slot's octets complete at the moment it is polled.
TEST_P(Rfc7306Faults, TripwiresFireOnceInOrderOnlyAfterTheWriteIsInPlace) {
  UtcpPair p(faulty(static_cast<std::uint64_t>(GetParam())));
  ASSERT_TRUE(p.connect());
  constexpr std::size_t slot = 6000, gap = 1000, n = 64, stride = slot + gap;
  auto src = UtcpPair::region(p.ctx_a, stride * n, 11, true);
  auto ring = UtcpPair::region(p.ctx_b, stride * n, 0, false);
  ddp::TripwireSet& trips = p.eb->engine().tripwires();
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_NE(trips.arm(ring.stag, ring.to(i * stride), slot, i, false), 0u);
  for (std::size_t i = 0; i < n; ++i) {
    const ddp::Sge s[] = {src.sge(i * stride, slot)};
    ASSERT_EQ(p.ea->post_write(2 * i, s, ring.stag, ring.to(i * stride)), 0);
    const ddp::Sge g[] = {src.sge(i * stride + slot, gap)};  // into the gap: no tripwire
    ASSERT_EQ(p.ea->post_write(2 * i + 1, g, ring.stag, ring.to(i * stride + slot)), 0);
  }
  std::size_t next = 0;
  ddp::TripwireEvent ev[8];
  const bool done = p.run_until([&] {
    for (std::size_t k; (k = trips.poll(ev)) > 0;) {
      for (std::size_t j = 0; j < k; ++j) {
        EXPECT_EQ(ev[j].cookie, next) << "out of order";
        EXPECT_EQ(ev[j].landings, 1u);
        EXPECT_TRUE(ev[j].disarmed);
        EXPECT_EQ(ev[j].to, ring.to(ev[j].cookie * stride));
        EXPECT_EQ(ev[j].length, slot);
        const std::size_t off = ev[j].cookie * stride;
        EXPECT_EQ(std::memcmp(ring.mem.data() + off, src.mem.data() + off, slot), 0)
            << "slot " << ev[j].cookie << " fired before its octets were all placed";
        next = ev[j].cookie + 1;
      }
    }
    return next == n;
  });
  ASSERT_TRUE(done) << next << " of " << n;
  p.run_until([&] { return false; }, 50ms);  // anything late would show now
  EXPECT_EQ(trips.poll(ev), 0u);
  EXPECT_EQ(trips.armed(), 0u);
  EXPECT_GT(p.eb->stats().ooo_segments_placed, 0u) << "no segment was placed early: a weak test";
  EXPECT_EQ(std::memcmp(ring.mem.data(), src.mem.data(), ring.mem.size()), 0);
}

// A persistent tripwire counts every landing exactly once, however the events coalesce.
TEST_P(Rfc7306Faults, APersistentTripwireCountsEveryWrite) {
  UtcpPair p(faulty(static_cast<std::uint64_t>(GetParam()) + 10));
  ASSERT_TRUE(p.connect());
  auto src = UtcpPair::region(p.ctx_a, 64, 3, true);
  auto head = UtcpPair::region(p.ctx_b, 64, 0, false);
  ddp::TripwireSet& trips = p.eb->engine().tripwires();
  ASSERT_NE(trips.arm(head.stag, head.to(), 8, 7, true), 0u);
  constexpr int writes = 500;
  int posted = 0, done = 0;
  std::uint64_t landings = 0;
  ddp::Completion c[16];
  ddp::TripwireEvent ev[4];
  p.run_until([&] {
    while (posted < writes && posted - done < 64) {
      const ddp::Sge s[] = {src.sge(0, 8)};
      if (p.ea->post_write(posted, s, head.stag, head.to()) != 0) break;
      ++posted;
    }
    for (std::size_t k; (k = p.ea->poll_send_cq(c)) > 0;) done += static_cast<int>(k);
    for (std::size_t k; (k = trips.poll(ev)) > 0;)
      for (std::size_t j = 0; j < k; ++j) landings += ev[j].landings;
    return landings == writes;
  });
  EXPECT_EQ(landings, static_cast<std::uint64_t>(writes));
}

// FetchAdd from the initiator under faults: the exact total, every original value once.
TEST_P(Rfc7306Faults, AtomicsAndImmediateDataSurviveLossAndReordering) {
  UtcpPair p(faulty(static_cast<std::uint64_t>(GetParam()) + 20));
  ASSERT_TRUE(p.connect());
  p.ea->engine().qp().set_rdmap_ext(true);
  p.eb->engine().qp().set_rdmap_ext(true);
  alignas(8) std::uint64_t counter = 0;
  const ddp::stag_t ck = p.ctx_b.reg_mr(&counter, 8, ddp::access_remote_atomic);
  constexpr int n = 200;  // receives: the queue pair takes 256
  std::vector<std::uint64_t> out(n);
  const ddp::stag_t ok = p.ctx_a.reg_mr(out.data(), n * 8, ddp::access_local_write);
  auto rx = UtcpPair::region(p.ctx_b, 8 * n, 0, false);
  for (int i = 0; i < n; ++i) {
    const ddp::Sge r[] = {rx.sge(8 * i, 8)};
    ASSERT_EQ(p.eb->post_recv(i, r), 0);
  }
  ddp::AtomicRequest add;
  add.stag = ck;
  add.to = reinterpret_cast<std::uintptr_t>(&counter);
  add.add_swap = 5;
  int posted = 0, done = 0, imms = 0;
  ddp::Completion c[32];
  rnic::Engine& ea = p.ea->engine();
  const bool finished = p.run_until([&] {
    // Two work requests per round, posted only with room for both (the queue holds 256).
    while (posted < n && 2 * posted - done < 250) {
      const ddp::Sge r{reinterpret_cast<std::uint8_t*>(&out[posted]), 8, ok};
      if (ea.posted(ea.qp().post_atomic(posted, r, add)) != 0 ||
          ea.posted(ea.qp().post_send_imm(1000 + posted, posted)) != 0) {
        ADD_FAILURE() << "a post failed with room in the queue";
        return true;
      }
      ++posted;
    }
    for (std::size_t k; (k = p.ea->poll_send_cq(c)) > 0;) done += static_cast<int>(k);
    for (std::size_t k; (k = p.eb->poll_recv_cq(c)) > 0;) {
      for (std::size_t j = 0; j < k; ++j) {
        EXPECT_EQ(c[j].opcode, ddp::Opcode::recv_imm);
        EXPECT_EQ(c[j].imm, static_cast<std::uint64_t>(imms)) << "immediate data out of order";
        ++imms;
      }
    }
    return done == 2 * n && imms == n;
  });
  ASSERT_TRUE(finished) << done << " " << imms;
  EXPECT_EQ(counter, 5u * n);
  std::sort(out.begin(), out.end());
  for (int i = 0; i < n; ++i) EXPECT_EQ(out[i], 5u * i);
}

INSTANTIATE_TEST_SUITE_P(Seeds, Rfc7306Faults, ::testing::Values(1, 2, 3));

}  // namespace
}  // namespace esock::utcp::test
