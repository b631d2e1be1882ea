// RFC 7306 between two Qps: FetchAdd and CmpSwap (masked and not), Immediate Data (with
// SE, and behind a Write), their queues, MSNs and ordering against Reads, shuffled
// delivery, and every Terminate a bad request or response earns.
#include <gtest/gtest.h>

#include <cstring>

#include "base/endian.h"
#include "harness.h"

namespace esock::ddp {
namespace {

using namespace testing;

QpConfig cfg(bool ext = true, std::uint16_t ord = 8) {
  QpConfig c{};
  c.mulpdu = 100;
  c.ird = c.ord = ord;
  c.rdmap_ext = ext;
  return c;
}

std::uint64_t addr(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p);
}

struct Ext : ::testing::Test {
  Side a{cfg()}, b{cfg()};
  alignas(8) std::uint64_t target[4] = {100, 200, 300, 400};  // b's, remote atomic
  alignas(8) std::uint64_t result[8] = {};                    // a's, local write
  stag_t tk = b.stags.register_mr(b.pd, target, sizeof target, access_remote_atomic);
  stag_t rk = a.stags.register_mr(a.pd, result, sizeof result, access_local_write);

  void SetUp() override {
    ASSERT_NE(tk, 0u);
    ASSERT_EQ(a.qp.rts(), 0);
    ASSERT_EQ(b.qp.rts(), 0);
  }
  AtomicRequest fetch_add(int i, std::uint64_t add, std::uint64_t mask = 0) {
    AtomicRequest r;
    r.stag = tk;
    r.to = addr(&target[i]);
    r.add_swap = add;
    r.add_swap_mask = mask;
    return r;
  }
  AtomicRequest cmp_swap(int i, std::uint64_t cmp, std::uint64_t swap) {
    AtomicRequest r;
    r.op = static_cast<std::uint8_t>(AtomicOp::cmp_swap);
    r.stag = tk;
    r.to = addr(&target[i]);
    r.compare = cmp;
    r.add_swap = swap;
    r.add_swap_mask = ~std::uint64_t{0};
    return r;
  }
  Sge res(int i) { return Sge{reinterpret_cast<std::uint8_t*>(&result[i]), 8, rk}; }
};

TEST_F(Ext, FetchAddAndCmpSwapReturnTheOriginalAndChangeTheTarget) {
  ASSERT_EQ(a.qp.post_atomic(1, res(0), fetch_add(0, 5)), 0);
  ASSERT_EQ(a.qp.post_atomic(2, res(1), cmp_swap(1, 200, 7)), 0);  // matches
  ASSERT_EQ(a.qp.post_atomic(3, res(2), cmp_swap(2, 299, 9)), 0);  // does not
  ASSERT_EQ(a.qp.post_atomic(4, res(3), fetch_add(3, 0x0000000100000001, 0x8000000080000000)), 0);
  Wire w;
  pump(a, b, &w);
  EXPECT_EQ(target[0], 105u);
  EXPECT_EQ(target[1], 7u);
  EXPECT_EQ(target[2], 300u);
  EXPECT_EQ(target[3], 400u + 0x0000000100000001);
  EXPECT_EQ(result[0], 100u);
  EXPECT_EQ(result[1], 200u);
  EXPECT_EQ(result[2], 300u);
  EXPECT_EQ(result[3], 400u);
  auto sc = a.poll_send();
  ASSERT_EQ(sc.size(), 4u);
  const Opcode ops[] = {Opcode::fetch_add, Opcode::cmp_swap, Opcode::cmp_swap, Opcode::fetch_add};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(sc[i].wr_id, i + 1u);
    EXPECT_EQ(sc[i].opcode, ops[i]);
    EXPECT_EQ(sc[i].status, Status::success);
    EXPECT_EQ(sc[i].byte_len, 8u);
  }
  EXPECT_TRUE(b.poll_recv().empty());  // section 5.2.1 rule 3: never delivered to the ULP
  // Section 4.1 and 5.2: requests on QN 1 (MSN 1..4), 70 octets; responses on QN 3, 30.
  ASSERT_EQ(w.a_to_b.size(), 4u);
  ASSERT_EQ(w.b_to_a.size(), 4u);
  for (std::uint32_t i = 0; i < 4; ++i) {
    DdpHeader q, p;
    ASSERT_EQ(parse(w.a_to_b[i], q), WireError::ok);
    EXPECT_EQ(q.opcode, RdmapOpcode::atomic_request);
    EXPECT_EQ(q.qn, qn_read_request);
    EXPECT_EQ(q.msn, i + 1);
    EXPECT_EQ(w.a_to_b[i].size(), 70u);
    ASSERT_EQ(parse(w.b_to_a[i], p), WireError::ok);
    EXPECT_EQ(p.opcode, RdmapOpcode::atomic_response);
    EXPECT_EQ(p.qn, qn_atomic_response);
    EXPECT_EQ(p.msn, i + 1);
    EXPECT_EQ(w.b_to_a[i].size(), 30u);
    EXPECT_EQ(w.b_to_a[i][1], 0x4b);
  }
}

TEST_F(Ext, AtomicsAndReadsShareOneMsnSequenceAndOrdAndCompleteInOrder) {
  Side x{cfg(true, 2)}, y{cfg(true, 2)};
  ASSERT_EQ(x.qp.rts(), 0);
  ASSERT_EQ(y.qp.rts(), 0);
  std::vector<std::uint8_t> src = pattern(300, 3), sink(300);
  alignas(8) std::uint64_t t = 1, r[3] = {};
  const stag_t sk = y.stags.register_mr(y.pd, src.data(), src.size(), access_remote_read);
  const stag_t tk2 = y.stags.register_mr(y.pd, &t, 8, access_remote_atomic);
  const stag_t lk = x.stags.register_mr(x.pd, sink.data(), sink.size(), access_local_write);
  const stag_t rk2 = x.stags.register_mr(x.pd, r, sizeof r, access_local_write);
  Sge rd[] = {{sink.data(), 300, lk}};
  AtomicRequest add;
  add.stag = tk2;
  add.to = addr(&t);
  add.add_swap = 1;
  for (int round = 0; round < 3; ++round) {
    ASSERT_EQ(x.qp.post_read(10, rd, sk, addr(src.data())), 0);
    ASSERT_EQ(
        x.qp.post_atomic(20 + round, {reinterpret_cast<std::uint8_t*>(&r[round]), 8, rk2}, add), 0);
  }
  Wire w;
  std::size_t most = 0;
  for (int i = 0; i < 10000; ++i) {  // pump by hand to watch ORD
    auto xy = x.drain();
    auto yx = y.drain();
    most = std::max(most, x.qp.outstanding_reads());
    if (xy.empty() && yx.empty()) break;
    for (auto& s : xy) y.qp.on_segment(s), w.a_to_b.push_back(s);
    for (auto& s : yx) x.qp.on_segment(s), w.b_to_a.push_back(s);
  }
  EXPECT_LE(most, 2u);
  EXPECT_EQ(t, 4u);
  EXPECT_EQ(r[0], 1u);
  EXPECT_EQ(r[1], 2u);
  EXPECT_EQ(r[2], 3u);
  EXPECT_EQ(src, sink);
  auto sc = x.poll_send();
  ASSERT_EQ(sc.size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(sc[i].wr_id, i % 2 == 0 ? 10u : 20u + i / 2) << i;
  std::uint32_t msn = 1;
  for (const Bytes& s : w.a_to_b) {
    DdpHeader h;
    ASSERT_EQ(parse(s, h), WireError::ok);
    ASSERT_EQ(h.qn, qn_read_request);
    EXPECT_EQ(h.msn, msn++);
  }
}

TEST_F(Ext, ShuffledBatchesStillGiveTheExactTotal) {
  for (std::uint32_t seed = 1; seed <= 20; ++seed) {
    Side x{cfg()}, y{cfg()};
    ASSERT_EQ(x.qp.rts(), 0);
    ASSERT_EQ(y.qp.rts(), 0);
    alignas(8) std::uint64_t counter = 0, out[64] = {};
    const stag_t t = y.stags.register_mr(y.pd, &counter, 8, access_remote_atomic);
    const stag_t o = x.stags.register_mr(x.pd, out, sizeof out, access_local_write);
    AtomicRequest add;
    add.stag = t;
    add.to = addr(&counter);
    add.add_swap = 3;
    int posted = 0;
    for (int i = 0; i < 64; ++i) {
      if (x.qp.post_atomic(i, {reinterpret_cast<std::uint8_t*>(&out[i]), 8, o}, add) == 0) ++posted;
    }
    ASSERT_EQ(posted, 64);
    pump(x, y, nullptr, seed);
    EXPECT_EQ(x.qp.state(), QpState::rts);
    EXPECT_EQ(y.qp.state(), QpState::rts);
    EXPECT_EQ(counter, 3u * 64);
    // Every result distinct and a multiple of 3: each saw a different original value.
    std::vector<std::uint64_t> seen(out, out + 64);
    std::sort(seen.begin(), seen.end());
    for (int i = 0; i < 64; ++i) EXPECT_EQ(seen[i], 3u * i);
    EXPECT_EQ(x.poll_send().size(), 64u);
  }
}

TEST_F(Ext, ImmediateDataCompletesLikeASendWithItsValue) {
  std::vector<std::uint8_t> rx(16, 0xee);
  const stag_t lk = b.stags.register_mr(b.pd, rx.data(), rx.size(), access_local_write);
  Sge r[] = {{rx.data(), 16, lk}};
  ASSERT_EQ(b.qp.post_recv(1, r), 0);
  ASSERT_EQ(b.qp.post_recv(2, r), 0);
  ASSERT_EQ(b.qp.post_recv(3, r), 0);
  ASSERT_EQ(a.qp.post_send_imm(7, 0x0102030405060708), 0);
  ASSERT_EQ(a.qp.post_send_imm(8, 42, true), 0);
  ASSERT_EQ(a.qp.post_send(9, {}), 0);  // the next Send: the same MSN sequence
  Wire w;
  pump(a, b, &w);
  ASSERT_EQ(w.a_to_b.size(), 3u);
  EXPECT_EQ(w.a_to_b[0].size(), 26u);
  EXPECT_EQ(w.a_to_b[0][1], 0x48);
  EXPECT_EQ(w.a_to_b[1][1], 0x49);
  auto rc = b.poll_recv();
  ASSERT_EQ(rc.size(), 3u);
  EXPECT_EQ(rc[0].opcode, Opcode::recv_imm);
  EXPECT_EQ(rc[0].imm, 0x0102030405060708u);
  EXPECT_EQ(rc[0].byte_len, 8u);
  EXPECT_FALSE(rc[0].solicited);
  EXPECT_EQ(rc[1].opcode, Opcode::recv_imm);
  EXPECT_EQ(rc[1].imm, 42u);
  EXPECT_TRUE(rc[1].solicited);
  EXPECT_EQ(rc[2].opcode, Opcode::recv);
  EXPECT_EQ(load_be64(rx.data()), 42u);  // section 6.2: the octets land in the buffer
  auto sc = a.poll_send();
  ASSERT_EQ(sc.size(), 3u);
  EXPECT_EQ(sc[0].opcode, Opcode::send_imm);
  EXPECT_EQ(sc[0].byte_len, 8u);
}

TEST_F(Ext, WriteWithImmediateLandsTheWriteBeforeTheCompletion) {
  std::vector<std::uint8_t> mem(1000, 0), rx(8);
  auto src = pattern(1000, 9);
  const stag_t wk = b.stags.register_mr(b.pd, mem.data(), mem.size(), access_remote_write);
  const stag_t lk = b.stags.register_mr(b.pd, rx.data(), rx.size(), access_local_write);
  const stag_t sk = a.stags.register_mr(a.pd, src.data(), src.size(), 0);
  Sge r[] = {{rx.data(), 8, lk}};
  ASSERT_EQ(b.qp.post_recv(1, r), 0);
  Sge s[] = {{src.data(), 1000, sk}};
  ASSERT_EQ(a.qp.post_write_imm(5, s, wk, addr(mem.data()), 77), 0);
  Wire w;
  pump(a, b, &w);
  EXPECT_EQ(mem, src);
  auto rc = b.poll_recv();
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].opcode, Opcode::recv_imm);
  EXPECT_EQ(rc[0].imm, 77u);
  auto sc = a.poll_send();
  ASSERT_EQ(sc.size(), 1u);  // one work request, one completion
  EXPECT_EQ(sc[0].wr_id, 5u);
  EXPECT_EQ(sc[0].opcode, Opcode::write_imm);
  EXPECT_EQ(sc[0].byte_len, 1000u);
  EXPECT_EQ(w.a_to_b.back()[1], 0x48);  // the Write's segments, then Immediate Data
}

TEST_F(Ext, AReadResponseIntoAnAtomicsResultIsRefused) {
  ASSERT_EQ(a.qp.post_atomic(1, res(0), fetch_add(0, 5)), 0);
  ASSERT_EQ(a.drain().size(), 1u);
  // A peer "answering" with a Read Response aimed at the result: no Read is outstanding.
  DdpHeader h = write_hdr(rk, addr(&result[0]));
  h.opcode = RdmapOpcode::read_response;
  a.qp.on_segment(seg(h, Bytes(8, 0xee)));
  EXPECT_NE(a.qp.terminate_cause(), std::nullopt);
  EXPECT_EQ(result[0], 0u);
  auto sc = a.poll_send();
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_NE(sc[0].status, Status::success);
}

TEST_F(Ext, AWriteWithImmediateWhoseWriteIsRefusedReportsTheWritesError) {
  std::vector<std::uint8_t> src(64, 1);
  const stag_t sk = a.stags.register_mr(a.pd, src.data(), src.size(), 0);
  const Sge s[] = {{src.data(), 64, sk}};
  a.qp.set_complete_on_ack(true);  // as on dpdk: done only once acknowledged (never here)
  ASSERT_EQ(a.qp.post_write_imm(9, s, 0xdead00, 0, 1), 0);  // an STag b never issued
  pump(a, b);
  EXPECT_EQ(b.qp.terminate_cause(), term::ddp_invalid_stag);
  auto sc = a.poll_send();
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].wr_id, 9u);
  EXPECT_EQ(sc[0].status, Status::remote_access_error);
}

TEST(ExtOff, WithoutAgreementNothingCanBePostedAndTheOpcodesAreUnexpected) {
  Side a{cfg(false)}, b{cfg(false)};
  ASSERT_EQ(a.qp.rts(), 0);
  ASSERT_EQ(b.qp.rts(), 0);
  alignas(8) std::uint64_t r = 0;
  const stag_t rk = a.stags.register_mr(a.pd, &r, 8, access_local_write);
  EXPECT_EQ(a.qp.post_send_imm(1, 1), EOPNOTSUPP);
  EXPECT_EQ(a.qp.post_write_imm(1, {}, 1, 0, 1), EOPNOTSUPP);
  EXPECT_EQ(a.qp.post_atomic(1, {reinterpret_cast<std::uint8_t*>(&r), 8, rk}, AtomicRequest{}),
            EOPNOTSUPP);
  DdpHeader h;
  h.opcode = RdmapOpcode::immediate_data;
  b.qp.on_segment(seg(h, Bytes(8)));
  EXPECT_EQ(b.qp.terminate_cause(), term::rdmap_unexpected_opcode);
}

// Crafted segments into b, the Responder.
struct ExtErrors : Ext {
  Bytes atomic_seg(const AtomicRequest& r, std::uint32_t msn = 1, std::size_t extra = 0) {
    DdpHeader h;
    h.opcode = RdmapOpcode::atomic_request;
    h.qn = qn_read_request;
    h.msn = msn;
    Bytes body(atomic_request_len + extra);
    emit(r, body);
    return seg(h, body);
  }
  Terminate expect_terminate(TerminateCause c) {
    auto out = b.drain();
    Terminate t;
    EXPECT_EQ(b.qp.terminate_cause(), c);
    if (out.empty()) {
      ADD_FAILURE() << "no Terminate";
      return t;
    }
    SegmentView v;
    EXPECT_EQ(SegmentView::make(out.back(), v), WireError::ok);
    EXPECT_EQ(v.hdr().opcode, RdmapOpcode::terminate);
    EXPECT_EQ(parse(v.payload(), t), WireError::ok);
    EXPECT_EQ(t.cause, c);
    return t;
  }
};

TEST_F(ExtErrors, AMisalignedTargetEndsTheStreamAndChangesNothing) {
  AtomicRequest r = fetch_add(0, 1);
  r.to += 4;
  const Bytes s = atomic_seg(r);
  b.qp.on_segment(s);
  const Terminate t = expect_terminate(term::rdmap_catastrophic_stream);  // section 8.2
  EXPECT_TRUE(t.m);
  EXPECT_TRUE(t.d);
  EXPECT_FALSE(t.r);  // section 8.1: the Terminated RDMA Header is zero for atomics
  EXPECT_EQ(t.ddp_seg_len, s.size());
  EXPECT_EQ(target[0], 100u);
  EXPECT_EQ(target[1], 200u);
}

TEST_F(ExtErrors, TheRequesterSeesTheMisalignmentAsARemoteOperationError) {
  AtomicRequest r = fetch_add(0, 1);
  r.to += 1;
  ASSERT_EQ(a.qp.post_atomic(1, res(0), r), 0);
  pump(a, b);
  EXPECT_EQ(b.qp.terminate_cause(), term::rdmap_catastrophic_stream);
  EXPECT_TRUE(a.qp.terminate_received());
  auto sc = a.poll_send();
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, Status::remote_operation_error);
  EXPECT_EQ(target[0], 100u);
}

TEST_F(ExtErrors, StagRightsAndBoundsAreRemoteProtectionErrors) {
  // RFC 7306 section 9 keeps RFC 5040's protection model: the codes of its section 7.
  enum Kind { bad_stag, no_right, outside };
  const std::pair<Kind, TerminateCause> cases[] = {{bad_stag, term::rdmap_invalid_stag},
                                                   {no_right, term::rdmap_access_rights},
                                                   {outside, term::rdmap_base_bounds}};
  for (const auto& [kind, cause] : cases) {
    Side y{cfg()};
    ASSERT_EQ(y.qp.rts(), 0);
    alignas(8) std::uint64_t t[2] = {5, 6};
    const stag_t at = y.stags.register_mr(y.pd, &t[0], 8, access_remote_atomic);
    const stag_t wo = y.stags.register_mr(y.pd, &t[1], 8, access_remote_write);
    AtomicRequest r;
    r.stag = kind == no_right ? wo : at;
    r.to = addr(kind == no_right ? &t[1] : &t[0]);
    if (kind == bad_stag) r.stag ^= 0xff;
    if (kind == outside) r.to += 8;
    r.add_swap = 1;
    y.qp.on_segment(atomic_seg(r));
    EXPECT_EQ(y.qp.terminate_cause(), cause) << kind;
    EXPECT_EQ(t[0], 5u);
    EXPECT_EQ(t[1], 6u);
  }
}

TEST_F(ExtErrors, AnUnknownOperationOrAWrongLengthIsAnOperationError) {
  AtomicRequest r = fetch_add(0, 1);
  r.op = 1;  // reserved (section 10.1)
  b.qp.on_segment(atomic_seg(r));
  expect_terminate(term::rdmap_op_unspecified);
  EXPECT_EQ(target[0], 100u);
}

TEST_F(ExtErrors, AnAtomicRequestWithTrailingOctetsIsRefused) {
  b.qp.on_segment(atomic_seg(fetch_add(0, 1), 1, 4));
  expect_terminate(term::rdmap_op_unspecified);
}

TEST_F(ExtErrors, ImmediateDataOfAnyLengthButEightIsRefused) {
  std::vector<std::uint8_t> rx(64);
  const stag_t lk = b.stags.register_mr(b.pd, rx.data(), rx.size(), access_local_write);
  Sge r[] = {{rx.data(), 64, lk}};
  ASSERT_EQ(b.qp.post_recv(1, r), 0);
  DdpHeader h;
  h.opcode = RdmapOpcode::immediate_data;
  h.msn = 1;
  b.qp.on_segment(seg(h, Bytes(12)));
  expect_terminate(term::rdmap_op_unspecified);
}

TEST_F(ExtErrors, AResponseWithNothingOutstandingOrForAnotherRequestIsRefused) {
  DdpHeader h;
  h.opcode = RdmapOpcode::atomic_response;
  h.qn = qn_atomic_response;
  h.msn = 1;
  Bytes body(atomic_response_len);
  emit(AtomicResponse{1, 5}, body);
  a.qp.on_segment(seg(h, body));
  EXPECT_EQ(a.qp.terminate_cause(), term::ddp_msn_no_buffer);

  Side x{cfg()};
  ASSERT_EQ(x.qp.rts(), 0);
  alignas(8) std::uint64_t out = 0;
  const stag_t o = x.stags.register_mr(x.pd, &out, 8, access_local_write);
  ASSERT_EQ(x.qp.post_atomic(1, {reinterpret_cast<std::uint8_t*>(&out), 8, o}, fetch_add(0, 1)), 0);
  ASSERT_EQ(x.drain().size(), 1u);
  emit(AtomicResponse{99, 5}, body);  // the request's identifier was 1
  x.qp.on_segment(seg(h, body));
  EXPECT_EQ(x.qp.terminate_cause(), term::rdmap_op_unspecified);
  EXPECT_EQ(out, 0u);
}

TEST_F(ExtErrors, AtomicsCountAgainstIrdWithReads) {
  Side y{cfg(true, 2)};
  ASSERT_EQ(y.qp.rts(), 0);
  alignas(8) std::uint64_t t = 0;
  AtomicRequest r;
  r.stag = y.stags.register_mr(y.pd, &t, 8, access_remote_atomic);
  r.to = addr(&t);
  ReadRequest rr;  // zero length: nothing to check
  y.qp.on_segment(rr_seg(1, rr));
  Bytes s1 = atomic_seg(r, 2);
  y.qp.on_segment(s1);
  EXPECT_EQ(y.qp.state(), QpState::rts);
  y.qp.on_segment(atomic_seg(r, 3));  // a third request with IRD 2
  EXPECT_EQ(y.qp.terminate_cause(), term::ddp_msn_no_buffer);
}

}  // namespace
}  // namespace esock::ddp
