// FPDU stream -> ULPDUs (RFC 5044 sections 4 and 5), resumable at any split point.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/bytes.h"
#include "base/function_ref.h"
#include "mpa/fpdu.h"
#include "mpa/marker_cursor.h"

namespace esock::mpa {

// Deframing errors. MPA cannot resynchronise on an in-order stream, so each is fatal: the
// ULP sends a Terminate with the code from terminate_code() and closes the connection.
enum class Error : std::uint8_t {
  none,
  crc,     // CRC mismatch (RFC 5044 section 4.4 / 8)
  length,  // ULPDU_Length larger than the negotiated maximum (MULPDU) we accept
  marker,  // a Marker's FPDUPTR does not point to the FPDU it falls in (RFC 5044 5)
};
const char* to_string(Error e);

// Terminate {layer, error type, error code} for an error (RFC 5040 section 7.2 / RFC 5044
// section 8: layer 2 = LLP, error type 0 = MPA). MPA's codes: 0x01 TCP connection
// closed/lost (never sent), 0x02 received MPA CRC does not match, 0x03 received Marker with
// a wrong FPDUPTR (loss of FPDU framing), 0x04 invalid MPA Request/Reply frame; RFC 6581
// section 7 adds 0x05 local catastrophic, 0x06 insufficient IRD resources, 0x07 no matching
// RTR option. A ULPDU_Length we cannot accept also means lost framing: 0x03.
struct TerminateCode {
  std::uint8_t layer = 0, type = 0, code = 0;
  bool operator==(const TerminateCode&) const = default;
};
inline constexpr std::uint8_t kTermLayerLlp = 2;
inline constexpr std::uint8_t kTermTypeMpa = 0;
inline constexpr std::uint8_t kLlpCrc = 0x02;
inline constexpr std::uint8_t kLlpMarker = 0x03;
inline constexpr std::uint8_t kLlpBadReqRep = 0x04;
inline constexpr std::uint8_t kLlpLocalCatastrophic = 0x05;
inline constexpr std::uint8_t kLlpInsufficientIrd = 0x06;
inline constexpr std::uint8_t kLlpNoMatchingRtr = 0x07;
TerminateCode terminate_code(Error e);

using UlpduSink = function_ref<void(bytes_view)>;

class Deframer {
 public:
  // markers: we asked for Markers (our M bit). crc: CRC negotiated. max_ulpdu: largest
  // ULPDU_Length accepted (our MULPDU, at most 65535). stream_start_offset: as for Framer.
  Deframer(bool markers, bool crc, std::size_t max_ulpdu, std::uint32_t stream_start_offset = 0);

  // Feeds any number of octets, split anywhere. Calls sink(ulpdu) for each complete,
  // verified ULPDU (Markers stripped, no pad or CRC), in order; the view is valid during
  // the call only. Zero-copy when a whole FPDU without Markers lies in one feed. Returns
  // Error::none or the first error, after which every feed returns that error.
  Error feed(bytes_view in, UlpduSink sink);

  Error error() const { return error_; }
  std::uint64_t position() const { return cur_.pos() + marker_have_; }
  // True between FPDUs: no partial FPDU or Marker buffered, and no Marker consumed that
  // belongs to the next FPDU (a Marker due at an FPDU start is part of that FPDU, fpdu.h).
  bool at_boundary() const {
    return have_ == 0 && marker_have_ == 0 && cur_.pos() != last_marker_end_;
  }

  // Steps over n stream octets that were verified and processed elsewhere: a run of whole
  // FPDUs (their leading Markers included) that the receiver placed out of order from
  // segments checked by scan_segment (RFC 5044 section 8 / 9: an FPDU-aligned segment can
  // be placed as it arrives; the in-order path must then neither see nor re-verify those
  // octets). Only at a boundary (at_boundary()) and before any error; n must be a multiple
  // of 4 as every FPDU and Marker is. Returns false and changes nothing otherwise. Marker
  // positions stay exact: the Marker due right after the run belongs to the next FPDU and
  // is read from the stream by the next feed.
  bool skip(std::size_t n);

 private:
  Error fail(Error e) { return error_ = e; }
  bool fpdu_ok(const std::uint8_t* fpdu, std::size_t len);
  void crc_assembled(std::size_t from, std::size_t n);

  bool crc_;
  std::size_t max_ulpdu_;
  Error error_ = Error::none;
  // At the next input octet, or at the Marker being collected: the cursor steps over a
  // Marker only once all 4 of its octets are in (then in an FPDU while have_ > 0).
  MarkerCursor cur_;
  // Stream position right after the last Marker read (UINT64_MAX: none yet). With nothing
  // buffered and the cursor here, the Marker led the next FPDU and is already in crc_acc_.
  std::uint64_t last_marker_end_ = UINT64_MAX;
  std::uint8_t marker_[kMarkerLen] = {};
  std::size_t marker_have_ = 0;  // octets of the Marker at the cursor collected so far
  // The current FPDU without Markers (slow path). It grows to the largest FPDU seen rather
  // than starting at the largest allowed (64 KiB per connection, zero-filled: 10,000 idle
  // connections spent 640 MiB on them).
  static constexpr std::size_t initial_buf = 256;
  std::vector<std::uint8_t> buf_;
  std::size_t have_ = 0;       // octets of it in buf_
  std::size_t need_ = 0;       // its full length once ULPDU_Length is known, else 0
  std::uint32_t crc_acc_ = 0;  // CRC of the current FPDU so far, Markers included
};

}  // namespace esock::mpa
