// Early placement, targeted: what place_payload accepts and refuses (refusal leaves no
// trace), payload split octet by octet across a scatter list, completions only at the
// in-order turn, and the checks that pass at placement but fail at the in-order turn
// (an STag invalidated in between, a message delivered in between): the Terminate is the
// one on_segment sends, octet for octet.
#include <gtest/gtest.h>

#include "harness.h"

namespace esock::ddp {
namespace {

using namespace testing;

QpConfig cfg() {
  QpConfig c{};
  c.mulpdu = 200;
  return c;
}

bytes_view header_of(const Bytes& s) {
  return bytes_view(s).first(header_length(s[0]));
}

std::uint32_t payload_len(const Bytes& s) {
  return static_cast<std::uint32_t>(s.size() - header_of(s).size());
}

// Places `s` with its payload cut into pieces of `piece` octets.
bool place(Qp& qp, const Bytes& s, std::size_t piece = 1000) {
  const bytes_view hdr = header_of(s);
  bytes_view pl = bytes_view(s).subspan(hdr.size());
  std::vector<bytes_view> pieces;
  while (!pl.empty()) {
    const std::size_t k = std::min(piece, pl.size());
    pieces.push_back(pl.first(k));
    pl = pl.subspan(k);
  }
  return qp.place_payload(hdr, pieces);
}

void on_placed(Qp& qp, const Bytes& s) {
  qp.on_placed_segment(header_of(s), payload_len(s));
}

// A receiver with a remote-writable region, a remote-readable one and a receive buffer
// (registered from fresh tables in the same order, so two Early instances share STags).
struct Rx {
  Side side{cfg()};
  Bytes& mem;
  Bytes& buf;
  std::uint64_t base = reinterpret_cast<std::uintptr_t>(mem.data());
  stag_t wk = side.stags.register_mr(side.pd, mem.data(), mem.size(), access_remote_write);
  stag_t rk = side.stags.register_mr(side.pd, mem.data(), mem.size(), access_remote_read);
  stag_t lk = side.stags.register_mr(side.pd, buf.data(), buf.size(), access_local_write);
  Rx(Bytes& m, Bytes& b) : mem(m), buf(b) { EXPECT_EQ(side.qp.rts(), 0); }
  void post_recv(std::uint64_t id, std::uint32_t a = 10, std::uint32_t len = 64) {
    const Sge sg[] = {{buf.data(), a, lk}, {buf.data() + a, 0, lk}, {buf.data() + a, len - a, lk}};
    ASSERT_EQ(side.qp.post_recv(id, sg), 0);
  }
  Terminate terminate() {
    auto out = side.drain();
    EXPECT_EQ(out.size(), 1u);
    Terminate t;
    SegmentView v;
    if (out.empty() || SegmentView::make(out.back(), v) != WireError::ok) return t;
    EXPECT_EQ(parse(v.payload(), t), WireError::ok);
    return t;
  }
};

struct Early : ::testing::Test {
  Bytes mem = Bytes(1024), buf = Bytes(64);
  Rx e{mem, buf};
  Bytes payload = pattern(32, 5);
};

TEST_F(Early, SendPlacedOctetByOctetCompletesOnlyAtItsTurn) {
  e.post_recv(1);
  const Bytes a = seg(send_hdr(1, 0, false), bytes_view(payload).first(20));
  const Bytes b = seg(send_hdr(1, 20, true), bytes_view(payload).subspan(20));
  EXPECT_TRUE(place(e.side.qp, b, 1));  // across the zero-length SGE, one octet a piece
  EXPECT_TRUE(std::equal(payload.begin() + 20, payload.end(), buf.begin() + 20));
  EXPECT_TRUE(place(e.side.qp, a, 7));
  EXPECT_TRUE(std::equal(payload.begin(), payload.end(), buf.begin()));
  EXPECT_EQ(e.side.rcq.size(), 0u);  // placed, not delivered
  on_placed(e.side.qp, a);
  EXPECT_EQ(e.side.rcq.size(), 0u);
  on_placed(e.side.qp, b);
  const auto rc = e.side.poll_recv();
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].wr_id, 1u);
  EXPECT_EQ(rc[0].status, Status::success);
  EXPECT_EQ(rc[0].byte_len, 32u);
  EXPECT_EQ(e.side.qp.state(), QpState::rts);
}

TEST_F(Early, RefusedSegmentsLeaveNoTrace) {
  e.post_recv(1, 10, 16);  // 16 octets: the 32-octet payload is too long for it
  DdpHeader rresp = write_hdr(e.wk, e.base);
  rresp.opcode = RdmapOpcode::read_response;
  DdpHeader rreq = send_hdr(1);
  rreq.opcode = RdmapOpcode::read_request;
  rreq.qn = qn_read_request;
  DdpHeader termh = send_hdr(1);
  termh.opcode = RdmapOpcode::terminate;
  termh.qn = qn_terminate;
  DdpHeader qn5 = send_hdr(1);
  qn5.qn = 5;
  Bytes bad_dv = seg(write_hdr(e.wk, e.base), payload);
  bad_dv[0] = static_cast<std::uint8_t>(bad_dv[0] & ~3);
  const Bytes refused[] = {
      seg(write_hdr(e.wk, e.base)),                    // zero length: nothing to place
      seg(write_hdr(e.wk ^ 0x80, e.base), payload),    // invalid STag
      seg(write_hdr(e.rk, e.base), payload),           // no remote write access
      seg(write_hdr(e.wk, e.base + 1000), payload),    // beyond the region
      seg(rresp, payload),                             // no outstanding Read Request
      seg(send_hdr(1), payload),                       // too long for the posted buffer
      seg(send_hdr(2), bytes_view(payload).first(8)),  // no buffer posted for MSN 2
      seg(send_hdr(0), bytes_view(payload).first(8)),  // MSN already delivered
      seg(rreq, Bytes(read_request_len)),              // RDMAP's own messages
      seg(termh, Bytes(8)),
      seg(qn5, bytes_view(payload).first(8)),
      bad_dv,
  };
  for (const Bytes& s : refused) EXPECT_FALSE(place(e.side.qp, s)) << int(s[1] & 0x0f);
  // The header must be exactly the header: one octet more or less is refused.
  const Bytes w = seg(write_hdr(e.wk, e.base), payload);
  const bytes_view pieces[] = {bytes_view(w).subspan(tagged_hdr_len + 1)};
  EXPECT_FALSE(e.side.qp.place_payload(bytes_view(w).first(tagged_hdr_len + 1), pieces));
  EXPECT_FALSE(e.side.qp.place_payload(bytes_view(w).first(tagged_hdr_len - 1), pieces));
  EXPECT_TRUE(std::all_of(mem.begin(), mem.end(), [](auto x) { return x == 0; }));
  EXPECT_TRUE(std::all_of(buf.begin(), buf.end(), [](auto x) { return x == 0; }));
  EXPECT_EQ(e.side.qp.state(), QpState::rts);
  EXPECT_TRUE(e.side.drain().empty());
  // No status was set on the receive WR by the refused too-long Send: a fitting one
  // completes normally.
  e.side.qp.on_segment(seg(send_hdr(1), bytes_view(payload).first(16)));
  const auto rc = e.side.poll_recv();
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].status, Status::success);
}

TEST_F(Early, NothingIsPlacedOutsideRtsOrBeforeTheRtr) {
  Bytes m2(1024), b2(64);
  Rx idle{m2, b2};
  Rx rtr{m2, b2};
  rtr.side.qp.expect_rtr(RtrOp::write);
  Side fresh{cfg()};  // idle: rts() never called
  const Bytes w = seg(write_hdr(idle.wk, idle.base), payload);
  EXPECT_FALSE(place(fresh.qp, w));
  EXPECT_FALSE(place(rtr.side.qp, w));
  idle.side.qp.llp_error(term::llp_crc_error);
  EXPECT_FALSE(place(idle.side.qp, w));
  EXPECT_TRUE(std::all_of(m2.begin(), m2.end(), [](auto x) { return x == 0; }));
}

// The case the brief names: a Send with Invalidate, earlier in the stream, invalidates the
// STag a Write already placed early targets. The in-order turn terminates exactly as
// on_segment would; the Write's octets are already in memory (README).
TEST_F(Early, StagInvalidatedBeforeItsTurnTerminatesLikeOnSegment) {
  Bytes m2(1024), b2(64);
  Rx r{m2, b2};  // reference: on_segment only, same STags
  ASSERT_EQ(r.wk, e.wk);
  e.post_recv(1);
  r.post_recv(1);
  DdpHeader inv = send_hdr(1);
  inv.opcode = RdmapOpcode::send_invalidate;
  inv.rsvd_ulp = e.wk;
  const Bytes s = seg(inv, bytes_view(payload).first(4));
  const Bytes w = seg(write_hdr(e.wk, e.base + 100), payload);
  const Bytes w_ref = seg(write_hdr(r.wk, r.base + 100), payload);

  r.side.qp.on_segment(s);
  r.side.qp.on_segment(w_ref);
  EXPECT_TRUE(place(e.side.qp, w, 5));
  EXPECT_TRUE(std::equal(payload.begin(), payload.end(), mem.begin() + 100));
  e.side.qp.on_segment(s);
  on_placed(e.side.qp, w);

  EXPECT_EQ(e.side.qp.terminate_cause(), term::ddp_invalid_stag);
  EXPECT_EQ(r.side.qp.terminate_cause(), term::ddp_invalid_stag);
  const Terminate te = e.terminate(), tr = r.terminate();
  EXPECT_TRUE(te.m && te.d && !te.r);
  EXPECT_EQ(te.ddp_seg_len, w.size());  // header + payload, as on_segment reports it
  EXPECT_TRUE(std::equal(te.ddp_hdr.begin(), te.ddp_hdr.begin() + tagged_hdr_len, w.begin()));
  EXPECT_EQ(te.ddp_seg_len, tr.ddp_seg_len);
  const auto rc_e = e.side.poll_recv(), rc_r = r.side.poll_recv();
  ASSERT_EQ(rc_e.size(), 1u);
  ASSERT_EQ(rc_r.size(), 1u);
  EXPECT_EQ(rc_e[0].invalidated_stag, e.wk);
  EXPECT_EQ(rc_r[0].invalidated_stag, r.wk);
  EXPECT_EQ(e.side.qp.state(), QpState::error);
  EXPECT_TRUE(std::all_of(m2.begin(), m2.end(), [](auto x) { return x == 0; }));
}

// A second Last segment for a message that was delivered in between: placed early (no
// Last seen yet), then MSN out of range at its turn, as on_segment reports it.
TEST_F(Early, MessageDeliveredBeforeItsTurnTerminatesLikeOnSegment) {
  Bytes m2(1024), b2(64);
  Rx r{m2, b2};
  e.post_recv(1);
  r.post_recv(1);
  const Bytes first = seg(send_hdr(1, 0, true), bytes_view(payload).first(8));
  const Bytes stray = seg(send_hdr(1, 32, true), bytes_view(payload).first(8));
  r.side.qp.on_segment(first);
  r.side.qp.on_segment(stray);
  EXPECT_TRUE(place(e.side.qp, stray));
  e.side.qp.on_segment(first);
  on_placed(e.side.qp, stray);
  EXPECT_EQ(e.side.qp.terminate_cause(), term::ddp_msn_range);
  EXPECT_EQ(r.side.qp.terminate_cause(), term::ddp_msn_range);
  EXPECT_EQ(e.side.drain(), r.side.drain());  // the same Terminate octets (no TO inside)
  const auto rc = e.side.poll_recv();
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].byte_len, 8u);
}

TEST_F(Early, MisuseOfOnPlacedSegmentIsLocalCatastrophic) {
  DdpHeader rreq = send_hdr(1);
  rreq.opcode = RdmapOpcode::read_request;
  rreq.qn = qn_read_request;
  const Bytes s = seg(rreq, Bytes(read_request_len));
  on_placed(e.side.qp, s);
  EXPECT_EQ(e.side.qp.terminate_cause(), term::rdmap_catastrophic);
  const Terminate t = e.terminate();
  EXPECT_FALSE(t.m || t.d || t.r);
}

TEST(EarlyRead, ResponsesPlacedInReverseCompleteInOrder) {
  Side a{cfg()}, b{cfg()};
  ASSERT_EQ(a.qp.rts(), 0);
  ASSERT_EQ(b.qp.rts(), 0);
  auto src = pattern(1500, 9);
  Bytes dst(1500);
  const stag_t rk = b.stags.register_mr(b.pd, src.data(), src.size(), access_remote_read);
  const stag_t lk = a.stags.register_mr(a.pd, dst.data(), dst.size(), access_local_write);
  const Sge sink[] = {{dst.data(), 600, lk}, {dst.data() + 600, 900, lk}};
  ASSERT_EQ(a.qp.post_read(3, sink, rk, reinterpret_cast<std::uintptr_t>(src.data())), 0);
  for (const Bytes& s : a.drain()) b.qp.on_segment(s);
  const auto resp = b.drain();
  ASSERT_GT(resp.size(), 8u);
  for (auto it = resp.rbegin(); it != resp.rend(); ++it) EXPECT_TRUE(place(a.qp, *it, 3));
  EXPECT_EQ(dst, src);
  EXPECT_EQ(a.scq.size(), 0u);
  for (std::size_t i = 0; i + 1 < resp.size(); ++i) on_placed(a.qp, resp[i]);
  EXPECT_EQ(a.scq.size(), 0u);
  on_placed(a.qp, resp.back());
  const auto sc = a.poll_send();
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].wr_id, 3u);
  EXPECT_EQ(sc[0].status, Status::success);
  EXPECT_EQ(a.qp.outstanding_reads(), 0u);
  EXPECT_EQ(a.qp.state(), QpState::rts);
}

}  // namespace
}  // namespace esock::ddp
