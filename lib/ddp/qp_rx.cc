// Qp receive side: validation and placement of DDP segments (RFC 5041 sections 5-7) and
// RDMAP message processing (RFC 5040 sections 5-7). Segments are placed as they arrive,
// in any order; messages complete in order per queue (RFC 5041 sections 5.3 and 5.4):
// QN 0 by MSN, Read Responses in the order the Read Requests were sent.
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/seq32.h"
#include "ddp/qp.h"

namespace esock::ddp {
namespace {

using Check = StagTable::Check;

// Tagged placement failures (RFC 5041 section 7.2). DDP has no access-rights code, so
// that one is reported by RDMAP (RFC 5040 section 7, Remote Protection Error).
TerminateCause tagged_cause(Check c) {
  switch (c) {
    case Check::invalid_stag:
      return term::ddp_invalid_stag;
    case Check::wrong_pd:
      return term::ddp_stag_not_associated;
    case Check::access:
      return term::rdmap_access_rights;
    case Check::to_wrap:
      return term::ddp_to_wrap;
    default:
      return term::ddp_base_bounds;
  }
}

// Read Request Data Source validation is RDMAP's (RFC 5040 section 7, Remote
// Protection Error codes).
TerminateCause source_cause(Check c) {
  switch (c) {
    case Check::invalid_stag:
      return term::rdmap_invalid_stag;
    case Check::wrong_pd:
      return term::rdmap_stag_not_associated;
    case Check::access:
      return term::rdmap_access_rights;
    case Check::to_wrap:
      return term::rdmap_to_wrap;
    default:
      return term::rdmap_base_bounds;
  }
}

// What a received Terminate means for the WR it hit (verbs completion statuses).
Status remote_status(TerminateCause c) {
  if (c.type == 1 && (c.layer == term::layer_rdmap || c.layer == term::layer_ddp))
    return Status::remote_access_error;
  if (c.layer == term::layer_ddp && c.type == 2) return Status::remote_invalid_request_error;
  return Status::remote_operation_error;
}

void scatter(const std::vector<Sge>& sg, std::uint64_t off, bytes_view pl) {
  for (const Sge& s : sg) {
    if (pl.empty()) return;
    if (off >= s.length) {
      off -= s.length;
      continue;
    }
    const std::size_t n = std::min<std::size_t>(s.length - off, pl.size());
    std::memcpy(s.addr + off, pl.data(), n);
    pl = pl.subspan(n);
    off = 0;
  }
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
  if (rtr_expected_) {
    // RFC 6581: the first FPDU must be the RTR that was negotiated.
    if (!rx_rtr(v)) fail(term::llp_no_matching_rtr, {});
    return;
  }
  const DdpHeader& h = v.hdr();
  if (h.tagged) {
    if (h.opcode == RdmapOpcode::write)
      rx_write(v);
    else
      rx_read_response(v);
    return;
  }
  // RFC 5041 section 7.2: only the queues RDMAP defines exist (RFC 5040 section 5.1).
  if (h.qn > qn_terminate) return fail(term::ddp_invalid_qn, v.bytes());
  const bool right_queue = opcode_is_send(h.opcode)                ? h.qn == qn_send
                           : h.opcode == RdmapOpcode::read_request ? h.qn == qn_read_request
                                                                   : h.qn == qn_terminate;
  if (!right_queue) return fail(term::rdmap_unexpected_opcode, v.bytes());
  if (opcode_is_send(h.opcode)) return rx_send(v);
  if (h.opcode == RdmapOpcode::read_request) return rx_read_request(v);
  rx_terminate(v);
}

bool Qp::rx_rtr(const SegmentView& v) {
  const DdpHeader& h = v.hdr();
  const bool zero = v.payload().empty();
  bool ok = false;
  switch (*rtr_expected_) {
    case Rtr::send:
      ok = !h.tagged && h.opcode == RdmapOpcode::send && h.qn == qn_send && h.msn == rq_msn_ &&
           h.last && h.mo == 0 && zero;
      if (ok) ++rq_msn_;  // MSN 1 is the RTR's: no receive WR, no completion
      break;
    case Rtr::write:
      ok = h.tagged && h.opcode == RdmapOpcode::write && h.last && zero;
      break;
    case Rtr::read: {
      ReadRequest rr;
      ok = !h.tagged && h.opcode == RdmapOpcode::read_request && h.qn == qn_read_request &&
           h.msn == rr_msn_ && h.last && h.mo == 0 && v.payload().size() == read_request_len &&
           parse(v.payload(), rr) == WireError::ok && rr.size == 0 && cfg_.ird > 0;
      if (ok) {
        irq_.push_back(IrqEntry{rr, nullptr, 0});  // the zero-length Read Response
        ++rr_msn_;
      }
      break;
    }
  }
  if (ok) rtr_expected_.reset();
  return ok;
}

void Qp::rx_write(const SegmentView& v) {
  const DdpHeader& h = v.hdr();
  const bytes_view pl = v.payload();
  // RFC 5041 section 7: validation applies to non-zero-length tagged segments.
  if (pl.empty()) return;
  std::uint8_t* dst = nullptr;
  const Check c = stags_.check(h.stag, cfg_.pd, access_remote_write, h.to,
                               static_cast<std::uint32_t>(pl.size()), &dst);
  if (c != Check::ok) return fail(tagged_cause(c), v.bytes());
  std::memcpy(dst, pl.data(), pl.size());
}

void Qp::rx_read_response(const SegmentView& v) {
  const DdpHeader& h = v.hdr();
  const bytes_view pl = v.payload();
  const auto len = static_cast<std::uint32_t>(pl.size());
  // RFC 5040, RDMA Read and ORD/IRD: a Read Response without an outstanding Read Request.
  if (orq_.empty()) return fail(term::rdmap_unexpected_opcode, v.bytes());
  OrqEntry* e = nullptr;
  bool stag_known = false;
  for (OrqEntry& o : orq_) {
    if (o.last_seen && o.placed == o.size) continue;
    if (o.sink_stag != h.stag) continue;
    stag_known = true;
    if (h.to >= o.sink_to && len <= o.size && h.to - o.sink_to <= o.size - len) {
      e = &o;
      break;
    }
  }
  if (e == nullptr)
    return fail(stag_known ? term::ddp_base_bounds : term::ddp_invalid_stag, v.bytes());
  if (len > 0) {
    std::uint8_t* dst = nullptr;
    const Check c = stags_.check(h.stag, cfg_.pd, access_local_write, h.to, len, &dst);
    if (c != Check::ok) return fail(tagged_cause(c), v.bytes());
    std::memcpy(dst, pl.data(), len);
    e->placed += len;
  }
  if (h.last) {
    // The last segment must end exactly where the requested sink range ends.
    if (h.to - e->sink_to + len != e->size) return fail(term::ddp_base_bounds, v.bytes());
    e->last_seen = true;
  }
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

void Qp::rx_send(const SegmentView& v) {
  const DdpHeader& h = v.hdr();
  const bytes_view pl = v.payload();
  // RFC 5041 section 7.2: the MSN must name a message not yet delivered and a posted
  // buffer; MO + length must fit that buffer.
  const std::int32_t k = seq_diff(h.msn, rq_msn_);
  if (k < 0 || static_cast<std::uint32_t>(k) >= std::max<std::uint32_t>(cfg_.rq_depth, 1))
    return fail(term::ddp_msn_range, v.bytes());
  if (static_cast<std::size_t>(k) >= rq_.size()) return fail(term::ddp_msn_no_buffer, v.bytes());
  RecvWr& wr = rq_[static_cast<std::size_t>(k)];
  const std::uint64_t end = std::uint64_t{h.mo} + pl.size();
  if (end > wr.capacity) {
    wr.status = Status::local_length_error;
    return fail(term::ddp_message_too_long, v.bytes());
  }
  // A segment beyond the end the Last segment fixed, or a second Last segment that
  // disagrees, has an impossible MO.
  if ((wr.last_seen && end > wr.total) || (h.last && wr.last_seen && end != wr.total))
    return fail(term::ddp_invalid_mo, v.bytes());
  if (h.last) {
    wr.last_seen = true;
    wr.total = end;
  }
  scatter(wr.sg, h.mo, pl);
  wr.placed += pl.size();
  wr.opcode = h.opcode;
  wr.inv = h.rsvd_ulp;
  if (wr.last_seen && wr.placed > wr.total) return fail(term::ddp_invalid_mo, v.bytes());
  deliver_sends(v);
}

void Qp::deliver_sends(const SegmentView& v) {
  while (!rq_.empty() && rq_.front().last_seen && rq_.front().placed == rq_.front().total) {
    RecvWr& wr = rq_.front();
    Completion c{
        wr.wr_id, Opcode::recv, Status::success, static_cast<std::uint32_t>(wr.total), false, 0};
    c.solicited = wr.opcode == RdmapOpcode::send_se || wr.opcode == RdmapOpcode::send_se_invalidate;
    if (wr.opcode == RdmapOpcode::send_invalidate || wr.opcode == RdmapOpcode::send_se_invalidate) {
      // RFC 5040, Send with Invalidate: invalidate before the message is delivered.
      const int r = stags_.invalidate(wr.inv, cfg_.pd);
      if (r != 0) {
        wr.status = Status::remote_invalid_request_error;
        return fail(
            r == EACCES ? term::rdmap_prot_cannot_invalidate : term::rdmap_op_cannot_invalidate,
            v.bytes());
      }
      c.invalidated_stag = wr.inv;
    }
    rcq_.push(c);
    rq_.pop_front();
    ++rq_msn_;
  }
}

void Qp::rx_read_request(const SegmentView& v) {
  const DdpHeader& h = v.hdr();
  // RFC 5040 section 4.4: a Read Request is one segment carrying exactly its header.
  if (h.mo != 0) return fail(term::ddp_invalid_mo, v.bytes());
  ReadRequest rr;
  if (!h.last || v.payload().size() != read_request_len || parse(v.payload(), rr) != WireError::ok)
    return fail(term::rdmap_op_unspecified, v.bytes());
  const std::int32_t k = seq_diff(h.msn, rr_msn_);
  if (k < 0) return fail(term::ddp_msn_range, v.bytes());
  // IRD is the number of QN 1 buffers (RFC 5040, RDMA Read and ORD/IRD): one more outstanding
  // Read Request finds no buffer.
  if (incoming_reads() + static_cast<std::size_t>(k) >= cfg_.ird)
    return fail(term::ddp_msn_no_buffer, v.bytes());
  if (k > 0) {
    auto& slot = rr_ahead_[static_cast<std::size_t>(k)];
    if (slot) return fail(term::ddp_msn_range, v.bytes());  // duplicate MSN
    PendingRr p;
    p.rr = rr;
    p.ulpdu_len = static_cast<std::uint32_t>(v.bytes().size());
    std::copy_n(v.bytes().begin(), p.bytes.size(), p.bytes.begin());
    slot = p;
    return;
  }
  accept_read_request(rr, v.bytes());
  while (state_ == QpState::rts || state_ == QpState::closing) {
    ++rr_msn_;
    std::rotate(rr_ahead_.begin(), rr_ahead_.begin() + (rr_ahead_.empty() ? 0 : 1),
                rr_ahead_.end());
    if (!rr_ahead_.empty()) rr_ahead_.back().reset();
    if (rr_ahead_.empty() || !rr_ahead_.front()) break;
    const PendingRr p = *rr_ahead_.front();
    rr_ahead_.front().reset();
    accept_read_request(p.rr, bytes_view(p.bytes.data(), p.ulpdu_len));
  }
}

void Qp::accept_read_request(const ReadRequest& rr, bytes_view raw) {
  std::uint8_t* src = nullptr;
  if (rr.size > 0) {
    const Check c =
        stags_.check(rr.src_stag, cfg_.pd, access_remote_read, rr.src_to, rr.size, &src);
    if (c != Check::ok) return fail(source_cause(c), raw);
  }
  irq_.push_back(IrqEntry{rr, src, 0});
}

void Qp::rx_terminate(const SegmentView& v) {
  // RFC 5040 (Terminate Message) and verbs: a Terminate ends the stream; all WRs are flushed and
  // the WR it refers to completes with the matching remote error.
  Terminate t;
  const bytes_view pl = v.payload();
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
