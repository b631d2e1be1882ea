// ULPDU -> FPDU (RFC 5044 sections 4 and 5): length, Markers, pad, CRC32c.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "base/bytes.h"
#include "mpa/fpdu.h"

namespace esock::mpa {

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

  // Largest ULPDU whose FPDU fits in emss octets at the current position (RFC 5044 section
  // 4.1 MULPDU, computed exactly for this position since Markers make it position
  // dependent), so callers can keep one FPDU per TCP segment. 0 if only an empty ULPDU fits
  // or none does (check fpdu_size(0) <= emss).
  std::size_t max_ulpdu(std::size_t emss) const;

  // RFC 5044 section 4.1's position-independent MULPDU for an EMSS:
  //   with Markers:    EMSS - (6 + 4 * ceil(EMSS / 512) + EMSS mod 4)
  //   without Markers: EMSS - (6 + EMSS mod 4)
  static std::size_t mulpdu(std::size_t emss, bool markers);

  std::size_t max_ulpdu_len() const { return markers_ ? kMaxUlpduMarkers : kMaxUlpdu; }
  std::uint64_t position() const { return pos_; }
  bool markers() const { return markers_; }
  bool crc() const { return crc_; }

 private:
  std::uint64_t pos_;
  bool markers_;
  bool crc_;
};

}  // namespace esock::mpa
