// Tripwires: the set on its own (arming, ranges, one-shot and persistent, coalescing,
// a message cut short), then fed by a Qp's RDMA Write path. Ordering under loss and
// reordering is tested where segments really arrive out of order (rnic and utcp tests).
#include <gtest/gtest.h>

#include "harness.h"

namespace esock::ddp {
namespace {

using namespace testing;

std::vector<TripwireEvent> poll_all(TripwireSet& t) {
  std::vector<TripwireEvent> v(TripwireSet::max_armed);
  v.resize(t.poll(v));
  return v;
}

TEST(TripwireSet, AOneShotTripwireFiresOnceForTheFirstWriteIntoItsRange) {
  TripwireSet t;
  const std::uint32_t id = t.arm(7, 1000, 100, 0xc0, false);
  ASSERT_NE(id, 0u);
  t.on_write_segment(7, 900, 100, true);   // ends right before the range
  t.on_write_segment(7, 1100, 50, true);   // starts right after it
  t.on_write_segment(8, 1000, 100, true);  // another region
  EXPECT_FALSE(t.pending());
  t.on_write_segment(7, 1090, 20, true);  // overlaps the last 10 octets
  t.on_write_segment(7, 1000, 10, true);  // spent: nothing more
  auto ev = poll_all(t);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].id, id);
  EXPECT_EQ(ev[0].cookie, 0xc0u);
  EXPECT_EQ(ev[0].to, 1090u);
  EXPECT_EQ(ev[0].length, 10u);
  EXPECT_EQ(ev[0].landings, 1u);
  EXPECT_TRUE(ev[0].disarmed);
  EXPECT_EQ(t.armed(), 0u);
  EXPECT_EQ(t.disarm(id), EINVAL);
}

TEST(TripwireSet, AWriteOfManySegmentsFiresOnceAtItsLastSegment) {
  TripwireSet t;
  t.arm(1, 0, 1000, 1, true);
  t.on_write_segment(1, 0, 300, false);
  t.on_write_segment(1, 300, 300, false);
  EXPECT_FALSE(t.pending());  // not delivered yet
  t.on_write_segment(1, 600, 300, true);
  auto ev = poll_all(t);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].to, 0u);
  EXPECT_EQ(ev[0].length, 900u);
  EXPECT_EQ(ev[0].landings, 1u);
  EXPECT_FALSE(ev[0].disarmed);
}

TEST(TripwireSet, APersistentTripwireCountsLandingsUntilPolled) {
  TripwireSet t;
  const std::uint32_t a = t.arm(1, 0, 100, 1, true);
  const std::uint32_t b = t.arm(1, 50, 100, 2, true);  // overlaps a
  t.on_write_segment(1, 60, 10, true);                 // both
  t.on_write_segment(1, 0, 10, true);                  // a
  t.on_write_segment(1, 120, 10, true);                // b
  auto ev = poll_all(t);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].id, a);  // fired first, listed first
  EXPECT_EQ(ev[0].landings, 2u);
  EXPECT_EQ(ev[0].to, 0u);
  EXPECT_EQ(ev[0].length, 70u);
  EXPECT_EQ(ev[1].id, b);
  EXPECT_EQ(ev[1].landings, 2u);
  EXPECT_EQ(ev[1].to, 60u);
  EXPECT_EQ(ev[1].length, 70u);
  EXPECT_TRUE(poll_all(t).empty());
  t.on_write_segment(1, 99, 2, true);
  EXPECT_EQ(poll_all(t).size(), 2u);  // still armed
}

TEST(TripwireSet, AZeroLengthWriteTouchesNothing) {
  TripwireSet t;
  t.arm(1, 0, 100, 1, false);
  t.on_write_segment(1, 50, 0, true);  // inside the range, but places nothing
  EXPECT_FALSE(t.pending());
  t.on_write_segment(1, 50, 1, true);
  EXPECT_TRUE(t.pending());
}

TEST(TripwireSet, IdsStayPositiveIntsAndSkipLiveOnes) {
  TripwireSet t;
  const std::uint32_t first = t.arm(1, 0, 8, 0, true);
  for (std::uint32_t i = 0; i < 5; ++i) t.disarm(t.arm(1, 0, 8, 0, false));
  EXPECT_EQ(first, 1u);
  EXPECT_LE(t.arm(1, 0, 8, 0, false), TripwireSet::max_id);
}

TEST(TripwireSet, AMessageCutShortFiresNothing) {
  TripwireSet t;
  t.arm(1, 0, 100, 1, false);
  t.on_write_segment(1, 0, 50, false);
  t.abort_message();
  t.on_write_segment(1, 500, 10, true);  // a later message elsewhere
  EXPECT_FALSE(t.pending());
  t.on_write_segment(1, 0, 1, true);
  EXPECT_EQ(poll_all(t).size(), 1u);
}

TEST(TripwireSet, DisarmDropsThePendingEventAndRegionsDisarmTheirs) {
  TripwireSet t;
  const std::uint32_t a = t.arm(1, 0, 10, 1, true);
  t.arm(2, 0, 10, 2, true);
  t.arm(2, 100, 10, 3, true);
  t.on_write_segment(1, 0, 10, true);
  ASSERT_TRUE(t.pending());
  EXPECT_EQ(t.disarm(a), 0);
  EXPECT_FALSE(t.pending());
  t.on_write_segment(2, 0, 200, true);
  t.disarm_region(2);
  EXPECT_FALSE(t.pending());
  EXPECT_EQ(t.armed(), 0u);
}

TEST(TripwireSet, ArmingIsBoundedAndRefusesEmptyOrWrappingRanges) {
  TripwireSet t;
  EXPECT_EQ(t.arm(1, 0, 0, 0, false), 0u);
  EXPECT_EQ(t.arm(1, UINT64_MAX - 5, 10, 0, false), 0u);
  for (std::size_t i = 0; i < TripwireSet::max_armed; ++i)
    ASSERT_NE(t.arm(1, i * 8, 8, i, true), 0u);
  EXPECT_EQ(t.arm(1, 0, 8, 0, true), 0u);
  // Every one fires once for a Write over all of them: the queue holds one event each.
  t.on_write_segment(1, 0, TripwireSet::max_armed * 8, true);
  t.on_write_segment(1, 0, TripwireSet::max_armed * 8, true);
  auto ev = poll_all(t);
  ASSERT_EQ(ev.size(), TripwireSet::max_armed);
  for (const auto& e : ev) EXPECT_EQ(e.landings, 2u);
}

// The Qp feeds it: only checked Writes, only RDMA Writes (not Read Responses), and a Write
// whose later segment is bad fires nothing.
struct QpTrip : ::testing::Test {
  Side a{QpConfig{.mulpdu = 100}}, b{QpConfig{.mulpdu = 100}};
  TripwireSet trips;
  std::vector<std::uint8_t> mem = std::vector<std::uint8_t>(4096);
  std::vector<std::uint8_t> src = pattern(4096, 4);
  stag_t mk = b.stags.register_mr(b.pd, mem.data(), mem.size(), access_remote_write);
  stag_t sk = a.stags.register_mr(a.pd, src.data(), src.size(), 0);
  std::uint64_t base = reinterpret_cast<std::uintptr_t>(mem.data());
  void SetUp() override {
    ASSERT_EQ(a.qp.rts(), 0);
    ASSERT_EQ(b.qp.rts(), 0);
    b.qp.set_tripwires(&trips);
  }
  void write(std::uint64_t wr, std::uint32_t off, std::uint32_t len) {
    Sge s[] = {{src.data() + off, len, sk}};
    ASSERT_EQ(a.qp.post_write(wr, s, mk, base + off), 0);
  }
};

TEST_F(QpTrip, FiresInStreamOrderAfterTheOctetsAreThere) {
  const std::uint32_t head = trips.arm(mk, base + 4000, 8, 1, true);  // a ring's head index
  const std::uint32_t slot = trips.arm(mk, base, 1000, 2, true);      // its slots
  write(1, 0, 1000);                                                  // 11 segments at MULPDU 100
  write(2, 4000, 8);                                                  // then the head
  write(3, 2000, 500);                                                // a Write nobody armed
  pump(a, b);
  auto ev = poll_all(trips);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].id, slot);
  EXPECT_EQ(ev[0].length, 1000u);
  EXPECT_EQ(ev[1].id, head);
  EXPECT_TRUE(std::equal(src.begin(), src.begin() + 1000, mem.begin()));
}

TEST_F(QpTrip, AWriteWhoseLastSegmentFailsItsCheckFiresNothing) {
  trips.arm(mk, base, 4096, 1, true);
  DdpHeader h = write_hdr(mk, base);
  h.last = false;
  b.qp.on_segment(seg(h, Bytes(64, 1)));
  DdpHeader bad = write_hdr(mk, base + 4090);  // runs past the region
  b.qp.on_segment(seg(bad, Bytes(64, 1)));
  EXPECT_EQ(b.qp.terminate_cause(), term::ddp_base_bounds);
  EXPECT_FALSE(trips.pending());
}

TEST_F(QpTrip, ReadResponsesIntoTheRangeDoNotFire) {
  std::vector<std::uint8_t> remote = pattern(256, 5);
  const stag_t rk = a.stags.register_mr(a.pd, remote.data(), remote.size(), access_remote_read);
  const stag_t lk = b.stags.register_mr(b.pd, mem.data(), mem.size(), access_local_write);
  trips.arm(mk, base, 4096, 1, true);
  Sge sink[] = {{mem.data(), 256, lk}};
  ASSERT_EQ(b.qp.post_read(1, sink, rk, reinterpret_cast<std::uintptr_t>(remote.data())), 0);
  pump(a, b);
  EXPECT_TRUE(std::equal(remote.begin(), remote.end(), mem.begin()));
  EXPECT_FALSE(trips.pending());
}

}  // namespace
}  // namespace esock::ddp
