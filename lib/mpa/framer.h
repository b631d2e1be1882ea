// ULPDU -> FPDU (RFC 5044 sections 4 and 5): length, Markers, pad, CRC32c.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "base/bytes.h"
#include "mpa/fpdu.h"
#include "mpa/marker_cursor.h"

namespace esock::mpa {

// One part of an FPDU framed by Framer::frame_pieces, in wire order.
struct FramePiece {
  bytes_view bytes;
  // true: octets the framer wrote into the caller's scratch buffer (ULPDU_Length and the
  // ULP header, Markers, pad and CRC), small enough to copy; false: a view of the caller's
  // payload, to be sent by reference (payload_index says which payload view it is from).
  bool owned = false;
  std::uint32_t payload_index = 0;
};

class Framer {
 public:
  // markers: the peer asked for Markers (its M bit). crc: CRC negotiated (either C bit).
  // stream_start_offset: the stream position of the first octet this framer emits (0 right
  // after the MPA Request/Reply exchange, see fpdu.h).
  Framer(bool markers, bool crc, std::uint32_t stream_start_offset = 0);

  // Size on the wire of an FPDU carrying ulpdu_len octets starting at the current position.
  std::size_t fpdu_size(std::size_t ulpdu_len) const;

  // Frames one ULPDU given as a gather list into out; returns the octets written (==
  // fpdu_size) and advances the position. Returns 0 and writes nothing when the ULPDU is
  // longer than max_ulpdu_len() or out is smaller than fpdu_size().
  std::size_t frame(std::span<const bytes_view> ulpdu, mut_bytes out);
  std::size_t frame(bytes_view ulpdu, mut_bytes out) { return frame({&ulpdu, 1}, out); }

  // Zero-copy framing for a sender that gathers from registered memory (RFC 5044 section 9:
  // each FPDU handed to TCP as one record, so that every segment starts with an FPDU).
  // Frames the ULPDU hdr + payload into out as pieces whose concatenation is exactly what
  // frame() writes: the owned octets go into scratch (adjacent ones share a piece), the
  // payload is only read, for the CRC, never copied. Returns the piece count and advances
  // the position; returns 0 and advances nothing when the ULPDU is longer than
  // max_ulpdu_len(), scratch is smaller than scratch_size(), or out has too few entries
  // (max_pieces() always suffices). Pieces stay valid while scratch and payload do.
  std::size_t frame_pieces(bytes_view hdr, std::span<const bytes_view> payload, mut_bytes scratch,
                           std::span<FramePiece> out);
  // Owned octets of such an FPDU at the current position: everything but the payload.
  std::size_t scratch_size(std::size_t hdr_len, std::size_t payload_len) const {
    return fpdu_size(hdr_len + payload_len) - payload_len;
  }
  // Pieces an FPDU of wire_len octets with `views` payload views can need: one owned run
  // before the payload, one after it, and each Marker inside the payload adds itself and a
  // split (wire_len / 512 + 1 Markers at most). An FPDU of at most 1460 octets (one MSS)
  // from one payload view: 2 + 1 + 2 * 3 = 9 pieces.
  static constexpr std::size_t max_pieces(std::size_t wire_len, std::size_t views) {
    return 2 + views + 2 * (wire_len / kMarkerInterval + 1);
  }

  // Largest ULPDU whose FPDU fits in emss octets at the current position (RFC 5044 section
  // 4.1 MULPDU, computed exactly for this position since Markers make it position
  // dependent), so callers can keep one FPDU per TCP segment. 0 if only an empty ULPDU fits
  // or none does (check fpdu_size(0) <= emss).
  std::size_t max_ulpdu(std::size_t emss) const;

  // RFC 5044 section 4.1's position-independent MULPDU for an EMSS:
  //   with Markers:    EMSS - (6 + 4 * ceil(EMSS / 512) + EMSS mod 4)
  //   without Markers: EMSS - (6 + EMSS mod 4)
  static std::size_t mulpdu(std::size_t emss, bool markers);

  std::size_t max_ulpdu_len() const { return markers() ? kMaxUlpduMarkers : kMaxUlpdu; }
  std::uint64_t position() const { return cur_.pos(); }
  bool markers() const { return cur_.markers(); }
  bool crc() const { return crc_; }

 private:
  MarkerCursor cur_;  // between FPDUs
  bool crc_;
};

}  // namespace esock::mpa
