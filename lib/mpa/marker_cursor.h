// Where the MPA Markers of one stream direction fall (RFC 5044 section 5): the one place
// that steps a stream position over Markers, for the framer, the piece framer, the deframer
// and the segment scanner.
//
// RFC 5044 section 5 puts a 4-octet Marker at every 512th octet of the stream (the 512
// include the Markers), counted from position 0, the first octet after the MPA
// Request/Reply (fpdu.h). Each carries FPDUPTR, the distance back from the Marker to the
// ULPDU_Length of the FPDU it falls in; a Marker due where an FPDU starts precedes that
// FPDU's ULPDU_Length and points to it with 0. So a walker needs three numbers: the stream
// position, the next Marker position and the current FPDU's header position. The cursor
// keeps them; the walkers only move octets.
//
// Positions are 64-bit: a stream may carry more than 4 GiB, and Marker positions are
// multiples of 512 from the stream start, not from a 32-bit TCP sequence number.
//
// Header-only: the walkers call it for every chunk and every Marker; inlined, a cursor
// that is a local of the walker can stay in registers.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/endian.h"
#include "mpa/fpdu.h"

namespace esock::mpa {

class MarkerCursor {
 public:
  // pos: the stream position of the next octet. markers: this direction carries Markers
  // (without them the cursor only counts octets and no Marker is ever due).
  MarkerCursor(std::uint64_t pos, bool markers)
      : pos_(pos), next_(markers ? pos + to_next_marker(pos) : kNever) {}

  bool markers() const { return next_ != kNever; }
  std::uint64_t pos() const { return pos_; }

  // A Marker is due at pos(): it has to be emitted or taken before any other octet.
  bool at_marker() const { return pos_ == next_; }
  // Octets before the next Marker (0 when at_marker(); beyond any real length without
  // Markers).
  std::uint64_t to_marker() const { return next_ - pos_; }
  // The longest run of at most n octets that starts at pos() and holds no Marker.
  std::size_t clamp(std::size_t n) const {
    return to_marker() < n ? static_cast<std::size_t>(to_marker()) : n;
  }

  // Wire octets of an FPDU of `unmarked` octets (fpdu_len, so at least 8) that starts at
  // pos(): a Marker due at pos() is counted (it leads the FPDU), one due right after its
  // last octet is not (it leads the next one).
  std::size_t wire_len(std::size_t unmarked) const {
    return markers() ? unmarked + kMarkerLen * markers_in(pos_, unmarked) : unmarked;
  }

  // Steps over n octets that are not Marker octets: n <= to_marker().
  void advance(std::size_t n) { pos_ += n; }

  // The FPDU whose ULPDU_Length is at pos() starts here (after its leading Marker, if any):
  // Markers from now on point back to it, until end_fpdu().
  void begin_fpdu() { header_ = pos_; }
  // Between FPDUs: the next Marker, if due before the next begin_fpdu(), leads that FPDU.
  void end_fpdu() { header_ = kNever; }

  // FPDUPTR for a Marker at pos() (RFC 5044 section 5): the octets back to the current
  // FPDU's ULPDU_Length, or 0 between FPDUs.
  std::uint64_t fpduptr() const { return header_ == kNever ? 0 : pos_ - header_; }

  // At a Marker: writes its 4 octets to out (16 reserved bits of zero, then FPDUPTR) and
  // steps over it.
  void emit_marker(std::uint8_t* out) {
    store_be16(out, 0);  // RFC 5044 section 5: the 16 reserved bits are sent as zero
    // At most 65535: ULPDU_Length caps a marked FPDU below 64 KiB, Markers included.
    store_be16(out + 2, static_cast<std::uint16_t>(fpduptr()));
    pass_marker();
  }
  // At a Marker: whether the 4 octets at in carry the FPDUPTR this position calls for, and
  // steps over it either way. The two low bits are zero on transmit and ignored on receipt
  // (RFC 5044 section 5: FPDUs are 4-octet aligned, no FPDUPTR needs them). Compared in 64
  // bits: an FPDUPTR that would not fit in 16 bits is wrong whatever the field holds.
  bool take_marker(const std::uint8_t* in) {
    const std::uint64_t ptr = load_be16(in + 2) & ~3u;
    const bool ok = ptr == fpduptr();
    pass_marker();
    return ok;
  }

  // Jumps n octets ahead, over whole FPDUs (their Markers included) handled elsewhere, to a
  // position between FPDUs. The next Marker is the first at or after the new position: one
  // due exactly there leads the FPDU that follows and is still to be taken.
  void skip(std::uint64_t n) {
    pos_ += n;
    if (markers()) next_ = pos_ + to_next_marker(pos_);
    header_ = kNever;
  }

 private:
  void pass_marker() {
    pos_ += kMarkerLen;
    next_ += kMarkerInterval;
  }

  static constexpr std::uint64_t kNever = UINT64_MAX;
  std::uint64_t pos_;
  std::uint64_t next_;             // position of the next Marker, kNever without Markers
  std::uint64_t header_ = kNever;  // position of the current FPDU's ULPDU_Length
};

}  // namespace esock::mpa
