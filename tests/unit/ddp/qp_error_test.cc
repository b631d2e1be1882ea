// Every Terminate the engine raises: crafted segments into a responder, asserting the
// exact {layer, type, code} and header copy on the wire, the QP state and completions.
#include <gtest/gtest.h>

#include "harness.h"

namespace esock::ddp {
namespace {

using namespace testing;

QpConfig cfg(std::uint16_t ird = 4) {
  QpConfig c{};
  c.mulpdu = 200;
  c.ird = ird;
  return c;
}

struct Responder : ::testing::Test {
  Side b{cfg()};
  std::vector<std::uint8_t> mem = std::vector<std::uint8_t>(1024);
  std::vector<std::uint8_t> rx = std::vector<std::uint8_t>(64);
  std::uint64_t base = reinterpret_cast<std::uintptr_t>(mem.data());
  stag_t wk = b.stags.register_mr(b.pd, mem.data(), mem.size(), access_remote_write);
  stag_t rk = b.stags.register_mr(b.pd, mem.data(), mem.size(), access_remote_read);
  stag_t lk = b.stags.register_mr(b.pd, rx.data(), rx.size(), access_local_write);
  Bytes payload = Bytes(32, 0xab);

  void SetUp() override { ASSERT_EQ(b.qp.rts(), 0); }

  // The responder must have sent exactly one Terminate (RFC 5040 section 4.8: untagged,
  // QN 2, MSN 1, MO 0, L set) carrying `c`; returns its body.
  Terminate expect_terminate(TerminateCause c) {
    EXPECT_EQ(b.qp.state(), QpState::terminate);
    auto out = b.drain();
    EXPECT_EQ(b.qp.state(), QpState::error);
    EXPECT_EQ(out.size(), 1u);
    Terminate t;
    if (out.empty()) return t;
    SegmentView v;
    EXPECT_EQ(SegmentView::make(out.back(), v), WireError::ok);
    EXPECT_EQ(v.hdr().opcode, RdmapOpcode::terminate);
    EXPECT_EQ(v.hdr().qn, qn_terminate);
    EXPECT_EQ(v.hdr().msn, 1u);
    EXPECT_EQ(v.hdr().mo, 0u);
    EXPECT_TRUE(v.hdr().last);
    EXPECT_EQ(parse(v.payload(), t), WireError::ok);
    EXPECT_EQ(t.cause, c);
    EXPECT_EQ(b.qp.terminate_cause(), c);
    EXPECT_FALSE(b.qp.terminate_received());
    return t;
  }
  // Header copy: M and D with the offending segment's length and DDP header.
  void expect_copy(const Terminate& t, const Bytes& offending, bool r = false) {
    EXPECT_TRUE(t.m);
    EXPECT_TRUE(t.d);
    EXPECT_EQ(t.r, r);
    EXPECT_EQ(t.ddp_seg_len, offending.size());
    ASSERT_EQ(t.ddp_hdr_len, (offending[0] & 0x80) ? tagged_hdr_len : untagged_hdr_len);
    EXPECT_TRUE(
        std::equal(t.ddp_hdr.begin(), t.ddp_hdr.begin() + t.ddp_hdr_len, offending.begin()));
    if (r) {
      EXPECT_TRUE(
          std::equal(t.rdma_hdr.begin(), t.rdma_hdr.end(), offending.begin() + untagged_hdr_len));
    }
  }
  void feed_expect(const Bytes& s, TerminateCause c, bool r = false) {
    b.qp.on_segment(s);
    expect_copy(expect_terminate(c), s, r);
  }
};

TEST_F(Responder, WriteInvalidStag) {
  feed_expect(seg(write_hdr(wk ^ 0x80, base), payload), term::ddp_invalid_stag);
}

TEST_F(Responder, WriteWrongPd) {
  const std::uint32_t other = b.stags.alloc_pd();
  const stag_t s = b.stags.register_mr(other, mem.data(), mem.size(), access_remote_write);
  feed_expect(seg(write_hdr(s, base), payload), term::ddp_stag_not_associated);
}

TEST_F(Responder, WriteAccessRights) {
  feed_expect(seg(write_hdr(rk, base), payload), term::rdmap_access_rights);
}

TEST_F(Responder, WriteBounds) {
  feed_expect(seg(write_hdr(wk, base + 1024 - 31), payload), term::ddp_base_bounds);
}

TEST_F(Responder, WriteBelowBase) {
  feed_expect(seg(write_hdr(wk, base - 1), payload), term::ddp_base_bounds);
}

TEST_F(Responder, WriteToWrap) {
  feed_expect(seg(write_hdr(wk, UINT64_MAX - 8), payload), term::ddp_to_wrap);
}

TEST_F(Responder, ZeroLengthWriteIsNotValidated) {
  b.qp.on_segment(seg(write_hdr(0xdead00, 0)));
  EXPECT_EQ(b.qp.state(), QpState::rts);
}

TEST_F(Responder, InvalidQueueNumber) {
  DdpHeader h = send_hdr(1);
  h.qn = 3;
  feed_expect(seg(h, payload), term::ddp_invalid_qn);
}

TEST_F(Responder, SendMsnOutOfRange) {
  Sge s[] = {{rx.data(), 64, lk}};
  ASSERT_EQ(b.qp.post_recv(1, s), 0);
  feed_expect(seg(send_hdr(0), payload), term::ddp_msn_range);  // MSN 0: before MSN 1
  auto rc = b.poll_recv();
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].status, Status::flushed);
}

TEST_F(Responder, SendNoPostedBuffer) {
  feed_expect(seg(send_hdr(1), payload), term::ddp_msn_no_buffer);
}

TEST_F(Responder, SendBeyondPostedBuffers) {
  Sge s[] = {{rx.data(), 64, lk}};
  ASSERT_EQ(b.qp.post_recv(1, s), 0);
  feed_expect(seg(send_hdr(2), payload), term::ddp_msn_no_buffer);
}

TEST_F(Responder, SendTooLongForBuffer) {
  Sge s[] = {{rx.data(), 16, lk}, {rx.data() + 16, 8, lk}};
  ASSERT_EQ(b.qp.post_recv(1, s), 0);
  ASSERT_EQ(b.qp.post_recv(2, s), 0);
  feed_expect(seg(send_hdr(1), payload), term::ddp_message_too_long);
  auto rc = b.poll_recv();
  ASSERT_EQ(rc.size(), 2u);
  EXPECT_EQ(rc[0].status, Status::local_length_error);
  EXPECT_EQ(rc[1].status, Status::flushed);
}

TEST_F(Responder, SendInvalidMessageOffset) {
  Sge s[] = {{rx.data(), 64, lk}};
  ASSERT_EQ(b.qp.post_recv(1, s), 0);
  b.qp.on_segment(seg(send_hdr(1, 32, true), bytes_view(payload).first(8)));  // ends at 40
  EXPECT_EQ(b.qp.state(), QpState::rts);
  feed_expect(seg(send_hdr(1, 40, false), bytes_view(payload).first(8)), term::ddp_invalid_mo);
}

// Hardening (issue 20, item 6): `placed += len` counted a duplicated segment twice, so a
// duplicate of [0, 8) and an empty Last at MO 16 completed a 16-octet message whose
// octets 8..16 were never sent (stale buffer contents delivered as data).
TEST_F(Responder, DuplicateSendSegmentIsInvalidMoNotACompletedMessage) {
  Sge s[] = {{rx.data(), 64, lk}};
  ASSERT_EQ(b.qp.post_recv(1, s), 0);
  b.qp.on_segment(seg(send_hdr(1, 0, false), bytes_view(payload).first(8)));
  EXPECT_EQ(b.qp.state(), QpState::rts);
  feed_expect(seg(send_hdr(1, 0, false), bytes_view(payload).first(8)), term::ddp_invalid_mo);
  b.qp.on_segment(seg(send_hdr(1, 16, true), {}));
  auto rc = b.poll_recv();
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_NE(rc[0].status, Status::success);  // never completed as a message
}

TEST_F(Responder, OverlappingSendSegmentIsInvalidMo) {
  Sge s[] = {{rx.data(), 64, lk}};
  ASSERT_EQ(b.qp.post_recv(1, s), 0);
  b.qp.on_segment(seg(send_hdr(1, 8, false), bytes_view(payload).first(8)));   // [8, 16)
  b.qp.on_segment(seg(send_hdr(1, 20, false), bytes_view(payload).first(4)));  // [20, 24)
  EXPECT_EQ(b.qp.state(), QpState::rts);
  feed_expect(seg(send_hdr(1, 12, false), bytes_view(payload).first(10)), term::ddp_invalid_mo);
}

// Hardening (issue 20, item 6): a duplicated Read Response segment counted twice too: the
// Read then never completed (placed passed its size) or completed with a hole.
TEST_F(Responder, DuplicateReadResponseSegmentIsRefused) {
  std::vector<std::uint8_t> sink(64);
  const stag_t sk = b.stags.register_mr(b.pd, sink.data(), sink.size(), access_local_write);
  Sge sg[] = {{sink.data(), 64, sk}};
  ASSERT_EQ(b.qp.post_read(1, sg, 0x4242, 0x1000), 0);
  b.drain();  // the Read Request
  DdpHeader h = write_hdr(sk, reinterpret_cast<std::uintptr_t>(sink.data()));
  h.opcode = RdmapOpcode::read_response;
  h.last = false;  // the first half of the 64 octets
  b.qp.on_segment(seg(h, bytes_view(payload).first(32)));
  ASSERT_EQ(b.qp.state(), QpState::rts);
  feed_expect(seg(h, bytes_view(payload).first(32)), term::ddp_base_bounds);
}

TEST_F(Responder, UnknownOpcode) {
  Bytes s = seg(send_hdr(1), payload);
  s[1] = 0x48;  // RV 1, opcode 8
  feed_expect(s, term::rdmap_unexpected_opcode);
}

TEST_F(Responder, TaggedSendIsUnexpectedOpcode) {
  Bytes s = seg(write_hdr(wk, base), payload);
  s[1] = 0x43;
  feed_expect(s, term::rdmap_unexpected_opcode);
}

TEST_F(Responder, ReadRequestOnSendQueueIsUnexpectedOpcode) {
  DdpHeader h = send_hdr(1);
  h.opcode = RdmapOpcode::read_request;
  Bytes body(read_request_len);
  feed_expect(seg(h, body), term::rdmap_unexpected_opcode, true);
}

TEST_F(Responder, ReadResponseWithoutRequest) {
  DdpHeader h = write_hdr(wk, base);
  h.opcode = RdmapOpcode::read_response;
  feed_expect(seg(h, payload), term::rdmap_unexpected_opcode);
}

TEST_F(Responder, BadDdpVersionTaggedAndUntagged) {
  Bytes t = seg(write_hdr(wk, base), payload);
  t[0] = static_cast<std::uint8_t>((t[0] & ~3) | 2);
  feed_expect(t, term::ddp_tagged_invalid_version);
}

TEST_F(Responder, BadDdpVersionUntagged) {
  Bytes u = seg(send_hdr(1), payload);
  u[0] = static_cast<std::uint8_t>(u[0] & ~3);
  feed_expect(u, term::ddp_untagged_invalid_version);
}

TEST_F(Responder, BadRdmapVersion) {
  Bytes u = seg(send_hdr(1), payload);
  u[1] = static_cast<std::uint8_t>((u[1] & 0x3f) | 0x80);
  feed_expect(u, term::rdmap_invalid_version);
}

TEST_F(Responder, TruncatedHeaderIsCatastrophicWithoutCopy) {
  Bytes u = seg(send_hdr(1));
  u.resize(10);
  b.qp.on_segment(u);
  const Terminate t = expect_terminate(term::ddp_catastrophic);
  EXPECT_FALSE(t.m || t.d || t.r);
}

TEST_F(Responder, ReadRequestSourceValidation) {
  const std::uint32_t other = b.stags.alloc_pd();
  const stag_t foreign = b.stags.register_mr(other, mem.data(), mem.size(), access_remote_read);
  const ReadRequest bad[] = {
      {1, 0, 16, rk ^ 0x80, base},     // invalid STag
      {1, 0, 16, foreign, base},       // other PD
      {1, 0, 16, wk, base},            // no remote read
      {1, 0, 16, rk, base + 1020},     // bounds
      {1, 0, 16, rk, UINT64_MAX - 4},  // TO wrap
  };
  const TerminateCause want[] = {term::rdmap_invalid_stag, term::rdmap_stag_not_associated,
                                 term::rdmap_access_rights, term::rdmap_base_bounds,
                                 term::rdmap_to_wrap};
  for (int i = 0; i < 5; ++i) {
    SCOPED_TRACE(i);
    // A fresh Qp on this fixture's STag table for each case.
    Qp qp(with_pd(cfg(), b.pd), b.stags, b.scq, b.rcq);
    ASSERT_EQ(qp.rts(), 0);
    const Bytes in = rr_seg(1, bad[i]);
    qp.on_segment(in);
    EXPECT_EQ(qp.state(), QpState::terminate);
    OutSegment o;
    ASSERT_TRUE(qp.next_segment(o));
    Terminate t;
    ASSERT_EQ(parse(o.payload, t), WireError::ok);
    EXPECT_EQ(t.cause, want[i]);
    expect_copy(t, in, true);
    EXPECT_EQ(qp.state(), QpState::error);
  }
}

TEST_F(Responder, ReadRequestMsnOutOfRange) {
  feed_expect(rr_seg(0, {1, 0, 0, rk, base}), term::ddp_msn_range, true);
}

TEST_F(Responder, ReadRequestWithMessageOffset) {
  feed_expect(rr_seg(1, {1, 0, 0, rk, base}, 4), term::ddp_invalid_mo, true);
}

TEST(ResponderIrd, ExceedingIrdFindsNoBuffer) {
  Side b{cfg(2)};
  ASSERT_EQ(b.qp.rts(), 0);
  std::vector<std::uint8_t> mem(64);
  const stag_t rk = b.stags.register_mr(b.pd, mem.data(), 64, access_remote_read);
  const auto base = reinterpret_cast<std::uintptr_t>(mem.data());
  // MSN 2 arrives ahead of MSN 1: held; then MSN 1; then MSN 3 exceeds IRD 2.
  b.qp.on_segment(rr_seg(2, {1, 0, 8, rk, base}));
  b.qp.on_segment(rr_seg(1, {1, 0, 8, rk, base}));
  EXPECT_EQ(b.qp.incoming_reads(), 2u);
  const Bytes third = rr_seg(3, {1, 0, 8, rk, base});
  b.qp.on_segment(third);
  EXPECT_EQ(b.qp.state(), QpState::terminate);
  EXPECT_EQ(b.qp.terminate_cause(), term::ddp_msn_no_buffer);
}

TEST_F(Responder, RtrMismatch) {
  b.qp.expect_rtr(RtrOp::read);
  b.qp.on_segment(seg(write_hdr(1, 0)));  // a Write RTR when a Read RTR was agreed
  const Terminate t = expect_terminate(term::llp_no_matching_rtr);
  EXPECT_FALSE(t.m || t.d || t.r);
}

TEST_F(Responder, LlpErrorSendsTerminateWithoutHeaders) {
  Sge s[] = {{rx.data(), 64, lk}};
  ASSERT_EQ(b.qp.post_recv(1, s), 0);
  b.qp.llp_error(term::llp_crc_error);
  const Terminate t = expect_terminate(term::llp_crc_error);
  EXPECT_FALSE(t.m || t.d || t.r);
  EXPECT_EQ(b.poll_recv().size(), 1u);
  // Dead: nothing more is accepted or sent.
  b.qp.on_segment(seg(send_hdr(1), payload));
  EXPECT_FALSE(b.qp.tx_pending());
  EXPECT_EQ(b.qp.post_send(1, {}), ENOTCONN);
}

TEST(TerminateReceived, ReadWithBadRkeyCompletesRemoteAccessError) {
  Side a{cfg()}, b{cfg()};
  ASSERT_EQ(a.qp.rts(), 0);
  ASSERT_EQ(b.qp.rts(), 0);
  std::vector<std::uint8_t> dst(64), rbuf(16);
  const stag_t ld = a.stags.register_mr(a.pd, dst.data(), 64, access_local_write);
  const stag_t lr = a.stags.register_mr(a.pd, rbuf.data(), 16, access_local_write);
  Sge sink[] = {{dst.data(), 64, ld}};
  Sge rx[] = {{rbuf.data(), 16, lr}};
  ASSERT_EQ(a.qp.post_recv(7, rx), 0);
  ASSERT_EQ(a.qp.post_read(1, sink, 0x12345600, 0x1000), 0);
  a.drain();                            // the Read Request goes out ...
  ASSERT_EQ(a.qp.post_send(2, {}), 0);  // ... and a Send is queued behind it
  // Deliver the Read Request (rebuilt, as A sent it) to B, then B's Terminate to A.
  ReadRequest rr{ld, reinterpret_cast<std::uintptr_t>(dst.data()), 64, 0x12345600, 0x1000};
  b.qp.on_segment(rr_seg(1, rr));
  auto term = b.drain();
  ASSERT_EQ(term.size(), 1u);
  a.qp.on_segment(term[0]);
  EXPECT_EQ(a.qp.state(), QpState::error);
  EXPECT_TRUE(a.qp.terminate_received());
  EXPECT_EQ(a.qp.terminate_cause(), term::rdmap_invalid_stag);
  auto sc = a.poll_send();
  ASSERT_EQ(sc.size(), 2u);
  EXPECT_EQ(sc[0].wr_id, 1u);
  EXPECT_EQ(sc[0].status, Status::remote_access_error);
  EXPECT_EQ(sc[1].wr_id, 2u);
  EXPECT_EQ(sc[1].status, Status::flushed);
  auto rc = a.poll_recv();
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].status, Status::flushed);
}

TEST(TerminateReceived, SendWithoutReceiveEndsBothSides) {
  Side a{cfg()}, b{cfg()};
  ASSERT_EQ(a.qp.rts(), 0);
  ASSERT_EQ(b.qp.rts(), 0);
  ASSERT_EQ(a.qp.post_send(1, {}), 0);
  Wire w;
  pump(a, b, &w);
  EXPECT_EQ(b.qp.terminate_cause(), term::ddp_msn_no_buffer);
  EXPECT_EQ(a.qp.terminate_cause(), term::ddp_msn_no_buffer);
  EXPECT_TRUE(a.qp.terminate_received());
  EXPECT_EQ(a.qp.state(), QpState::error);
  EXPECT_EQ(b.qp.state(), QpState::error);
  ASSERT_EQ(w.b_to_a.size(), 1u);
}

}  // namespace
}  // namespace esock::ddp
