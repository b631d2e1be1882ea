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

// Lays out one FPDU, ULPDU = hdr + payload, through a Sink that says where octets go:
//   std::uint8_t* owned(std::size_t n)    room for n octets the framer writes itself
//                                         (ULPDU_Length, hdr, Markers, pad, CRC);
//   const std::uint8_t* payload(p, n, i)  n octets of payload view i: copied or referred
//                                         to; returns where they now are, for the CRC;
//   static constexpr std::size_t kChunk   the longest run handed over at once.
// The CRC runs over every wire octet before the CRC field, Markers included (fpdu.h),
// chunk by chunk, right after each chunk was handed over (it is then in L1).
// The caller has checked the ULPDU length (at most 65535, or 64512 with Markers) and
// the room the sink has. Returns the cursor after the FPDU.
template <class Sink>
MarkerCursor write_fpdu(Sink& sink, MarkerCursor cur, bool crc, bytes_view hdr,
                        std::span<const bytes_view> payload) {
  bool crc_on = crc;
  std::uint32_t acc = 0;
  const auto covered = [&](const std::uint8_t* p, std::size_t n) {
    if (crc_on) acc = crc32c({p, n}, acc);
  };
  const auto marker = [&] {
    std::uint8_t* m = sink.owned(kMarkerLen);
    cur.emit_marker(m);
    covered(m, kMarkerLen);
  };
  // Octets of one part of the FPDU, stepping over the Markers due inside it.
  const auto put = [&](const std::uint8_t* p, std::size_t n, bool owned, std::uint32_t index) {
    while (n > 0) {
      if (cur.at_marker()) marker();  // FPDUPTR back to this FPDU's ULPDU_Length
      const std::size_t chunk = cur.clamp(n < Sink::kChunk ? n : Sink::kChunk);
      const std::uint8_t* at;
      if (owned) {
        std::uint8_t* d = sink.owned(chunk);
        std::memcpy(d, p, chunk);
        at = d;
      } else {
        at = sink.payload(p, chunk, index);
      }
      covered(at, chunk);
      cur.advance(chunk);
      p += chunk;
      n -= chunk;
    }
  };

  // A Marker due where the FPDU starts goes before ULPDU_Length with FPDUPTR 0 (fpdu.h).
  if (cur.at_marker()) marker();
  cur.begin_fpdu();
  std::size_t len = hdr.size();
  for (const bytes_view& b : payload) len += b.size();
  std::uint8_t ulpdu_length[kUlpduLengthLen];
  store_be16(ulpdu_length, static_cast<std::uint16_t>(len));
  put(ulpdu_length, sizeof ulpdu_length, true, 0);
  put(hdr.data(), hdr.size(), true, 0);
  for (std::size_t i = 0; i < payload.size(); ++i)
    put(payload[i].data(), payload[i].size(), false, static_cast<std::uint32_t>(i));
  static constexpr std::uint8_t kZeros[4] = {};
  put(kZeros, pad_len(len), true, 0);  // RFC 5044 4.1: pad octets are zero, CRC-covered
  // FPDUs are 4-octet aligned in the stream and Markers sit at multiples of 512, so no
  // Marker falls inside the CRC field; one due right before it is inside the FPDU and
  // CRC-covered (fpdu.h).
  if (cur.at_marker()) marker();
  std::uint8_t c[kCrcLen];
  store_crc(c, crc_on ? acc : 0);  // RFC 5044 4.4: zero when CRC is not in use
  crc_on = false;
  put(c, kCrcLen, true, 0);
  cur.end_fpdu();
  return cur;
}

}  // namespace esock::mpa::detail
