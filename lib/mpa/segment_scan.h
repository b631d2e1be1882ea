// Out-of-order TCP segment -> whole, verified FPDUs, for early placement (RFC 5044 sections
// 5, 8 and 9). No allocation and no payload copy: results are views into the segment.
//
// RFC 5044 section 8 lets a receiver place an FPDU that arrives out of order when it can
// find it and verify it without the octets before it. Two things make that possible:
//   * Markers (section 5) at fixed stream positions point back to the start of the FPDU
//     they fall in, so the first Marker of a segment says whether the segment starts at
//     an FPDU (and where the FPDU containing it begins);
//   * an MPA-aware ("optimized", section 9) sender starts every TCP segment with an FPDU,
//     so without Markers the receiver may assume a segment begins with ULPDU_Length, and
//     the CRC tells it whether the assumption held.
// With neither Markers nor CRC nothing in a segment can be checked, so it is never placed.
//
// All or nothing: either the segment is exactly a run of whole FPDUs that all pass their
// checks and every one is returned, or none is and the caller leaves the segment to TCP's
// in-order path (where a real error then surfaces as the fatal MPA error it is).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "base/bytes.h"
#include "mpa/fpdu.h"

namespace esock::mpa {

inline constexpr std::size_t kScanHdrLen = 32;  // ULPDU octets copied out (DDP/RDMAP header)

struct ScannedFpdu {
  // Its first octet in the segment. A Marker due at the FPDU start precedes ULPDU_Length
  // and belongs to the FPDU (fpdu.h), so it is included here and in wire_len.
  std::uint32_t offset = 0;
  std::uint32_t wire_len = 0;  // octets in the segment: Markers, length, ULPDU, pad, CRC
  std::uint16_t ulpdu_len = 0;
  std::uint8_t hdr_len = 0;  // min(ulpdu_len, kScanHdrLen)
  // The first hdr_len ULPDU octets, Markers stepped over (a Marker may split the DDP
  // header on the wire; the copy makes it contiguous for parsing).
  std::array<std::uint8_t, kScanHdrLen> hdr{};
  // The ULPDU octets after the first hdr_len, in order, as views into the segment between
  // Markers (never empty views). Points into the `pieces` span given to scan_segment.
  std::span<const bytes_view> pieces;
};

enum class ScanResult : std::uint8_t {
  ok,                   // the segment is exactly the FPDUs returned, all verified
  not_self_describing,  // neither CRC nor a Marker to verify the segment with
  partial,              // not exactly whole FPDUs: empty, starts or ends inside an FPDU or a Marker
  crc_error,            // an FPDU failed its CRC (RFC 5044 section 4.4)
  length_error,         // a ULPDU_Length above the largest accepted
  marker_error,         // a Marker whose FPDUPTR disagrees with the FPDUs found (RFC 5044 5)
  no_room,              // more FPDUs or pieces than the output spans hold
};
const char* to_string(ScanResult r);

struct ScanConfig {
  bool markers = false;               // the receive direction carries Markers (we asked: our M bit)
  bool crc = false;                   // CRC negotiated
  std::size_t max_ulpdu = kMaxUlpdu;  // largest ULPDU_Length accepted (our MULPDU)
};

// seg: one TCP segment's payload; stream_pos: the MPA stream position of seg[0] (as in
// fpdu.h: 0 is the first octet after the MPA Request/Reply in this direction). On ok,
// *count FPDUs are in out[0, *count), their pieces in `pieces`; otherwise *count is 0 and
// the contents of out and pieces are unspecified. Sizes that always suffice for a segment
// of n octets: scan_max_fpdus(n) and scan_max_pieces(n). The FPDUs' views are valid while
// seg's octets are.
//
// With Markers the segment must start 4-aligned in the stream, as every FPDU does there
// (FPDUs and Markers are multiples of 4 octets from position 0).
ScanResult scan_segment(bytes_view seg, std::uint64_t stream_pos, const ScanConfig& cfg,
                        std::span<ScannedFpdu> out, std::span<bytes_view> pieces,
                        std::size_t* count);

// The smallest FPDU is 8 octets (length, 2 pad, CRC).
constexpr std::size_t scan_max_fpdus(std::size_t seg_len) {
  return seg_len / 8;
}
// Pieces exist only for ULPDUs longer than kScanHdrLen (FPDUs of at least 40 octets), one
// each plus one more per Marker inside the ULPDU; a segment holds at most n / 512 + 1
// Markers. For a 1460-octet segment: 39.
constexpr std::size_t scan_max_pieces(std::size_t seg_len) {
  return seg_len / (kScanHdrLen + 8) + seg_len / kMarkerInterval + 1;
}

}  // namespace esock::mpa
