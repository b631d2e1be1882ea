// Engine transmit side: one DDP segment as one FPDU as one transport record, sized so the
// FPDU fills at most one segment (RFC 5044 sections 4, 5 and 9).
#include "esock/rnic/engine.h"

namespace esock::rnic {

bool Engine::transmit() {
  if (!framer_) return false;
  // RFC 5044 section 7.1 / RFC 6581: a responder holds its FPDUs until the initiator's
  // first one arrived. A Terminate (queue pair in error) still goes out.
  if (hold_tx_until_rx_ && qp_.state() == ddp::QpState::rts) return false;
  bool did = false;
  while (frame_one()) did = true;
  return did;
}

void Engine::on_acked(std::uint64_t seg_id) {
  qp_.on_acked(seg_id);
}

bool Engine::frame_one() {
  if (!qp_.tx_pending()) return false;
  // RFC 5044 section 4.1 MULPDU, computed exactly for this stream position (Markers make it
  // position dependent), so the whole FPDU fits the transport's segment.
  const std::size_t emss = tx_.max_fpdu(framer_->markers());
  if (emss == 0) return false;  // the transport cannot send now
  const std::size_t mulpdu = framer_->max_ulpdu(emss);
  if (mulpdu < ddp::min_mulpdu) {
    local_error("the transport's segment size leaves no room for a DDP segment");
    return false;
  }
  qp_.set_mulpdu(static_cast<std::uint32_t>(mulpdu));
  // All or nothing: wait for room for the largest FPDU this position can carry.
  if (!tx_.can_send(framer_->fpdu_size(mulpdu))) return false;
  ddp::OutSegment seg;
  if (!qp_.next_segment(seg)) return false;

  const bytes_view hdr(seg.hdr.data(), seg.hdr_len);
  const std::size_t n = framer_->frame_pieces(hdr, {&seg.payload, 1}, tx_scratch_, tx_pieces_);
  if (n == 0) {
    // The queue pair handed out more than the MULPDU it was given: never send half an FPDU.
    local_error("internal error: DDP segment exceeds the MULPDU");
    return false;
  }
  const std::span<const mpa::FramePiece> pieces(tx_pieces_.data(), n);
  for (const mpa::FramePiece& p : pieces)
    (p.owned ? stats_.tx_copied_bytes : stats_.tx_payload_bytes) += p.bytes.size();
  if (!tx_.send_fpdu(pieces, seg.id)) {
    local_error("internal error: the transport refused an FPDU it had room for");
    return false;
  }
  ++stats_.fpdus_tx;
  return true;
}

}  // namespace esock::rnic
