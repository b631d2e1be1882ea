// Qp receive side: validation and placement of DDP segments (RFC 5041 sections 5-7) and
// RDMAP message processing (RFC 5040 sections 5-7). Segments are placed as they arrive,
// in any order; messages complete in order per queue (RFC 5041 sections 5.3 and 5.4):
// QN 0 by MSN, Read Responses in the order the Read Requests were sent.
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/seq32.h"
#include "ddp/placement.h"
#include "ddp/qp.h"
#include "ddp/source_cause.h"
#include "ddp/wire_ext.h"

namespace esock::ddp {
namespace {

using Check = StagTable::Check;

// What a received Terminate means for the WR it hit (verbs completion statuses).
Status remote_status(TerminateCause c) {
  if (c.type == 1 && (c.layer == term::layer_rdmap || c.layer == term::layer_ddp))
    return Status::remote_access_error;
  if (c.layer == term::layer_ddp && c.type == 2) return Status::remote_invalid_request_error;
  return Status::remote_operation_error;
}

}  // namespace

void Qp::on_segment(bytes_view ulpdu) {
  if (state_ != QpState::rts && state_ != QpState::closing) return;
  SegmentView v;
  switch (SegmentView::make(ulpdu, v)) {
    case WireError::ok:
      break;
    case WireError::bad_ddp_version:
      fail(
          (ulpdu[0] & 0x80) ? term::ddp_tagged_invalid_version : term::ddp_untagged_invalid_version,
          ulpdu);
      return;
    case WireError::bad_rdmap_version:
      fail(term::rdmap_invalid_version, ulpdu);
      return;
    case WireError::opcode:
      fail(term::rdmap_unexpected_opcode, ulpdu);
      return;
    default:  // shorter than its own header: nothing in it can be trusted
      fail(term::ddp_catastrophic, ulpdu);
      return;
  }
  // An MPA ULPDU is at most 65535 octets (RFC 5044 section 4.1); anything larger is not
  // a segment the LLP could have delivered.
  if (v.payload().size() > UINT32_MAX) return fail(term::ddp_catastrophic, {});
  const bytes_view pieces[1] = {v.payload()};
  Rx s;
  s.h = v.hdr();
  s.raw = ulpdu;
  s.ulpdu_len = ulpdu.size();
  s.len = static_cast<std::uint32_t>(v.payload().size());
  s.pieces = pieces;
  dispatch(s);
}

// The receive path shared by on_segment and on_placed_segment: `s.pieces` is empty when
// the payload is already in place.
void Qp::dispatch(const Rx& s) {
  if (rtr_expected_) {
    // RFC 6581: the first FPDU must be the RTR that was negotiated.
    if (!rx_rtr(s)) fail(term::llp_no_matching_rtr, {});
    return;
  }
  const DdpHeader& h = s.h;
  if (h.tagged) {
    if (h.opcode == RdmapOpcode::write)
      rx_write(s);
    else
      rx_read_response(s);
    return;
  }
  // RFC 7306 section 1.1: its messages only where both ends agreed; elsewhere they are what
  // they are to an RFC 5040 peer (Linux siw answers the same).
  if (opcode_is_rfc7306(h.opcode) && !cfg_.rdmap_ext)
    return fail_rx(term::rdmap_unexpected_opcode, s);
  // RFC 5041 section 7.2: only the queues RDMAP defines exist (RFC 5040 section 5.1; RFC
  // 7306 section 10.2 adds QN 3).
  if (h.qn > (cfg_.rdmap_ext ? qn_atomic_response : qn_terminate))
    return fail_rx(term::ddp_invalid_qn, s);
  const bool to_qn0 = opcode_is_send(h.opcode) || opcode_is_immediate(h.opcode);
  const bool to_qn1 =
      h.opcode == RdmapOpcode::read_request || h.opcode == RdmapOpcode::atomic_request;
  const std::uint32_t want = to_qn0                                     ? qn_send
                             : to_qn1                                   ? qn_read_request
                             : h.opcode == RdmapOpcode::atomic_response ? qn_atomic_response
                                                                        : qn_terminate;
  if (h.qn != want) return fail_rx(term::rdmap_unexpected_opcode, s);
  if (to_qn0) return rx_send(s);
  if (to_qn1) return rx_read_request(s);
  if (h.opcode == RdmapOpcode::atomic_response) return rx_atomic_response(s);
  rx_terminate(s);
}

bool Qp::rx_rtr(const Rx& s) {
  const DdpHeader& h = s.h;
  const bool zero = s.len == 0;
  bool ok = false;
  switch (*rtr_expected_) {
    case RtrOp::send:
      ok = !h.tagged && h.opcode == RdmapOpcode::send && h.qn == qn_send && h.msn == rq_msn_ &&
           h.last && h.mo == 0 && zero;
      if (ok) ++rq_msn_;  // MSN 1 is the RTR's: no receive WR, no completion
      break;
    case RtrOp::write:
      ok = h.tagged && h.opcode == RdmapOpcode::write && h.last && zero;
      break;
    case RtrOp::read: {
      ReadRequest rr;
      ok = !h.tagged && h.opcode == RdmapOpcode::read_request && h.qn == qn_read_request &&
           h.msn == rr_msn_ && h.last && h.mo == 0 && !s.placed && s.len == read_request_len &&
           parse(s.payload(), rr) == WireError::ok && rr.size == 0 && cfg_.ird > 0;
      if (ok) {
        irq_.push_back(IrqEntry{rr});  // the zero-length Read Response
        ++rr_msn_;
      }
      break;
    }
  }
  if (ok) rtr_expected_.reset();
  return ok;
}

void Qp::rx_write(const Rx& s) {
  // RFC 5041 section 7: validation applies to non-zero-length tagged segments.
  if (s.len == 0) {
    if (s.h.last && tripwires_ != nullptr) tripwires_->on_write_segment(s.h.stag, s.h.to, 0, true);
    return;
  }
  const Target t = check_write(s.h, s.len);
  if (t.cause) return fail_rx(*t.cause, s);
  detail::copy_pieces(t.dst, s.pieces);
  // In stream order and in memory now (also when place_payload() copied it earlier).
  if (tripwires_ != nullptr) tripwires_->on_write_segment(s.h.stag, s.h.to, s.len, s.h.last);
}

void Qp::rx_read_response(const Rx& s) {
  const Target t = check_read_response(s.h, s.len);
  if (t.cause) return fail_rx(*t.cause, s);
  OrqEntry& e = orq_[t.index];
  if (s.len > 0) {
    // A duplicate Read Response segment: its octets were placed already (coverage.h).
    if (!e.placed_ranges.add(s.h.to - e.sink_to, s.len)) return fail_rx(term::ddp_base_bounds, s);
    detail::copy_pieces(t.dst, s.pieces);
    e.placed += s.len;
  }
  if (s.h.last) e.last_seen = true;
  complete_reads();
}

void Qp::complete_reads() {
  while (!orq_.empty() && orq_.front().last_seen && orq_.front().placed == orq_.front().size) {
    SqWr* wr = orq_.front().wr;
    orq_.pop_front();
    if (wr != nullptr && --wr->reads_left == 0 && wr->reads_issued == wr->sg.size())
      wr->done = true;
  }
  drain_sq();
}

void Qp::rx_send(const Rx& s) {
  const DdpHeader& h = s.h;
  const Target t = check_send(h, s.len);
  if (t.cause) {
    if (t.length_error) rq_[t.index].status = Status::local_length_error;
    return fail_rx(*t.cause, s);
  }
  RecvWr& wr = rq_[t.index];
  // RFC 5041 section 7.2: a segment whose MO range was placed already (a duplicate or an
  // overlap, coverage.h) is an invalid MO.
  if (s.len > 0 && !wr.placed_ranges.add(h.mo, s.len)) return fail_rx(term::ddp_invalid_mo, s);
  if (h.last) {
    wr.last_seen = true;
    wr.total = std::uint64_t{h.mo} + s.len;
  }
  detail::scatter(wr.sg, h.mo, s.pieces);
  wr.placed += s.len;
  wr.opcode = h.opcode;
  wr.inv = h.rsvd_ulp;
  deliver_sends(s);
}

void Qp::deliver_sends(const Rx& s) {
  while (!rq_.empty() && rq_.front().last_seen && rq_.front().placed == rq_.front().total) {
    RecvWr& wr = rq_.front();
    Completion c{
        wr.wr_id, Opcode::recv, Status::success, static_cast<std::uint32_t>(wr.total), false, 0};
    if (opcode_is_immediate(wr.opcode)) {
      // RFC 7306 section 6.3: Immediate Data completes like a Send, with its 8 octets.
      c.opcode = Opcode::recv_imm;
      c.imm = immediate_of(wr);
    }
    c.solicited = wr.opcode == RdmapOpcode::send_se ||
                  wr.opcode == RdmapOpcode::send_se_invalidate ||
                  wr.opcode == RdmapOpcode::immediate_data_se;
    if (wr.opcode == RdmapOpcode::send_invalidate || wr.opcode == RdmapOpcode::send_se_invalidate) {
      // RFC 5040, Send with Invalidate: invalidate before the message is delivered.
      const int r = stags_.invalidate(wr.inv, cfg_.pd);
      if (r != 0) {
        wr.status = Status::remote_invalid_request_error;
        return fail_rx(
            r == EACCES ? term::rdmap_prot_cannot_invalidate : term::rdmap_op_cannot_invalidate, s);
      }
      c.invalidated_stag = wr.inv;
    }
    rcq_.push(c);
    rq_.pop_front();
    ++rq_msn_;
  }
}

void Qp::rx_read_request(const Rx& s) {
  const DdpHeader& h = s.h;
  // RFC 5040 section 4.4 (RFC 7306 section 5.2.1): a request is one segment carrying
  // exactly its header.
  if (h.mo != 0) return fail(term::ddp_invalid_mo, s.raw);
  PendingRr p;
  if (!parse_qn1_request(s, p)) return fail(term::rdmap_op_unspecified, s.raw);
  const std::int32_t k = seq_diff(h.msn, rr_msn_);
  if (k < 0) return fail(term::ddp_msn_range, s.raw);
  // IRD is the number of QN 1 buffers (RFC 5040, RDMA Read and ORD/IRD; RFC 7306 section
  // 5.2.2 rule 4 counts Atomic Requests in it): one more outstanding request finds no buffer.
  // This one is the (k+1)-th after those accepted and not yet answered; the requests held
  // ahead of order are among the k before it, so they are not counted again.
  if (irq_.size() + static_cast<std::size_t>(k) >= cfg_.ird)
    return fail(term::ddp_msn_no_buffer, s.raw);
  if (k > 0) {
    auto& slot = rr_ahead_[static_cast<std::size_t>(k)];
    if (slot) return fail(term::ddp_msn_range, s.raw);  // duplicate MSN
    slot = p;
    return;
  }
  accept_request(p);
  while (state_ == QpState::rts || state_ == QpState::closing) {
    ++rr_msn_;
    std::rotate(rr_ahead_.begin(), rr_ahead_.begin() + (rr_ahead_.empty() ? 0 : 1),
                rr_ahead_.end());
    if (!rr_ahead_.empty()) rr_ahead_.back().reset();
    if (rr_ahead_.empty() || !rr_ahead_.front()) break;
    const PendingRr next = *rr_ahead_.front();
    rr_ahead_.front().reset();
    accept_request(next);
  }
}

// The body of a QN 1 request, kept with the octets a Terminate copies.
bool Qp::parse_qn1_request(const Rx& s, PendingRr& p) {
  if (!s.h.last) return false;
  const bytes_view body = s.payload();
  if (s.h.opcode == RdmapOpcode::atomic_request) {
    p.atomic = true;
    if (body.size() != atomic_request_len || parse(body, p.ar) != WireError::ok) return false;
  } else if (body.size() != read_request_len || parse(body, p.rr) != WireError::ok) {
    return false;
  }
  p.ulpdu_len = static_cast<std::uint32_t>(std::min(s.raw.size(), p.bytes.size()));
  std::copy_n(s.raw.begin(), p.ulpdu_len, p.bytes.begin());
  return true;
}

void Qp::accept_request(const PendingRr& p) {
  const bytes_view raw(p.bytes.data(), p.ulpdu_len);
  IrqEntry e{p.rr};
  e.atomic = p.atomic;
  e.ar = p.ar;
  e.ulpdu_len = p.ulpdu_len;
  e.bytes = p.bytes;
  if (p.atomic) {
    // RFC 7306 section 5.2.1 rule 4: an operation it does not define is an error.
    if (!atomic_op_known(p.ar.op)) return fail(term::rdmap_op_unspecified, raw);
    std::uint8_t* dst = nullptr;
    const Check c = stags_.check(p.ar.stag, cfg_.pd, access_remote_atomic, p.ar.to, 8, &dst);
    if (c != Check::ok) return fail(source_cause(c), raw);
    // RFC 7306 sections 5.1 and 8.2: the target must be 64-bit aligned, else nothing is
    // changed and the stream ends with "Catastrophic error, localized to RDMAP Stream".
    if (reinterpret_cast<std::uintptr_t>(dst) % 8 != 0)
      return fail(term::rdmap_catastrophic_stream, raw);
  } else if (p.rr.size > 0) {
    const Check c =
        stags_.check(p.rr.src_stag, cfg_.pd, access_remote_read, p.rr.src_to, p.rr.size, nullptr);
    if (c != Check::ok) return fail(source_cause(c), raw);
  }
  irq_.push_back(e);
}

void Qp::rx_terminate(const Rx& s) {
  // RFC 5040 (Terminate Message) and verbs: a Terminate ends the stream; all WRs are flushed and
  // the WR it refers to completes with the matching remote error.
  Terminate t;
  const bytes_view pl = s.payload();
  if (parse(pl, t) == WireError::ok) {
    cause_ = t.cause;
  } else if (pl.size() >= 2) {
    cause_ = TerminateCause{static_cast<std::uint8_t>(pl[0] >> 4),
                            static_cast<std::uint8_t>(pl[0] & 0x0f), pl[1]};
  } else {
    cause_ = term::rdmap_op_unspecified;
  }
  term_received_ = true;
  state_ = QpState::error;
  flush(remote_status(*cause_));
}

}  // namespace esock::ddp
