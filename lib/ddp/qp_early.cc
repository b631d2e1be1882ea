// Qp data-segment validation and early (out-of-order) placement. RFC 5041 section 5 lets a
// Data Sink place a segment whenever it arrives and requires only Delivery to be in order,
// so a transport that sees segments above a hole (lib/tcp's on_out_of_order) may place
// them at once and keep just the sequence range. The checks here are the ones on_segment
// makes (qp_rx.cc calls them too), split from every state change: place_payload runs them
// and copies, on_placed_segment later runs the whole in-order path without the copy.
#include <algorithm>

#include "base/seq32.h"
#include "ddp/placement.h"
#include "ddp/qp.h"
#include "ddp/wire_ext.h"

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

// The segments whose payload is data for a buffer (RFC 5040 section 5): everything else
// (Read Request, Terminate) is consumed by RDMAP itself and needs its payload in order.
bool is_data_segment(const DdpHeader& h) {
  return h.tagged || (opcode_is_send(h.opcode) && h.qn == qn_send);
}

}  // namespace

Qp::Target Qp::check_write(const DdpHeader& h, std::uint32_t len) const {
  Target t;
  const Check c = stags_.check(h.stag, cfg_.pd, access_remote_write, h.to, len, &t.dst);
  if (c != Check::ok) t.cause = tagged_cause(c);
  return t;
}

Qp::Target Qp::check_read_response(const DdpHeader& h, std::uint32_t len) const {
  Target t;
  // RFC 5040, RDMA Read and ORD/IRD: a Read Response without an outstanding Read Request.
  if (orq_.empty()) {
    t.cause = term::rdmap_unexpected_opcode;
    return t;
  }
  // The first unfinished Read Request whose sink range holds the segment.
  bool stag_known = false, found = false;
  for (std::size_t i = 0; i < orq_.size() && !found; ++i) {
    const OrqEntry& o = orq_[i];
    if ((o.last_seen && o.placed == o.size) || o.atomic || o.sink_stag != h.stag) continue;
    stag_known = true;
    if (h.to >= o.sink_to && len <= o.size && h.to - o.sink_to <= o.size - len) {
      t.index = i;
      found = true;
    }
  }
  if (!found) {
    t.cause = stag_known ? term::ddp_base_bounds : term::ddp_invalid_stag;
    return t;
  }
  const OrqEntry& e = orq_[t.index];
  if (len > 0) {
    const Check c = stags_.check(h.stag, cfg_.pd, access_local_write, h.to, len, &t.dst);
    if (c != Check::ok) {
      t.cause = tagged_cause(c);
      return t;
    }
  }
  // The last segment must end exactly where the requested sink range ends.
  if (h.last && h.to - e.sink_to + len != e.size) t.cause = term::ddp_base_bounds;
  return t;
}

Qp::Target Qp::check_send(const DdpHeader& h, std::uint32_t len) const {
  Target t;
  // RFC 5041 section 7.2: the MSN must name a message not yet delivered and a posted
  // buffer; MO + length must fit that buffer.
  const std::int32_t k = seq_diff(h.msn, rq_msn_);
  if (k < 0 || static_cast<std::uint32_t>(k) >= std::max<std::uint32_t>(cfg_.rq_depth, 1)) {
    t.cause = term::ddp_msn_range;
    return t;
  }
  t.index = static_cast<std::size_t>(k);
  if (t.index >= rq_.size()) {
    t.cause = term::ddp_msn_no_buffer;
    return t;
  }
  // RFC 7306 section 6.3: Immediate Data is one segment of exactly 8 octets.
  if (opcode_is_immediate(h.opcode) && (h.mo != 0 || !h.last || len != immediate_len)) {
    t.cause = term::rdmap_op_unspecified;
    return t;
  }
  const RecvWr& wr = rq_[t.index];
  const std::uint64_t end = std::uint64_t{h.mo} + len;
  if (end > wr.capacity) {
    t.cause = term::ddp_message_too_long;
    t.length_error = true;
    return t;
  }
  // A segment beyond the end the Last segment fixed, a second Last segment that disagrees,
  // or more octets than the message holds (a segment seen twice) has an impossible MO.
  const bool last_seen = wr.last_seen || h.last;
  const std::uint64_t total = h.last ? end : wr.total;
  if ((wr.last_seen && end > wr.total) || (h.last && wr.last_seen && end != wr.total) ||
      (last_seen && wr.placed + len > total))
    t.cause = term::ddp_invalid_mo;
  return t;
}

bool Qp::place_payload(bytes_view header, std::span<const bytes_view> payload) {
  if (state_ != QpState::rts && state_ != QpState::closing) return false;
  // RFC 6581: before the RTR, the first segment decides the stream; nothing is placed.
  if (rtr_expected_) return false;
  DdpHeader h;
  if (parse(header, h) != WireError::ok || header.size() != h.length()) return false;
  if (!is_data_segment(h)) return false;
  const std::uint64_t n = detail::total_size(payload);
  if (n == 0 || n > UINT32_MAX) return false;
  const auto len = static_cast<std::uint32_t>(n);
  if (h.tagged) {
    const Target t =
        h.opcode == RdmapOpcode::write ? check_write(h, len) : check_read_response(h, len);
    if (t.cause) return false;
    detail::copy_pieces(t.dst, payload);
    return true;
  }
  const Target t = check_send(h, len);
  if (t.cause) return false;
  detail::scatter(rq_[t.index].sg, h.mo, payload);
  return true;
}

void Qp::on_placed_segment(bytes_view header, std::uint32_t payload_len) {
  if (state_ != QpState::rts && state_ != QpState::closing) return;
  DdpHeader h;
  if (parse(header, h) != WireError::ok || header.size() != h.length() || !is_data_segment(h))
    return fail(term::rdmap_catastrophic, {});  // not a segment place_payload() accepted
  Rx s;
  s.h = h;
  s.raw = header;
  s.ulpdu_len = header.size() + payload_len;
  s.len = payload_len;
  s.placed = true;
  dispatch(s);
}

}  // namespace esock::ddp
