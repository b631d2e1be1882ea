// Endpoint receive side: the in-order byte stream (MPA negotiation, then the deframer) and
// out-of-order placement (RFC 5044 section 8, RFC 5041 section 5).
#include <algorithm>
#include <array>

#include "ddp/wire.h"
#include "esock/rnic/llp_errors.h"
#include "esock/utcp/endpoint.h"
#include "mpa/segment_scan.h"

namespace esock::utcp {

namespace {
constexpr std::size_t max_fpdus_per_segment = 16;
}  // namespace

std::uint64_t Endpoint::rx_stream_pos(std::uint32_t seq) const {
  // Out-of-order segments lie ahead of rx_seq_ within the receive window (< 2^31).
  return rx_pos_ + static_cast<std::uint32_t>(seq - rx_seq_);
}

// Drains what TCP has delivered in order: queued octets and placed ranges, interleaved in
// sequence order (TcbUser's exactly-once contract).
bool Endpoint::receive() {
  tcp::Tcb& tcb = conn_->tcb();
  tcp::RecvQueue& rq = tcb.recv_queue();
  bool did = false;
  for (;;) {
    if (hold_input_ && state_ == State::established) return did;
    if (!skips_.empty() && skips_.front().seq == rx_seq_) {
      const Skip s = skips_.front();
      skips_.pop_front();
      if (!skip_placed(s.len)) break;
      did = true;
      continue;
    }
    bytes_view v = rq.front();
    if (v.empty()) break;
    if (!skips_.empty()) v = v.first(std::min<std::size_t>(v.size(), skips_.front().seq - rx_seq_));
    std::size_t used = v.size();
    if (state_ == State::negotiating) {
      // The negotiator takes at most up to the end of the peer's frame; the rest is the
      // FPDU stream and is read in the next round, with its stream position known.
      used = negotiator_.feed(v);
      send_copy(negotiator_.take_output());
    } else if (state_ == State::established) {
      if (!place_in_order(v)) deframe(v);
    }  // failed or closed: octets are dropped
    tcb.recv_consumed(stack_.now(), used);
    rx_seq_ += static_cast<std::uint32_t>(used);
    if (rx_stream_started_) rx_pos_ += used;
    did = true;
    if (state_ == State::negotiating) {
      switch (negotiator_.state()) {
        case mpa::Negotiator::State::in_progress:
          break;
        case mpa::Negotiator::State::established:
          established();  // stream position 0 is rx_seq_ now
          break;
        case mpa::Negotiator::State::rejected:
          fail("MPA connection rejected: " + negotiator_.error());
          break;
        case mpa::Negotiator::State::failed:
          fail("MPA negotiation failed: " + negotiator_.error());
          break;
      }
    }
  }
  // RFC 5040 section 5: the peer closed the LLP stream; nothing more will arrive.
  if (tcb.peer_closed() && rq.empty() && skips_.empty() && state_ != State::closed &&
      state_ != State::failed) {
    if (state_ == State::negotiating) negotiator_.peer_closed();
    qp_.llp_closed();
    state_ = State::closed;
    did = true;
  }
  return did;
}

void Endpoint::deframe(bytes_view in) {
  const mpa::Error err = deframer_->feed(in, [this](bytes_view ulpdu) {
    ++stats_.fpdus_rx;
    hold_tx_until_rx_ = false;
    qp_.on_segment(ulpdu);
  });
  if (err != mpa::Error::none) {
    // RFC 5044 section 8: fatal to the stream; a Terminate (LLP layer) goes out first.
    qp_.llp_error(rnic::llp_terminate_cause(err));
    fail(std::string("MPA receive error: ") + rnic::mpa_error_name(err));
  }
}

// TCP reached a range whose FPDUs were placed out of order: the deframer steps over it and
// the queue pair does, in stream order, what it skipped at placement time.
bool Endpoint::skip_placed(std::uint32_t len) {
  if (state_ != State::established) {
    rx_seq_ += len;
    rx_pos_ += len;
    return true;
  }
  if (!deframer_->skip(len)) {
    qp_.llp_error(ddp::term::llp_local_catastrophic);
    fail("internal error: a placed range does not start at an FPDU boundary");
    return false;
  }
  const std::uint64_t end = rx_pos_ + len;
  while (const PlacedFpdu* f = placed_.front()) {
    if (f->pos >= end) break;
    ++stats_.fpdus_placed_early;
    hold_tx_until_rx_ = false;
    qp_.on_placed_segment(f->header(), f->payload_len);
    placed_.pop();
  }
  rx_seq_ += len;
  rx_pos_ = end;
  return true;
}

void Endpoint::on_range_delivered(std::uint32_t seq, std::uint32_t len) {
  skips_.push_back(Skip{seq, len});
  work_ = true;
}

// RFC 5044 section 8: a segment ahead of a hole is placed now when it is self-describing,
// i.e. a run of whole FPDUs whose headers we can find (Markers, or an aligned sender) and
// whose CRCs check. All or nothing: either TCP keeps only the range, or it keeps the bytes
// and they come through the deframer in order. A payload written here for a segment that
// is then not placed is written again, identically, in order (place_early changes nothing
// else), so a partial attempt is harmless.
// Scans one received segment for whole, verified FPDUs and places their payloads (one copy,
// from the received frame into the target). All or nothing; *n FPDUs recorded in rec.
Endpoint::PlaceResult Endpoint::scan_and_place(bytes_view data, std::uint64_t pos,
                                               std::span<PlacedFpdu> rec, std::size_t* n) {
  // Runs on every received segment, and these arrays are initialised each time: sized for
  // what aligned senders put in a segment (one FPDU, a few when they are small). A segment
  // with more FPDUs or pieces scans as no_room and takes the deframer path.
  std::array<mpa::ScannedFpdu, max_fpdus_per_segment> found;
  std::array<bytes_view, 48> views;
  *n = 0;
  std::size_t count = 0;
  const mpa::Negotiated& neg = negotiator_.result();
  const mpa::ScanResult r = mpa::scan_segment(
      data, pos, mpa::ScanConfig{neg.markers_rx, neg.crc, 65535}, found, views, &count);
  if (r == mpa::ScanResult::crc_error) return PlaceResult::crc_error;
  if (r != mpa::ScanResult::ok || count == 0 || count > rec.size())
    return PlaceResult::not_self_describing;
  for (std::size_t i = 0; i < count; ++i) {
    const mpa::ScannedFpdu& f = found[i];
    const std::size_t hl = f.hdr_len ? ddp::header_length(f.hdr[0]) : 0;
    if (hl == 0 || f.hdr_len < hl) return PlaceResult::not_placeable;  // not a data segment
    // The payload as a gather list: the header copy's tail, then the segment's pieces.
    std::array<bytes_view, 1 + views.size()> payload;
    std::size_t pc = 0;
    if (f.hdr_len > hl) payload[pc++] = bytes_view(f.hdr.data() + hl, f.hdr_len - hl);
    for (const bytes_view& v : f.pieces) payload[pc++] = v;
    if (!qp_.place_early(bytes_view(f.hdr.data(), hl), {payload.data(), pc}))
      return PlaceResult::not_placeable;
    PlacedFpdu& p = rec[i];
    p.pos = pos + f.offset;
    p.wire_len = f.wire_len;
    p.payload_len = static_cast<std::uint32_t>(f.ulpdu_len - hl);
    std::copy_n(f.hdr.begin(), hl, p.hdr.begin());
    p.hdr_len = static_cast<std::uint8_t>(hl);
  }
  *n = count;
  return PlaceResult::placed;
}

// The in-order fast path: a segment that starts at an FPDU boundary and holds whole FPDUs
// (what an aligned sender sends) is placed straight from the received frame, Markers or
// not, so each payload octet is copied once (the deframer would stage FPDUs that contain
// Markers). Anything else, including a CRC error, goes through the deframer.
bool Endpoint::place_in_order(bytes_view v) {
  if (!deframer_->at_boundary()) return false;
  std::array<PlacedFpdu, max_fpdus_per_segment> rec;
  std::size_t n = 0;
  if (scan_and_place(v, rx_pos_, rec, &n) != PlaceResult::placed) return false;
  if (!deframer_->skip(v.size())) return false;  // cannot happen at a boundary; be safe
  for (std::size_t i = 0; i < n; ++i) {
    ++stats_.fpdus_rx;
    ++stats_.fpdus_rx_direct;
    hold_tx_until_rx_ = false;
    qp_.on_placed_segment(rec[i].header(), rec[i].payload_len);
  }
  return true;
}

// RFC 5044 section 8: a segment ahead of a hole is placed now when it is self-describing,
// i.e. a run of whole FPDUs whose headers we can find (Markers, or an aligned sender) and
// whose CRCs check. All or nothing: either TCP keeps only the range, or it keeps the bytes
// and they come through the in-order path. A payload written here for a segment that is
// then not placed is written again, identically, in order (place_early changes nothing
// else), so a partial attempt is harmless.
bool Endpoint::on_out_of_order(std::uint32_t seq, bytes_view data, const BufRef&) {
  if (!opts_.ooo_placement || state_ != State::established) return false;
  ++stats_.ooo_segments;
  std::array<PlacedFpdu, max_fpdus_per_segment> rec;
  std::size_t n = 0;
  switch (scan_and_place(data, rx_stream_pos(seq), rec, &n)) {
    case PlaceResult::crc_error:
      ++stats_.ooo_crc_errors;  // never placed; the deframer reports it in order (fatal)
      return false;
    case PlaceResult::not_self_describing:
      ++stats_.ooo_not_self_describing;
      return false;
    case PlaceResult::not_placeable:
      ++stats_.ooo_not_placeable;
      return false;
    case PlaceResult::placed:
      break;
  }
  for (std::size_t i = 0; i < n; ++i) {
    placed_.add(rec[i]);
    stats_.placed_bytes += rec[i].payload_len;
  }
  ++stats_.ooo_segments_placed;
  return true;
}

}  // namespace esock::utcp
