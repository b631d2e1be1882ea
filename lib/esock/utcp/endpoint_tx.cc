// Endpoint transmit side: the engine's FPDUs as TCP records, payload by reference to the
// registered memory (zero-copy), and FIN once everything is framed.
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

bool Endpoint::send_frame(bytes_view frame) {
  if (frame.empty() || conn_ == nullptr) return true;
  // MPA Request/Reply/Reject: small, sent before any FPDU, while the send buffer is empty.
  return conn_->send(frame) == frame.size();
}

// One FPDU as one TCP record: sized to the largest record TCP keeps in one segment
// (tcp::Tcb::max_record(), the SMSS).
std::size_t Endpoint::max_fpdu(bool markers) const {
  if (conn_ == nullptr || !conn_->established()) return 0;
  std::size_t emss = conn_->tcb().max_record();
  // A segment gathers at most Tcb::max_segment_pieces buffer pieces, and every Marker inside
  // the payload costs two (itself and a split of the payload view): above ~3000 octets
  // (jumbo frames) smaller FPDUs keep each one whole in a segment, several per segment.
  if (markers) emss = std::min<std::size_t>(emss, max_marked_fpdu);
  return emss;
}

bool Endpoint::can_send(std::size_t fpdu_len) const {
  return conn_ != nullptr && conn_->send_space() >= fpdu_len;
}

bool Endpoint::send_fpdu(std::span<const mpa::FramePiece> pieces, std::uint64_t seg_id) {
  // Payload pieces reference the registered memory through a pin that reports the segment
  // done when TCP and the device have let go of it; framing octets are copied by TCP.
  const bool payload =
      std::any_of(pieces.begin(), pieces.end(), [](const mpa::FramePiece& p) { return !p.owned; });
  BufRef pin;
  if (payload) {
    pin = pool_->pin(seg_id);
  } else {
    pool_->done(seg_id);
  }
  std::array<tcp::TxPiece, tcp::Tcb::max_segment_pieces> parts;
  if (pieces.size() > parts.size()) return false;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    parts[i].data = pieces[i].bytes;
    parts[i].ref = pieces[i].owned ? BufRef{} : pin;
  }
  return conn_->send_record({parts.data(), pieces.size()});
}

bool Endpoint::complete_acked() {
  const std::uint64_t done = pool_->released_through();
  if (done <= acked_reported_) return false;
  acked_reported_ = done;
  engine_.on_acked(done);
  return true;
}

bool Endpoint::ending() const {
  const rnic::Engine::State st = engine_.state();
  return close_requested_ || st == rnic::Engine::State::failed || st == rnic::Engine::State::closed;
}

bool Endpoint::transmit() {
  if (conn_ == nullptr) return false;
  bool did = engine_.transmit();
  // After a Terminate, a rejected negotiation, the peer's close or ours: FIN once every
  // FPDU is queued (RFC 5040 section 5: the LLP stream is closed).
  if (ending() && !fin_sent_ && !engine_.tx_pending() && conn_->established()) {
    conn_->shutdown_send();
    fin_sent_ = true;
    did = true;
  }
  return did;
}

}  // namespace esock::utcp
