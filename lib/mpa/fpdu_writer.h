// Internal to lib/mpa: the one FPDU layout that Framer::frame (a copy into one buffer) and
// Framer::frame_pieces (owned octets plus views of the payload) both emit, so the two stay
// octet-for-octet the same (RFC 5044 sections 4.1, 4.4 and 5).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "base/bytes.h"
#include "base/endian.h"
#include "mpa/crc32c.h"
#include "mpa/fpdu.h"
#include "mpa/marker_cursor.h"

namespace esock::mpa::detail {

// Lays out one FPDU through a Sink that says where octets go:
//   std::uint8_t* owned(std::size_t n)    room for n octets the framer writes itself
//                                         (ULPDU_Length, hdr, Markers, pad, CRC);
//   const std::uint8_t* payload(p, n, i)  n octets of payload view i: copied or referred
//                                         to; returns where they now are, for the CRC;
//   static constexpr std::size_t kChunk   the longest run handed over at once.
// The CRC runs over every wire octet before the CRC field, Markers included (fpdu.h),
// chunk by chunk, right after each chunk was handed over (it is then in L1).
// A class rather than lambdas over locals: inlined into the framer, its members stay in
// registers (the lambda form framed 512-octet FPDUs ~30% slower in bench_mpa).
template <class Sink>
class FpduWriter {
 public:
  FpduWriter(Sink& sink, MarkerCursor cur, bool crc) : sink_(sink), cur_(cur), crc_on_(crc) {}

  // A Marker due where the FPDU starts goes before ULPDU_Length with FPDUPTR 0 (fpdu.h).
  void begin_fpdu() {
    if (cur_.at_marker()) marker();
    cur_.begin_fpdu();
  }
  // Octets of one part of the FPDU, stepping over the Markers due inside it: owned ones
  // are copied into the sink, payload view `index` is handed to it.
  void put(const std::uint8_t* p, std::size_t n, bool owned, std::uint32_t index) {
    while (n > 0) {
      if (cur_.at_marker()) marker();  // FPDUPTR back to this FPDU's ULPDU_Length
      const std::size_t chunk = cur_.clamp(n < Sink::kChunk ? n : Sink::kChunk);
      const std::uint8_t* at;
      if (owned) {
        std::uint8_t* d = sink_.owned(chunk);
        std::memcpy(d, p, chunk);
        at = d;
      } else {
        at = sink_.payload(p, chunk, index);
      }
      covered(at, chunk);
      cur_.advance(chunk);
      p += chunk;
      n -= chunk;
    }
  }
  // FPDUs are 4-octet aligned in the stream and Markers sit at multiples of 512, so no
  // Marker falls inside the CRC field; one due right before it is inside the FPDU and
  // CRC-covered (fpdu.h). Ends the FPDU: a Marker due next leads the next one.
  void put_crc() {
    if (cur_.at_marker()) marker();
    std::uint8_t c[kCrcLen];
    store_crc(c, crc_on_ ? crc_ : 0);  // RFC 5044 4.4: zero when CRC is not in use
    crc_on_ = false;
    put(c, kCrcLen, true, 0);
    cur_.end_fpdu();
  }
  MarkerCursor cursor() const { return cur_; }

 private:
  void covered(const std::uint8_t* p, std::size_t n) {
    if (crc_on_) crc_ = crc32c({p, n}, crc_);
  }
  void marker() {
    std::uint8_t* m = sink_.owned(kMarkerLen);
    cur_.emit_marker(m);
    covered(m, kMarkerLen);  // Markers are CRC-covered (fpdu.h)
  }

  Sink& sink_;
  MarkerCursor cur_;
  bool crc_on_;
  std::uint32_t crc_ = 0;
};

// The FPDU carrying ULPDU = hdr + payload at cur (RFC 5044 section 4.1: ULPDU_Length,
// ULPDU, zero pad to a multiple of 4, CRC). The caller has checked the ULPDU length (at
// most 65535, or 64512 with Markers) and the room the sink has. Returns the cursor after
// the FPDU.
template <class Sink>
MarkerCursor write_fpdu(Sink& sink, MarkerCursor cur, bool crc, bytes_view hdr,
                        std::span<const bytes_view> payload) {
  FpduWriter<Sink> w(sink, cur, crc);
  w.begin_fpdu();
  std::size_t len = hdr.size();
  for (const bytes_view& b : payload) len += b.size();
  std::uint8_t ulpdu_length[kUlpduLengthLen];
  store_be16(ulpdu_length, static_cast<std::uint16_t>(len));
  w.put(ulpdu_length, sizeof ulpdu_length, true, 0);
  w.put(hdr.data(), hdr.size(), true, 0);
  for (std::size_t i = 0; i < payload.size(); ++i)
    w.put(payload[i].data(), payload[i].size(), false, static_cast<std::uint32_t>(i));
  static constexpr std::uint8_t kZeros[4] = {};
  w.put(kZeros, pad_len(len), true, 0);  // RFC 5044 4.1: pad octets are zero, CRC-covered
  w.put_crc();
  return w.cursor();
}

}  // namespace esock::mpa::detail
