// Engine receive side: the in-order stream (MPA negotiation, then FPDUs placed straight from
// aligned segments or through the deframer) and placement ahead of a hole (RFC 5044 section
// 8, RFC 5041 section 5: placement in any order, delivery in order).
#include <algorithm>
#include <array>

#include "ddp/wire.h"
#include "esock/rnic/engine.h"

namespace esock::rnic {

namespace {
// Sized for what aligned senders put in a segment (one FPDU, a few when they are small); a
// segment with more FPDUs or pieces scans as no_room and takes the deframer path.
constexpr std::size_t max_fpdus_per_segment = 16;
constexpr std::size_t max_scan_pieces = 48;

// RFC 5044 section 8: layer 2 (LLP), error type 0 (MPA), the code for the deframing error.
ddp::TerminateCause llp_terminate_cause(mpa::Error err) {
  const mpa::TerminateCode t = mpa::terminate_code(err);
  return ddp::TerminateCause{t.layer, t.type, t.code};
}
}  // namespace

std::size_t Engine::feed(bytes_view in) {
  if (state_ == State::negotiating) {
    // The negotiator takes at most up to the end of the peer's frame: what follows is the
    // FPDU stream, fed again by the caller with its stream position known.
    const std::size_t used = negotiator_.feed(in);
    const std::vector<std::uint8_t> reply = negotiator_.take_output();
    if (!reply.empty()) {
      stats_.tx_copied_bytes += reply.size();
      if (!tx_.send_frame(reply)) fail("internal error: the MPA frame does not fit the transport");
    }
    switch (negotiator_.state()) {
      case mpa::Negotiator::State::in_progress:
        break;
      case mpa::Negotiator::State::established:
        if (state_ == State::negotiating) established();
        break;
      case mpa::Negotiator::State::rejected:
        fail("MPA connection rejected: " + negotiator_.error());
        break;
      case mpa::Negotiator::State::failed:
        fail("MPA negotiation failed: " + negotiator_.error());
        break;
    }
    return used;
  }
  if (state_ == State::established && !in.empty()) {
    if (!(cfg_.place_aligned_segments && place_aligned(in))) deframe(in);
  }
  rx_pos_ += in.size();
  return in.size();  // failed or closed: octets are dropped
}

void Engine::deframe(bytes_view in) {
  const mpa::Error err = deframer_->feed(in, [this](bytes_view ulpdu) {
    ++stats_.fpdus_rx;
    hold_tx_until_rx_ = false;
    qp_.on_segment(ulpdu);
  });
  if (err != mpa::Error::none) {
    // RFC 5044 section 8: an MPA error is fatal to the stream; DDP reports it to the peer in
    // a Terminate (LLP layer) and the connection is torn down.
    qp_.llp_error(llp_terminate_cause(err));
    fail(std::string("MPA receive error: ") + mpa::to_string(err));
  }
}

// What the queue pair skipped at placement time, done now in stream order (MSN, completions).
void Engine::completed_in_order(const PlacedFpdu& f) {
  hold_tx_until_rx_ = false;
  qp_.on_placed_segment(f.header(), f.payload_len);
}

// An aligned segment (starts at an FPDU boundary, holds whole FPDUs) is placed straight from
// the transport's buffer, Markers or not, so each payload octet is copied once. Anything
// else, a CRC error included, goes through the deframer, which reports it.
bool Engine::place_aligned(bytes_view in) {
  if (!deframer_->at_boundary()) return false;
  std::array<PlacedFpdu, max_fpdus_per_segment> rec;
  std::size_t n = 0;
  mpa::ScanResult scan;
  if (scan_and_place(in, rx_pos_, rec, &n, &scan) != Placement::placed) return false;
  if (!deframer_->skip(in.size())) return false;  // cannot fail at a boundary; be safe
  for (std::size_t i = 0; i < n; ++i) {
    ++stats_.fpdus_rx;
    ++stats_.fpdus_rx_direct;
    completed_in_order(rec[i]);
  }
  return true;
}

bool Engine::skip_placed(std::uint32_t len) {
  const std::uint64_t end = rx_pos_ + len;
  if (state_ != State::established) {
    rx_pos_ = end;
    return true;
  }
  if (!deframer_->skip(len)) {
    local_error("internal error: a placed range does not start at an FPDU boundary");
    return false;
  }
  while (const PlacedFpdu* f = placed_.front()) {
    if (f->pos >= end) break;
    ++stats_.fpdus_placed_early;
    completed_in_order(*f);
    placed_.pop();
  }
  rx_pos_ = end;
  return true;
}

// Scans one segment for whole, verified FPDUs (RFC 5044 section 8: self-describing: headers
// found by Markers or alignment, CRC checked) and places their payloads, one copy from the
// segment into the target (ddp::Qp::place_payload). All or nothing; *n FPDUs recorded in rec.
// A payload written here for a segment that is then not placed is written again,
// identically, in order (place_payload changes nothing else), so a partial attempt is
// harmless.
Engine::Placement Engine::scan_and_place(bytes_view data, std::uint64_t pos,
                                         std::span<PlacedFpdu> rec, std::size_t* n,
                                         mpa::ScanResult* scan) {
  std::array<mpa::ScannedFpdu, max_fpdus_per_segment> found;
  std::array<bytes_view, max_scan_pieces> views;
  *n = 0;
  std::size_t count = 0;
  const mpa::Negotiated& neg = negotiator_.result();
  *scan = mpa::scan_segment(data, pos, mpa::ScanConfig{neg.markers_rx, neg.crc, 65535}, found,
                            views, &count);
  if (*scan == mpa::ScanResult::ok && (count == 0 || count > rec.size()))
    *scan = mpa::ScanResult::no_room;
  if (*scan != mpa::ScanResult::ok) return Placement::scan_failed;
  for (std::size_t i = 0; i < count; ++i) {
    const mpa::ScannedFpdu& f = found[i];
    const std::size_t hl = f.hdr_len ? ddp::header_length(f.hdr[0]) : 0;
    if (hl == 0 || f.hdr_len < hl) return Placement::not_placeable;  // not a data segment
    // The payload as a gather list: the header copy's tail, then the segment's pieces.
    std::array<bytes_view, 1 + max_scan_pieces> payload;
    std::size_t pc = 0;
    if (f.hdr_len > hl) payload[pc++] = bytes_view(f.hdr.data() + hl, f.hdr_len - hl);
    for (const bytes_view& v : f.pieces) payload[pc++] = v;
    if (!qp_.place_payload(bytes_view(f.hdr.data(), hl), {payload.data(), pc}))
      return Placement::not_placeable;
    PlacedFpdu& p = rec[i];
    p.pos = pos + f.offset;
    p.payload_len = static_cast<std::uint32_t>(f.ulpdu_len - hl);
    std::copy_n(f.hdr.begin(), hl, p.hdr.begin());
    p.hdr_len = static_cast<std::uint8_t>(hl);
  }
  *n = count;
  return Placement::placed;
}

void Engine::count_scan_failure(mpa::ScanResult scan) {
  switch (scan) {
    case mpa::ScanResult::crc_error:
      ++stats_.ooo_crc_errors;  // never placed; the deframer reports it in order (fatal)
      break;
    case mpa::ScanResult::not_self_describing:
      ++stats_.ooo_not_self_describing;
      break;
    case mpa::ScanResult::length_error:
    case mpa::ScanResult::marker_error:
      ++stats_.ooo_framing_errors;
      break;
    case mpa::ScanResult::ok:
    case mpa::ScanResult::partial:
    case mpa::ScanResult::no_room:
      ++stats_.ooo_not_whole_fpdus;
      break;
  }
}

bool Engine::place_out_of_order(std::uint64_t pos, bytes_view data) {
  if (!cfg_.out_of_order_placement || state_ != State::established) return false;
  ++stats_.ooo_segments;
  std::array<PlacedFpdu, max_fpdus_per_segment> rec;
  std::size_t n = 0;
  mpa::ScanResult scan = mpa::ScanResult::ok;
  switch (scan_and_place(data, pos, rec, &n, &scan)) {
    case Placement::scan_failed:
      count_scan_failure(scan);
      return false;
    case Placement::not_placeable:
      ++stats_.ooo_not_placeable;
      return false;
    case Placement::placed:
      break;
  }
  for (std::size_t i = 0; i < n; ++i) {
    placed_.add(rec[i]);
    stats_.placed_bytes += rec[i].payload_len;
  }
  ++stats_.ooo_segments_placed;
  return true;
}

}  // namespace esock::rnic
