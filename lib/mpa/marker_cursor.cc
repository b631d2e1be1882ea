#include "mpa/marker_cursor.h"

#include "base/endian.h"

namespace esock::mpa {

void MarkerCursor::emit_marker(std::uint8_t* out) {
  store_be16(out, 0);  // RFC 5044 section 5: the 16 reserved bits are sent as zero
  // At most 65535: ULPDU_Length caps a marked FPDU below 64 KiB, Markers included (fpdu.h).
  store_be16(out + 2, static_cast<std::uint16_t>(fpduptr()));
  pos_ += kMarkerLen;
  next_ += kMarkerInterval;
}

bool MarkerCursor::take_marker(const std::uint8_t* in) {
  // The two low bits are zero on transmit and ignored on receipt: FPDUs are 4-octet
  // aligned, so no FPDUPTR needs them. Compared in 64 bits: an FPDUPTR that would not fit
  // in 16 bits is wrong whatever the field holds.
  const std::uint64_t ptr = load_be16(in + 2) & ~3u;
  const bool ok = ptr == fpduptr();
  pos_ += kMarkerLen;
  next_ += kMarkerInterval;
  return ok;
}

void MarkerCursor::skip(std::uint64_t n) {
  pos_ += n;
  if (markers()) next_ = pos_ + to_next_marker(pos_);
  header_ = kNever;
}

}  // namespace esock::mpa
