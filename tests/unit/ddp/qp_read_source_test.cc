// The Data Source side of an RDMA Read (RFC 5040 section 4.4): a Read Response is sourced
// from memory its owner may take back mid-response (issue 20, item 1: an ESTP writer
// released by a hostile peer's early RDMADONE, esock_dereg_mr). Every segment re-checks
// its source, and reads_from() tells the owner when the transport no longer holds octets
// sent from it by reference.
#include <gtest/gtest.h>

#include <memory>

#include "harness.h"

namespace esock::ddp {
namespace {

using namespace testing;

constexpr std::size_t region_len = 1024;

QpConfig cfg() {
  QpConfig c{};
  c.mulpdu = 200;  // a 1024-octet response takes 6 segments
  return c;
}

struct ReadSource : ::testing::Test {
  Side b{cfg()};
  std::unique_ptr<std::uint8_t[]> mem = std::make_unique<std::uint8_t[]>(region_len);
  std::uint64_t base = reinterpret_cast<std::uintptr_t>(mem.get());
  stag_t rk = b.stags.register_mr(b.pd, mem.get(), region_len, access_remote_read);
  Bytes request = rr_seg(1, ReadRequest{0x1234, 0x10000, region_len, rk, base});

  void SetUp() override {
    ASSERT_NE(rk, 0u);
    ASSERT_EQ(b.qp.rts(), 0);
    std::fill_n(mem.get(), region_len, std::uint8_t{0x5a});
  }
  // The next segment must be the Terminate for a source that went away, with the Read
  // Request's headers copied (RFC 5040 section 4.8: M, D and R).
  void expect_source_terminate(TerminateCause c) {
    OutSegment o;
    ASSERT_TRUE(b.qp.next_segment(o));
    SegmentView v;
    ASSERT_EQ(SegmentView::make(Bytes(o.hdr.begin(), o.hdr.begin() + o.hdr_len), v), WireError::ok);
    ASSERT_EQ(v.hdr().opcode, RdmapOpcode::terminate);
    Terminate t;
    ASSERT_EQ(parse(o.payload, t), WireError::ok);
    EXPECT_EQ(t.cause, c);
    EXPECT_TRUE(t.m && t.d && t.r);
    EXPECT_EQ(t.ddp_seg_len, request.size());
    EXPECT_TRUE(std::equal(t.rdma_hdr.begin(), t.rdma_hdr.end(),
                           request.begin() + static_cast<std::ptrdiff_t>(untagged_hdr_len)));
    EXPECT_EQ(b.qp.state(), QpState::error);
    EXPECT_FALSE(b.qp.next_segment(o));
  }
};

TEST_F(ReadSource, DeregisteredMidResponseEndsWithTerminateAndReadsNoMore) {
  b.qp.on_segment(request);
  OutSegment o;
  ASSERT_TRUE(b.qp.next_segment(o));
  ASSERT_EQ(o.payload.size(), cfg().mulpdu - tagged_hdr_len);
  EXPECT_EQ(o.payload[0], 0x5a);
  // The owner takes the memory back (as a writer released by RDMADONE does) and frees it:
  // before the fix the next segments were sourced from the freed buffer (heap use after free).
  ASSERT_EQ(b.stags.deregister(rk), 0);
  mem.reset();
  expect_source_terminate(term::rdmap_invalid_stag);
  EXPECT_FALSE(b.qp.reads_from(rk));
}

TEST_F(ReadSource, InvalidatedMidResponseEndsWithTerminate) {
  b.qp.on_segment(request);
  OutSegment o;
  ASSERT_TRUE(b.qp.next_segment(o));
  ASSERT_EQ(b.stags.invalidate(rk), 0);
  expect_source_terminate(term::rdmap_invalid_stag);
}

TEST_F(ReadSource, DeregisteredAndReusedIndexIsNotTheOldSource) {
  // The index comes back with a new key: the response must not read the new region.
  b.qp.on_segment(request);
  ASSERT_EQ(b.stags.deregister(rk), 0);
  std::vector<std::uint8_t> other(region_len, 0x77);
  const stag_t again = b.stags.register_mr(b.pd, other.data(), other.size(), access_remote_read);
  ASSERT_EQ(again >> 8, rk >> 8);
  ASSERT_NE(again, rk);
  expect_source_terminate(term::rdmap_invalid_stag);
}

TEST_F(ReadSource, ATransportThatCopiesHoldsNothing) {
  // Without complete_on_ack every segment is copied when handed out; what is not handed out
  // yet re-checks its source, so nothing holds the memory once it is deregistered.
  b.qp.on_segment(request);
  OutSegment o;
  std::size_t segments = 0;
  while (b.qp.next_segment(o)) {
    ++segments;
    EXPECT_FALSE(b.qp.reads_from(rk)) << segments;
  }
  EXPECT_EQ(segments, 6u);
}

TEST_F(ReadSource, WithCompleteOnAckTheSourceIsReadUntilTheTransportReleasesIt) {
  b.qp.set_complete_on_ack(true);
  b.qp.on_segment(request);
  OutSegment o;
  std::uint64_t last = 0;
  while (b.qp.next_segment(o)) last = o.id;
  ASSERT_GT(last, 1u);
  // Every segment handed out, none acknowledged: TCP may still retransmit from the region.
  EXPECT_TRUE(b.qp.reads_from(rk));
  b.qp.on_acked(last - 1);
  EXPECT_TRUE(b.qp.reads_from(rk));
  b.qp.on_acked(last);
  EXPECT_FALSE(b.qp.reads_from(rk));
}

TEST_F(ReadSource, SentOctetsStayInUseAfterATerminateUntilReleased) {
  // A Terminate flushes the queues but not what the transport already holds.
  b.qp.set_complete_on_ack(true);
  b.qp.on_segment(request);
  OutSegment o;
  std::uint64_t last = 0;
  while (b.qp.next_segment(o)) last = o.id;
  b.qp.llp_error(term::llp_crc_error);
  while (b.qp.next_segment(o)) {
  }
  EXPECT_TRUE(b.qp.reads_from(rk));
  b.qp.on_acked(last + 1);
  EXPECT_FALSE(b.qp.reads_from(rk));
}

// Copy-on-write (AZ-SDP): mid-response the owner moves the region to a copy. The next
// segments come from the copy at the same Tagged Offsets, and reads_from(stag, held) says
// when the transport let go of the segments sent from the old memory, apart from the
// copy's (which reads_from(stag) still counts).
TEST_F(ReadSource, AMovedRegionIsAnsweredFromTheCopyAndTheOldMemoryIsReleasedAlone) {
  b.qp.set_complete_on_ack(true);
  b.qp.on_segment(request);
  OutSegment o;
  ASSERT_TRUE(b.qp.next_segment(o));
  ASSERT_TRUE(b.qp.next_segment(o));
  const std::uint64_t second = o.id;
  EXPECT_EQ(o.payload[0], 0x5a);
  std::vector<std::uint8_t> copy(region_len, 0x33);  // what the copy holds
  ASSERT_EQ(b.stags.move(rk, copy.data()), 0);
  const std::uint64_t held = b.qp.seal_sourced(rk);
  EXPECT_EQ(held, second);
  std::fill_n(mem.get(), region_len, std::uint8_t{0});  // the application writes its buffer
  std::size_t from_copy = 0;
  std::uint64_t last = 0;
  while (b.qp.next_segment(o)) {
    EXPECT_EQ(o.payload.data(), copy.data() + 2 * (cfg().mulpdu - tagged_hdr_len) +
                                    from_copy * (cfg().mulpdu - tagged_hdr_len));
    EXPECT_EQ(o.payload[0], 0x33);
    ++from_copy;
    last = o.id;
  }
  EXPECT_EQ(from_copy, 4u);
  EXPECT_TRUE(b.qp.reads_from(rk, held));
  b.qp.on_acked(second - 1);
  EXPECT_TRUE(b.qp.reads_from(rk, held));
  b.qp.on_acked(second);
  EXPECT_FALSE(b.qp.reads_from(rk, held)) << "the old memory is the application's again";
  EXPECT_TRUE(b.qp.reads_from(rk)) << "the copy is still read";
  b.qp.on_acked(last);
  EXPECT_FALSE(b.qp.reads_from(rk));
}

TEST_F(ReadSource, AMoveBeforeAnySegmentHoldsNothingOfTheOldMemory) {
  b.qp.set_complete_on_ack(true);
  std::vector<std::uint8_t> copy(region_len, 0x33);
  ASSERT_EQ(b.stags.move(rk, copy.data()), 0);
  EXPECT_EQ(b.qp.seal_sourced(rk), 0u);
  EXPECT_FALSE(b.qp.reads_from(rk, 0));
  mem.reset();  // gone: every segment comes from the copy
  b.qp.on_segment(request);
  OutSegment o;
  std::size_t n = 0;
  while (b.qp.next_segment(o)) n += o.payload.size();
  EXPECT_EQ(n, region_len);
  EXPECT_EQ(b.stags.move(0x12345, copy.data()), EINVAL);
  EXPECT_EQ(b.stags.move(rk, nullptr), EINVAL);
}

// The same for the send queue: a Send or Write sourced from a region its owner took back
// after posting (RAWMODE close, esock_dereg_mr) is cut short, never read from freed memory.
TEST_F(ReadSource, ASendFromADeregisteredRegionFailsLocallyAndReadsNothing) {
  const stag_t lk = b.stags.register_mr(b.pd, mem.get(), region_len, access_local_write);
  const Sge sge{mem.get(), region_len, lk};
  ASSERT_EQ(b.qp.post_send(7, {&sge, 1}), 0);
  OutSegment o;
  ASSERT_TRUE(b.qp.next_segment(o));  // the first segment went out
  ASSERT_EQ(b.stags.deregister(lk), 0);
  mem.reset();
  ASSERT_TRUE(b.qp.next_segment(o));
  Terminate t;
  ASSERT_EQ(parse(o.payload, t), WireError::ok);
  EXPECT_EQ(t.cause, term::rdmap_catastrophic);
  EXPECT_EQ(b.qp.state(), QpState::error);
  const auto c = b.poll_send();
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].wr_id, 7u);
  EXPECT_EQ(c[0].status, Status::local_protection_error);
}

TEST_F(ReadSource, ASendByReferenceIsReadUntilReleased) {
  b.qp.set_complete_on_ack(true);
  const stag_t lk = b.stags.register_mr(b.pd, mem.get(), region_len, access_local_write);
  const Sge sge{mem.get(), region_len, lk};
  ASSERT_EQ(b.qp.post_send(7, {&sge, 1}), 0);
  OutSegment o;
  std::uint64_t last = 0;
  while (b.qp.next_segment(o)) last = o.id;
  EXPECT_TRUE(b.qp.reads_from(lk));
  EXPECT_FALSE(b.qp.reads_from(rk));
  b.qp.on_acked(last);
  EXPECT_FALSE(b.qp.reads_from(lk));
}

TEST_F(ReadSource, ReadsFromIsPerRegion) {
  b.qp.set_complete_on_ack(true);
  std::vector<std::uint8_t> other(64);
  const stag_t ok = b.stags.register_mr(b.pd, other.data(), other.size(), access_remote_read);
  b.qp.on_segment(request);
  OutSegment o;
  while (b.qp.next_segment(o)) {
  }
  EXPECT_TRUE(b.qp.reads_from(rk));
  EXPECT_FALSE(b.qp.reads_from(ok));
}

}  // namespace
}  // namespace esock::ddp
