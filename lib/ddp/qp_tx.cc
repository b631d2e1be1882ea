// Qp transmit side: DDP segmentation of RDMAP messages (RFC 5041 section 5.1, RFC 5040
// section 5). One message is segmented to completion before the next starts, because
// receivers such as Linux siw do not accept interleaved messages of the same kind.
#include <algorithm>

#include "ddp/qp.h"
#include "ddp/source_cause.h"

namespace esock::ddp {

using Check = StagTable::Check;

bool Qp::tx_pending() const {
  if (term_pending_) return true;
  if (state_ != QpState::rts && state_ != QpState::closing) return false;
  if (rtr_to_send_) return true;
  if (rtr_expected_) return false;  // RFC 6581: the responder waits for the RTR
  if (cur_.kind != Cursor::Kind::none || !irq_.empty()) return true;
  if (sq_next_ < sq_.size()) {
    const SqWr& wr = sq_[sq_next_];
    return !uses_ord(wr.op) || orq_.size() < cfg_.ord;
  }
  return false;
}

void Qp::start_segment(OutSegment& out, const DdpHeader& h) {
  out.hdr_len = emit(h, out.hdr);
  out.payload = {};
  out.id = next_seg_id_++;
}

bool Qp::next_segment(OutSegment& out) {
  if (term_pending_) {
    // RFC 5040 section 4.8: a Terminate is one untagged segment on QN 2, MO 0, L set.
    DdpHeader h;
    h.opcode = RdmapOpcode::terminate;
    h.qn = qn_terminate;
    h.msn = tx_msn_[qn_terminate]++;
    start_segment(out, h);
    out.payload = bytes_view(term_buf_.data(), term_len_);
    term_pending_ = false;
    state_ = QpState::error;
    return true;
  }
  if (state_ != QpState::rts && state_ != QpState::closing) return false;
  if (rtr_to_send_) {
    // RFC 6581: a zero-length Send, Write or Read Request as the first FPDU.
    DdpHeader h;
    switch (*rtr_to_send_) {
      case RtrOp::send:
        h.opcode = RdmapOpcode::send;
        h.qn = qn_send;
        h.msn = tx_msn_[qn_send]++;
        start_segment(out, h);
        break;
      case RtrOp::write:
        // STag 1, TO 0, as Linux siw sends it; zero-length, so never validated.
        h.tagged = true;
        h.opcode = RdmapOpcode::write;
        h.stag = 1;
        start_segment(out, h);
        break;
      case RtrOp::read: {
        h.opcode = RdmapOpcode::read_request;
        h.qn = qn_read_request;
        h.msn = tx_msn_[qn_read_request]++;
        start_segment(out, h);
        out.hdr_len += emit(ReadRequest{}, mut_bytes(out.hdr).subspan(out.hdr_len));
        orq_.push_back(OrqEntry{});  // answered by a zero-length Read Response
        break;
      }
    }
    rtr_to_send_.reset();
    return true;
  }
  if (rtr_expected_) return false;
  if (cur_.kind == Cursor::Kind::resp) return emit_resp(out);
  if (cur_.kind == Cursor::Kind::sq) return emit_sq(out);
  // Read Responses first: they answer the peer's ORD credit (RFC 5040, RDMA Read and ORD/IRD).
  if (!irq_.empty()) {
    if (irq_.front().atomic) return emit_atomic_response(out);
    cur_ = Cursor{Cursor::Kind::resp};
    return emit_resp(out);
  }
  if (sq_next_ < sq_.size()) {
    SqWr& wr = sq_[sq_next_];
    if (uses_ord(wr.op)) {
      // ORD: a Read beyond it waits at the head of the SQ (later WRs wait behind it).
      if (orq_.size() >= cfg_.ord) return false;
      if (wr.op == Opcode::read)
        emit_read_request(out, wr);
      else
        emit_atomic_request(out, wr);
      return true;
    }
    if (wr.op == Opcode::send_imm || wr.op == Opcode::write_imm) {
      emit_immediate(out, wr);
      return true;
    }
    cur_ = Cursor{Cursor::Kind::sq};
    return emit_sq(out);
  }
  return false;
}

void Qp::emit_read_request(OutSegment& out, SqWr& wr) {
  const Sge& s = wr.sg[wr.reads_issued];
  std::uint64_t src_off = 0;
  for (std::size_t i = 0; i < wr.reads_issued; ++i) src_off += wr.sg[i].length;
  ReadRequest rr;
  rr.sink_stag = s.lkey;
  rr.sink_to = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(s.addr));
  rr.size = s.length;
  rr.src_stag = wr.rkey;
  rr.src_to = wr.remote_to + src_off;
  DdpHeader h;
  h.opcode = RdmapOpcode::read_request;
  h.qn = qn_read_request;
  h.msn = tx_msn_[qn_read_request]++;
  start_segment(out, h);
  out.hdr_len += emit(rr, mut_bytes(out.hdr).subspan(out.hdr_len));
  orq_.push_back(OrqEntry{&wr, rr.sink_stag, rr.sink_to, rr.size, 0, false});
  wr.started = true;
  if (++wr.reads_issued == wr.sg.size()) ++sq_next_;
}

bool Qp::emit_sq(OutSegment& out) {
  SqWr& wr = sq_[sq_next_];
  while (cur_.sge < wr.sg.size() && cur_.sge_off == wr.sg[cur_.sge].length) {
    ++cur_.sge;
    cur_.sge_off = 0;
  }
  const bool tagged = wr.op == Opcode::write;
  const std::uint32_t room =
      cfg_.mulpdu - static_cast<std::uint32_t>(tagged ? tagged_hdr_len : untagged_hdr_len);
  bytes_view pl;
  stag_t lkey = 0;
  if (cur_.sge < wr.sg.size()) {
    const Sge& s = wr.sg[cur_.sge];
    const std::uint32_t n = std::min(s.length - cur_.sge_off, room);
    // The lkey was checked at post time; checked again because the owner may have
    // deregistered the region since (RAWMODE close, esock_dereg_mr) and freed it. Ours is
    // the fault, so the WR completes with a local protection error and the stream ends
    // with a catastrophic RDMAP Terminate (RFC 5040 section 7: a local error).
    const auto to = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(s.addr));
    if (stags_.check(s.lkey, cfg_.pd, 0, to + cur_.sge_off, n, nullptr) != Check::ok) {
      wr.status = Status::local_protection_error;
      fail(term::rdmap_catastrophic, {});
      return next_segment(out);  // the Terminate
    }
    pl = bytes_view(s.addr + cur_.sge_off, n);
    lkey = s.lkey;
  }
  const auto n = static_cast<std::uint32_t>(pl.size());
  DdpHeader h;
  h.tagged = tagged;
  h.last = cur_.msg_off + n == wr.total;
  if (tagged) {
    // RFC 5041 section 6.2: each segment carries the TO of its first payload octet.
    h.opcode = RdmapOpcode::write;
    h.stag = wr.rkey;
    h.to = wr.remote_to + cur_.msg_off;
  } else {
    // RFC 5040 section 4.1 / 5.3: SE and Invalidate select the Send opcode.
    if (wr.inv != 0)
      h.opcode = wr.solicited ? RdmapOpcode::send_se_invalidate : RdmapOpcode::send_invalidate;
    else
      h.opcode = wr.solicited ? RdmapOpcode::send_se : RdmapOpcode::send;
    h.rsvd_ulp = wr.inv;
    h.qn = qn_send;
    h.msn = tx_msn_[qn_send];
    h.mo = cur_.msg_off;
  }
  start_segment(out, h);
  out.payload = pl;
  if (n > 0) note_sourced(lkey, out.id);
  cur_.sge_off += n;
  cur_.msg_off += n;
  wr.started = true;
  if (h.last) {
    if (!tagged) ++tx_msn_[qn_send];
    wr.handed_out = true;
    wr.last_seg_id = out.id;
    if (!complete_on_ack_) wr.done = true;
    cur_ = Cursor{};
    ++sq_next_;
    drain_sq();
  }
  return true;
}

bool Qp::emit_resp(OutSegment& out) {
  IrqEntry& e = irq_.front();
  const std::uint32_t room = cfg_.mulpdu - static_cast<std::uint32_t>(tagged_hdr_len);
  const std::uint32_t n = std::min(e.rr.size - e.sent, room);
  // The source is checked again for every segment (RFC 5040 section 4.4's checks): the
  // owner may have deregistered or invalidated the region since the request arrived (an
  // ESTP writer released by RDMADONE, esock_dereg_mr), and its memory may be gone. Then
  // the stream ends with the Terminate the request would have got had it come now.
  std::uint8_t* src = nullptr;
  if (n > 0) {
    const Check c =
        stags_.check(e.rr.src_stag, cfg_.pd, access_remote_read, e.rr.src_to + e.sent, n, &src);
    if (c != Check::ok) {
      const IrqEntry req = e;  // fail() clears the queue
      fail(source_cause(c), bytes_view(req.bytes.data(), req.ulpdu_len));
      return next_segment(out);  // the Terminate
    }
  }
  // RFC 5040 section 4.5: the Read Response targets the Data Sink STag/TO of the request.
  DdpHeader h;
  h.tagged = true;
  h.opcode = RdmapOpcode::read_response;
  h.stag = e.rr.sink_stag;
  h.to = e.rr.sink_to + e.sent;
  h.last = e.sent + n == e.rr.size;
  start_segment(out, h);
  out.payload = n ? bytes_view(src, n) : bytes_view{};
  if (n > 0) note_sourced(e.rr.src_stag, out.id);
  e.sent += n;
  if (h.last) {
    irq_.pop_front();  // frees one IRD slot
    cur_ = Cursor{};
  }
  return true;
}

// Octets handed to the transport by reference stay readable by it until on_acked() (RFC 5040
// says nothing of buffers; the verbs contract does: the memory is the owner's again only
// when nothing can read it). One record per run of segments from the same region.
void Qp::note_sourced(stag_t stag, std::uint64_t seg_id) {
  if (!complete_on_ack_) return;  // the transport copied them
  if (!sourced_.empty() && sourced_.back().stag == stag && !sourced_.back().sealed) {
    sourced_.back().last_seg_id = seg_id;
  } else {
    sourced_.push_back(Sourced{seg_id, stag});
  }
}

}  // namespace esock::ddp
