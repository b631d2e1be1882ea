// Endpoint transmit side: FPDU-aligned, zero-copy framing into TCP records (RFC 5044
// sections 4, 5 and 9).
#include <algorithm>
#include <array>

#include "esock/utcp/endpoint.h"
#include "esock/utcp/tx_pool.h"

namespace esock::utcp {

namespace {
// An FPDU of this many octets holds at most 6 Markers: 3 + 2 * 6 = 15 pieces (framer.h).
constexpr std::uint32_t max_marked_fpdu = 6 * (mpa::kMarkerInterval - mpa::kMarkerLen);
static_assert(mpa::Framer::max_pieces(max_marked_fpdu, 1) <= tcp::Tcb::max_segment_pieces);
}  // namespace

void Endpoint::send_copy(bytes_view b) {
  if (b.empty() || conn_ == nullptr) return;
  // MPA Request/Reply/Reject: small, sent before any FPDU, while the send buffer is empty.
  const std::size_t n = conn_->send(b);
  stats_.tx_copied_bytes += n;
  if (n != b.size()) fail("internal error: the MPA frame does not fit the TCP send buffer");
}

void Endpoint::complete_acked() {
  const std::uint64_t done = pool_->released_through();
  if (done > acked_reported_) {
    acked_reported_ = done;
    qp_.on_acked(done);
  }
}

bool Endpoint::transmit() {
  if (conn_ == nullptr) return false;
  bool did = false;
  // RFC 5044 section 7.1 / RFC 6581: a responder holds its FPDUs until the initiator's
  // first one arrived. A Terminate (queue pair in error) still goes out.
  const bool held = hold_tx_until_rx_ && qp_.state() == ddp::QpState::rts;
  if (framer_ && !held && conn_->established())
    while (frame_one()) did = true;
  // After a Terminate, a rejected negotiation, the peer's close or ours: FIN once every
  // FPDU is queued (RFC 5040 section 5: the LLP stream is closed).
  const bool ending = close_requested_ || state_ == State::failed || state_ == State::closed;
  if (ending && !fin_sent_ && !qp_.tx_pending() && conn_->established()) {
    conn_->shutdown_send();
    fin_sent_ = true;
    did = true;
  }
  return did;
}

// One DDP segment as one FPDU as one TCP record: the ULPDU is sized so the whole FPDU fits
// the largest record TCP keeps in one segment (RFC 5044 section 9, MULPDU computed exactly
// for this stream position since Markers depend on it).
bool Endpoint::frame_one() {
  if (!qp_.tx_pending()) return false;
  std::uint32_t emss = conn_->tcb().max_record();
  // A segment gathers at most Tcb::max_segment_pieces buffer pieces, and every Marker inside
  // the payload costs two (itself and a split of the payload view): above ~3000 octets
  // (jumbo frames) smaller FPDUs keep each one whole in a segment, several per segment.
  if (framer_->markers()) emss = std::min<std::uint32_t>(emss, max_marked_fpdu);
  const std::size_t mulpdu = framer_->max_ulpdu(emss);
  if (mulpdu < ddp::min_mulpdu) {
    qp_.llp_error(ddp::term::llp_local_catastrophic);
    fail("the TCP segment size leaves no room for a DDP segment");
    return false;
  }
  qp_.set_mulpdu(static_cast<std::uint32_t>(mulpdu));
  // All or nothing: wait for room for the largest FPDU this position can carry.
  if (conn_->send_space() < framer_->fpdu_size(mulpdu)) return false;
  ddp::OutSegment seg;
  if (!qp_.next_segment(seg)) return false;

  // Enough for an FPDU of a 9000-octet MTU (scratch_size() / max_pieces() in framer.h).
  std::array<std::uint8_t, 1024> scratch;
  std::array<mpa::FramePiece, 64> pieces;
  const bytes_view hdr(seg.hdr.data(), seg.hdr_len);
  const std::size_t n = framer_->frame_pieces(hdr, {&seg.payload, 1}, scratch, pieces);
  if (n == 0) {
    // The queue pair handed out more than the MULPDU it was given: never send half an FPDU.
    qp_.llp_error(ddp::term::llp_local_catastrophic);
    fail("internal error: DDP segment exceeds the MULPDU");
    return false;
  }
  // Payload pieces reference the registered memory through a pin that reports the segment
  // done when TCP and the device have let go of it; framing octets are copied by TCP.
  BufRef pin;
  if (seg.payload.empty()) {
    pool_->done(seg.id);
  } else {
    pin = pool_->pin(seg.id);
  }
  std::array<tcp::TxPiece, 64> parts;
  for (std::size_t i = 0; i < n; ++i) {
    parts[i].data = pieces[i].bytes;
    parts[i].ref = pieces[i].owned ? BufRef{} : pin;
    (pieces[i].owned ? stats_.tx_copied_bytes : stats_.tx_payload_bytes) += pieces[i].bytes.size();
  }
  if (!conn_->send_record({parts.data(), n})) {
    qp_.llp_error(ddp::term::llp_local_catastrophic);
    fail("internal error: TCP refused an FPDU it had room for");
    return false;
  }
  ++stats_.fpdus_tx;
  return true;
}

}  // namespace esock::utcp
