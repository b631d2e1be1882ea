// FPDU layout arithmetic shared by MarkerCursor, the framers, the deframer and the scanner
// (RFC 5044 sections 4 and 5).
//
//   FPDU = ULPDU_Length (16 bits) | ULPDU | PAD (0-3 octets) | CRC (32 bits)
//
// with MPA Markers (4 octets: 16 reserved bits, 16-bit FPDUPTR) inserted into the stream
// every 512 octets when the receiver asked for them. Stream position 0 is the first octet
// after the MPA Request/Reply exchange in that direction: RFC 5044 section 5 places the
// first Marker immediately before the first FPDU of full operation, and one at every 512th
// octet of the TCP stream after that (the 512 octets include the Markers).
//
// FPDUPTR (RFC 5044 section 5) is the number of octets from the first octet of the
// ULPDU_Length field of the FPDU the Marker falls in to the first octet of the Marker.
// A Marker that falls exactly at the start of an FPDU is placed before that FPDU's
// ULPDU_Length and points to it with FPDUPTR = 0 (the first Marker of the stream is
// always such a Marker). Its two low bits are zero on transmit and treated as zero by the
// receiver, since FPDUs are 4-octet aligned in the stream.
//
// The CRC verifies the entire contents of the FPDU as it is sent (RFC 5044 section 4.1), so
// it covers the Markers inside the FPDU, including a Marker that precedes its ULPDU_Length.
// Wireshark's iwarp_mpa dissector computes it the same way; tests/integration checks our
// captures against it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace esock::mpa {

inline constexpr std::size_t kUlpduLengthLen = 2;
inline constexpr std::size_t kCrcLen = 4;
inline constexpr std::size_t kMarkerLen = 4;
inline constexpr std::uint32_t kMarkerInterval = 512;
// ULPDU_Length is 16 bits. With Markers we keep FPDUs short enough that every FPDUPTR
// fits in 16 bits (an FPDU of 64512 octets of ULPDU spans at most 128 Markers).
inline constexpr std::size_t kMaxUlpdu = 0xffff;
inline constexpr std::size_t kMaxUlpduMarkers = 64512;

// Octets of an FPDU without Markers: length field, ULPDU, pad to a multiple of 4, CRC.
// RFC 5044 section 4.1: the pad makes the FPDU an integral multiple of four octets.
constexpr std::size_t fpdu_len(std::size_t ulpdu_len) {
  return ((kUlpduLengthLen + ulpdu_len + 3) & ~std::size_t{3}) + kCrcLen;
}
constexpr std::size_t pad_len(std::size_t ulpdu_len) {
  return fpdu_len(ulpdu_len) - kCrcLen - kUlpduLengthLen - ulpdu_len;
}
// Octets from stream position pos to the next Marker position (0 if a Marker is due at pos).
constexpr std::uint64_t to_next_marker(std::uint64_t pos) {
  return (kMarkerInterval - pos % kMarkerInterval) % kMarkerInterval;
}
// Markers that go into an FPDU of `unmarked` octets starting at stream position pos,
// including one due exactly at pos and excluding one due right after its last octet
// (that one precedes the next FPDU). Marker j sits after d + 508 * j FPDU octets.
constexpr std::size_t markers_in(std::uint64_t pos, std::size_t unmarked) {
  const std::uint64_t d = to_next_marker(pos);
  if (unmarked <= d) return 0;
  return static_cast<std::size_t>((unmarked - d - 1) / (kMarkerInterval - kMarkerLen) + 1);
}

}  // namespace esock::mpa
