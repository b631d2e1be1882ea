#include "mpa/deframer.h"

#include <algorithm>
#include <cstring>

#include "base/endian.h"
#include "mpa/crc32c.h"

namespace esock::mpa {

const char* to_string(Error e) {
  switch (e) {
    case Error::none:
      return "no error";
    case Error::crc:
      return "MPA CRC mismatch";
    case Error::length:
      return "MPA ULPDU_Length larger than the maximum accepted";
    case Error::marker:
      return "MPA Marker FPDUPTR does not point to the FPDU start";
  }
  return "unknown MPA error";
}

TerminateCode terminate_code(Error e) {
  switch (e) {
    case Error::none:
      return {};
    case Error::crc:
      return {kTermLayerLlp, kTermTypeMpa, kLlpCrc};
    case Error::length:
    case Error::marker:
      return {kTermLayerLlp, kTermTypeMpa, kLlpMarker};
  }
  return {kTermLayerLlp, kTermTypeMpa, kLlpLocalCatastrophic};
}

Deframer::Deframer(bool markers, bool crc, std::size_t max_ulpdu, std::uint32_t stream_start_offset)
    : crc_(crc),
      max_ulpdu_(std::min(max_ulpdu, markers ? kMaxUlpduMarkers : kMaxUlpdu)),
      cur_(stream_start_offset, markers),
      buf_(initial_buf) {}

bool Deframer::fpdu_ok(const std::uint8_t* fpdu, std::size_t len) {
  // RFC 5044 section 4.4: without CRC the field is valid whatever it holds.
  if (!crc_) return true;
  const std::uint32_t crc = crc32c({fpdu, len - kCrcLen}, crc_acc_);
  crc_acc_ = 0;
  return crc == load_crc(fpdu + len - kCrcLen);
}

// The slow path's CRC: the octets of buf_[from, from + n) that precede the CRC field, in
// stream order, so Markers met in between are covered where they stand (fpdu.h).
void Deframer::crc_assembled(std::size_t from, std::size_t n) {
  if (!crc_) return;
  const std::size_t end = need_ == 0 ? from + n : std::min(from + n, need_ - kCrcLen);
  if (end > from) crc_acc_ = crc32c({buf_.data() + from, end - from}, crc_acc_);
}

Error Deframer::feed(bytes_view in, UlpduSink sink) {
  if (error_ != Error::none) return error_;
  while (!in.empty()) {
    // At a Marker: collect its 4 octets (they may be split across feeds), then check its
    // FPDUPTR (RFC 5044 section 5): back to the ULPDU_Length of the FPDU being assembled,
    // or 0 when nothing is (the Marker leads the next FPDU).
    if (cur_.at_marker()) {
      const std::size_t k = std::min(kMarkerLen - marker_have_, in.size());
      std::memcpy(marker_ + marker_have_, in.data(), k);
      marker_have_ += k;
      in = in.subspan(k);
      if (marker_have_ < kMarkerLen) break;
      marker_have_ = 0;
      const bool ok = cur_.take_marker(marker_);
      last_marker_end_ = cur_.pos();
      if (!ok) return fail(Error::marker);
      // A Marker inside an FPDU, or one just before its ULPDU_Length, is CRC-covered.
      if (crc_) crc_acc_ = crc32c({marker_, kMarkerLen}, crc_acc_);
      continue;
    }
    const std::uint64_t to_marker = cur_.to_marker();
    // Fast path: a whole FPDU with no Marker inside it is in `in`: deliver it in place.
    if (have_ == 0 && in.size() >= kUlpduLengthLen && to_marker >= kUlpduLengthLen) {
      const std::size_t ulen = load_be16(in.data());
      if (ulen > max_ulpdu_) return fail(Error::length);
      const std::size_t n = fpdu_len(ulen);
      if (n <= in.size() && n <= to_marker) {
        if (!fpdu_ok(in.data(), n)) return fail(Error::crc);
        sink(in.subspan(kUlpduLengthLen, ulen));
        cur_.advance(n);  // no Marker inside: the cursor stays between FPDUs
        in = in.subspan(n);
        continue;
      }
    }
    // Slow path: assemble the FPDU (without Markers) in buf_.
    if (have_ == 0) cur_.begin_fpdu();
    const std::size_t want = need_ == 0 ? kUlpduLengthLen - have_ : need_ - have_;
    const std::size_t k = cur_.clamp(std::min(want, in.size()));
    std::memcpy(buf_.data() + have_, in.data(), k);
    const std::size_t from = have_;
    have_ += k;
    cur_.advance(k);
    in = in.subspan(k);
    if (need_ == 0 && have_ == kUlpduLengthLen) {
      const std::size_t ulen = load_be16(buf_.data());
      if (ulen > max_ulpdu_) return fail(Error::length);
      need_ = fpdu_len(ulen);
      if (buf_.size() < need_) buf_.resize(need_);  // up to the largest FPDU seen
    }
    crc_assembled(from, k);
    if (need_ != 0 && have_ == need_) {
      if (crc_) {
        const bool good = crc_acc_ == load_crc(buf_.data() + need_ - kCrcLen);
        crc_acc_ = 0;
        if (!good) return fail(Error::crc);
      }
      const std::size_t ulen = load_be16(buf_.data());
      have_ = 0;
      need_ = 0;
      cur_.end_fpdu();
      sink(bytes_view(buf_.data() + kUlpduLengthLen, ulen));
    }
  }
  return Error::none;
}

bool Deframer::skip(std::size_t n) {
  if (error_ != Error::none || !at_boundary() || n % 4 != 0) return false;
  // The first Marker at or after the new position (one due exactly there is still unread:
  // it leads the FPDU that follows the run).
  cur_.skip(n);
  crc_acc_ = 0;
  return true;
}

}  // namespace esock::mpa
