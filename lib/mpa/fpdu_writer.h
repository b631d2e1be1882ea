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
// The CRC runs over every wire octet before the CRC field, Markers included (fpdu.h), in
// wire order, right after the octets were handed over (they are then in L1): one crc32c
// call per run of them that is also contiguous in memory, up to kChunk (ISA-L's cost per
// call dominates small FPDUs; for frame() the whole of a small FPDU is one run).
// A class rather than lambdas over locals, and write_fpdu flattened: with every call
// inlined, the writer, its cursor and the sink stay in registers. One call left out of
// line makes them memory, and reading the cursor back (16-octet loads of two 8-octet
// stores) stalls store forwarding: that cost frame_pieces 15-20% in bench_mpa, and the
// lambda form framed 512-octet FPDUs ~30% slower.
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
  // are copied into the sink, payload view `index` is handed to it. Nothing for n == 0,
  // not even a Marker due here.
  void put(const std::uint8_t* p, std::size_t n, bool owned, std::uint32_t index) {
    // Most parts hold no Marker, and without Markers none does: one run, no loop (a
    // Marker due right after the run is the next part's).
    if (n <= cur_.to_marker() && n <= Sink::kChunk) {
      if (n > 0) run(p, n, owned, index);
      return;
    }
    put_split(p, n, owned, index);
  }
  // ULPDU_Length (RFC 5044 section 4.1).
  void put_length(std::uint16_t len) {
    put_owned(kUlpduLengthLen, [len](std::uint8_t* d) { store_be16(d, len); });
  }
  // FPDUs are 4-octet aligned in the stream and Markers sit at multiples of 512, so no
  // Marker falls inside the CRC field; one due right before it is inside the FPDU and
  // CRC-covered (fpdu.h). Ends the FPDU: a Marker due next leads the next one.
  void put_crc() {
    if (cur_.at_marker()) marker();
    crc_flush();
    const std::uint32_t crc = crc_on_ ? crc_ : 0;  // RFC 5044 4.4: zero when CRC is not in use
    crc_on_ = false;
    put_owned(kCrcLen, [crc](std::uint8_t* d) { store_crc(d, crc); });
    cur_.end_fpdu();
  }
  MarkerCursor cursor() const { return cur_; }

 private:
  // put() over Markers, or in more than one chunk.
  void put_split(const std::uint8_t* p, std::size_t n, bool owned, std::uint32_t index) {
    while (n > 0) {
      if (cur_.at_marker()) marker();  // FPDUPTR back to this FPDU's ULPDU_Length
      const std::size_t chunk = cur_.clamp(n < Sink::kChunk ? n : Sink::kChunk);
      run(p, chunk, owned, index);
      p += chunk;
      n -= chunk;
    }
  }
  // A field of n <= 4 owned octets that fill(d) writes: straight into the sink when no
  // Marker falls inside it (always, in a 4-aligned stream), through a copy otherwise. (Built
  // in a copy and then copied, a field's byte stores stall the wider load that copies it.)
  template <class Fill>
  void put_owned(std::size_t n, Fill fill) {
    if (n <= cur_.to_marker()) {
      std::uint8_t* d = sink_.owned(n);
      fill(d);
      covered(d, n);
      cur_.advance(n);
      return;
    }
    std::uint8_t c[4];
    fill(c);
    put_split(c, n, true, 0);
  }
  // n octets that hold no Marker and fit one chunk.
  void run(const std::uint8_t* p, std::size_t n, bool owned, std::uint32_t index) {
    const std::uint8_t* at;
    if (owned) {
      std::uint8_t* d = sink_.owned(n);
      std::memcpy(d, p, n);
      at = d;
    } else {
      at = sink_.payload(p, n, index);
    }
    covered(at, n);
    cur_.advance(n);
  }
  // n octets at p follow the octets covered so far on the wire.
  void covered(const std::uint8_t* p, std::size_t n) {
    if (!crc_on_) return;
    if (crc_len_ > 0 && p != crc_from_ + crc_len_) crc_flush();
    if (crc_len_ == 0) crc_from_ = p;
    crc_len_ += n;
    if (crc_len_ >= Sink::kChunk) crc_flush();
  }
  void crc_flush() {
    if (crc_len_ > 0) crc_ = crc32c({crc_from_, crc_len_}, crc_);
    crc_len_ = 0;
  }
  void marker() {
    std::uint8_t* m = sink_.owned(kMarkerLen);
    cur_.emit_marker(m);
    covered(m, kMarkerLen);  // Markers are CRC-covered (fpdu.h)
  }

  Sink& sink_;
  MarkerCursor cur_;
  bool crc_on_;
  std::uint32_t crc_ = 0;                   // CRC of the octets before crc_from_
  const std::uint8_t* crc_from_ = nullptr;  // the covered octets not yet in crc_
  std::size_t crc_len_ = 0;
};

// The FPDU carrying ULPDU = hdr + payload at cur (RFC 5044 section 4.1: ULPDU_Length,
// ULPDU, zero pad to a multiple of 4, CRC). The caller has checked the ULPDU length (at
// most 65535, or 64512 with Markers) and the room the sink has. Returns the cursor after
// the FPDU.
template <class Sink>
[[gnu::flatten]] MarkerCursor write_fpdu(Sink& sink, MarkerCursor cur, bool crc, bytes_view hdr,
                                         std::span<const bytes_view> payload) {
  FpduWriter<Sink> w(sink, cur, crc);
  w.begin_fpdu();
  std::size_t len = hdr.size();
  for (const bytes_view& b : payload) len += b.size();
  w.put_length(static_cast<std::uint16_t>(len));
  w.put(hdr.data(), hdr.size(), true, 0);
  for (std::size_t i = 0; i < payload.size(); ++i)
    w.put(payload[i].data(), payload[i].size(), false, static_cast<std::uint32_t>(i));
  static constexpr std::uint8_t kZeros[4] = {};
  w.put(kZeros, pad_len(len), true, 0);  // RFC 5044 4.1: pad octets are zero, CRC-covered
  w.put_crc();
  return w.cursor();
}

}  // namespace esock::mpa::detail
