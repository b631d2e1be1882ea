// Qp: RFC 7306's messages. Immediate Data rides the Send queue (QN 0, section 6.3) and
// completes like a Send; Atomic Requests ride the Read Request queue (QN 1) under the same
// ORD/IRD limits (section 5.2); Atomic Responses come back on QN 3, one per request, in
// request order (section 5.2.2 rule 8). The Responder performs an atomic when its response
// is generated, in IRQ order, so a Read Response before it is sent first and one after it
// waits (section 7's ordering table).
#include <cerrno>
#include <cstring>

#include "base/endian.h"
#include "base/seq32.h"
#include "ddp/atomic_ops.h"
#include "ddp/placement.h"
#include "ddp/qp.h"
#include "ddp/source_cause.h"

namespace esock::ddp {

using Check = StagTable::Check;

int Qp::post_send_imm(std::uint64_t wr_id, std::uint64_t imm, bool solicited) {
  if (!cfg_.rdmap_ext) return EOPNOTSUPP;
  SqWr wr;
  wr.wr_id = wr_id;
  wr.op = Opcode::send_imm;
  wr.solicited = solicited;
  wr.imm = imm;
  const int e = queue_sq(std::move(wr), {}, 0);
  if (e == 0) sq_.back().total = immediate_len;
  return e;
}

int Qp::post_write_imm(std::uint64_t wr_id, std::span<const Sge> sg, stag_t rkey,
                       std::uint64_t remote_to, std::uint64_t imm, bool solicited) {
  if (!cfg_.rdmap_ext) return EOPNOTSUPP;
  if (!can_post_sq()) return ENOTCONN;
  if (sq_.size() + 2 > cfg_.sq_depth) return ENOMEM;  // both halves or neither
  SqWr write;
  write.wr_id = wr_id;
  write.op = Opcode::write;
  write.rkey = rkey;
  write.remote_to = remote_to;
  write.silent = true;
  if (int e = queue_sq(std::move(write), sg, 0)) return e;
  SqWr wr;
  wr.wr_id = wr_id;
  wr.op = Opcode::write_imm;
  wr.solicited = solicited;
  wr.imm = imm;
  const int e = queue_sq(std::move(wr), {}, 0);  // cannot fail: room and state checked
  sq_.back().total = sq_[sq_.size() - 2].total;
  return e;
}

int Qp::post_atomic(std::uint64_t wr_id, const Sge& result, const AtomicRequest& req) {
  if (!cfg_.rdmap_ext) return EOPNOTSUPP;
  if (!can_post_sq()) return ENOTCONN;
  if (result.length != 8 || cfg_.ord == 0 || !atomic_op_known(req.op)) return EINVAL;
  SqWr wr;
  wr.wr_id = wr_id;
  wr.op = req.op == static_cast<std::uint8_t>(AtomicOp::fetch_add) ? Opcode::fetch_add
                                                                   : Opcode::cmp_swap;
  wr.atomic = req;
  wr.rkey = req.stag;
  wr.remote_to = req.to;
  wr.reads_left = 1;
  return queue_sq(std::move(wr), {&result, 1}, access_local_write);
}

void Qp::emit_immediate(OutSegment& out, SqWr& wr) {
  // RFC 7306 section 6.2: one untagged segment on QN 0, the next Send MSN, 8 octets.
  DdpHeader h;
  h.opcode = wr.solicited ? RdmapOpcode::immediate_data_se : RdmapOpcode::immediate_data;
  h.qn = qn_send;
  h.msn = tx_msn_[qn_send]++;
  start_segment(out, h);
  // In the header buffer, not a payload view: nothing outside the segment to keep alive.
  store_be64(out.hdr.data() + out.hdr_len, wr.imm);
  out.hdr_len += immediate_len;
  wr.started = true;
  wr.handed_out = true;
  wr.last_seg_id = out.id;
  if (!complete_on_ack_) wr.done = true;
  ++sq_next_;
  drain_sq();
}

void Qp::emit_atomic_request(OutSegment& out, SqWr& wr) {
  AtomicRequest r = wr.atomic;
  r.req_id = next_req_id_++;
  DdpHeader h;
  h.opcode = RdmapOpcode::atomic_request;
  h.qn = qn_read_request;
  h.msn = tx_msn_[qn_read_request]++;  // one MSN sequence with the Read Requests
  start_segment(out, h);
  out.hdr_len += emit(r, mut_bytes(out.hdr).subspan(out.hdr_len));
  const Sge& res = wr.sg[0];
  OrqEntry e{&wr, res.lkey, static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(res.addr)),
             8};
  e.atomic = true;
  e.req_id = r.req_id;
  e.resp_msn = ar_msn_++;  // section 5.2.2: the k-th response answers the k-th request
  orq_.push_back(e);
  wr.started = true;
  wr.reads_issued = 1;
  ++sq_next_;
}

bool Qp::emit_atomic_response(OutSegment& out) {
  const IrqEntry e = irq_.front();
  irq_.pop_front();  // frees its IRD slot
  // Checked again now: the region may have been deregistered since the request came.
  std::uint8_t* dst = nullptr;
  const Check c = stags_.check(e.ar.stag, cfg_.pd, access_remote_atomic, e.ar.to, 8, &dst);
  if (c != Check::ok || reinterpret_cast<std::uintptr_t>(dst) % 8 != 0) {
    fail(c != Check::ok ? source_cause(c) : term::rdmap_catastrophic_stream,
         bytes_view(e.bytes.data(), e.ulpdu_len));
    return next_segment(out);  // the Terminate
  }
  AtomicResponse r;
  r.req_id = e.ar.req_id;
  r.original = apply_atomic(reinterpret_cast<std::uint64_t*>(dst), e.ar);
  DdpHeader h;
  h.opcode = RdmapOpcode::atomic_response;
  h.qn = qn_atomic_response;
  h.msn = tx_msn_[qn_atomic_response]++;
  start_segment(out, h);
  out.hdr_len += emit(r, mut_bytes(out.hdr).subspan(out.hdr_len));
  return true;
}

void Qp::rx_atomic_response(const Rx& s) {
  const DdpHeader& h = s.h;
  if (h.mo != 0) return fail_rx(term::ddp_invalid_mo, s);
  AtomicResponse r;
  if (!h.last || s.placed || parse(s.payload(), r) != WireError::ok)
    return fail_rx(term::rdmap_op_unspecified, s);
  // The MSN names the request it answers (section 5.2.2); segments may come in any order.
  // RFC 5041 section 7.2: an MSN already answered is out of range, one never asked for finds
  // no buffer.
  std::size_t i = 0;
  while (i < orq_.size() && !(orq_[i].atomic && orq_[i].resp_msn == h.msn)) ++i;
  if (i == orq_.size()) {
    const bool old = seq_diff(h.msn, ar_msn_) < 0 && seq_diff(h.msn, ar_msn_ - cfg_.ord) >= 0;
    return fail_rx(old ? term::ddp_msn_range : term::ddp_msn_no_buffer, s);
  }
  OrqEntry& e = orq_[i];
  if (e.last_seen) return fail_rx(term::ddp_msn_range, s);  // a second answer
  // Section 5.2.2 rule 7: a response that does not answer the request is an error.
  if (r.req_id != e.req_id) return fail_rx(term::rdmap_op_unspecified, s);
  std::uint8_t* dst = nullptr;
  if (stags_.check(e.sink_stag, cfg_.pd, access_local_write, e.sink_to, 8, &dst) != Check::ok) {
    if (e.wr != nullptr) e.wr->status = Status::local_protection_error;
    return fail(term::rdmap_catastrophic, {});  // our result buffer went away: a local error
  }
  std::memcpy(dst, &r.original, 8);  // host byte order (the verbs convention)
  e.placed = 8;
  e.last_seen = true;
  complete_reads();
}

// The 8 octets an Immediate Data message left in its receive buffer, read big-endian.
std::uint64_t Qp::immediate_of(const RecvWr& wr) const {
  std::uint8_t v[immediate_len] = {};
  std::size_t got = 0;
  for (const Sge& s : wr.sg) {
    const std::size_t n = std::min<std::size_t>(s.length, immediate_len - got);
    if (n > 0) std::memcpy(v + got, s.addr, n);
    got += n;
    if (got == immediate_len) break;
  }
  return load_be64(v);
}

}  // namespace esock::ddp
