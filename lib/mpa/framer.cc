#include "mpa/framer.h"

#include <cstring>

#include "base/endian.h"
#include "mpa/crc32c.h"

namespace esock::mpa {
namespace {

// Copies into the FPDU, computing the CRC on each chunk right after copying it (it is then
// in L1, and ISA-L's CRC runs ~3x faster than memcpy), and stepping over Marker positions.
class Writer {
 public:
  Writer(std::uint8_t* out, std::uint64_t pos, bool markers, bool crc)
      : out_(out),
        pos_(pos),
        crc_on_(crc),
        next_marker_(markers ? pos + to_next_marker(pos) : UINT64_MAX) {}

  // A Marker due where the FPDU starts goes before ULPDU_Length with FPDUPTR 0 (fpdu.h).
  void begin_fpdu() {
    if (pos_ == next_marker_) put_marker(0);
    header_pos_ = pos_;
  }
  void put(const std::uint8_t* p, std::size_t n) {
    while (n > 0) {
      if (pos_ == next_marker_) put_marker(static_cast<std::uint16_t>(pos_ - header_pos_));
      std::size_t chunk = n < kChunk ? n : kChunk;
      if (next_marker_ - pos_ < chunk) chunk = static_cast<std::size_t>(next_marker_ - pos_);
      std::memcpy(out_, p, chunk);
      if (crc_on_) crc_ = crc32c({out_, chunk}, crc_);
      out_ += chunk;
      pos_ += chunk;
      p += chunk;
      n -= chunk;
    }
  }
  void put_zeros(std::size_t n) {
    static constexpr std::uint8_t kZeros[4] = {};
    put(kZeros, n);
  }
  // FPDUs are 4-octet aligned in the stream and Markers sit at multiples of 512, so no
  // Marker falls inside the CRC field; the CRC covers everything before it (fpdu.h).
  void put_crc() {
    // A Marker due right before the CRC field is part of what the CRC covers.
    if (pos_ == next_marker_) put_marker(static_cast<std::uint16_t>(pos_ - header_pos_));
    std::uint8_t c[kCrcLen];
    store_crc(c, crc_on_ ? crc_ : 0);  // RFC 5044 4.4: zero when CRC is not in use
    const bool on = crc_on_;
    crc_on_ = false;
    put(c, kCrcLen);
    crc_on_ = on;
  }
  std::uint8_t* out() const { return out_; }
  std::uint64_t pos() const { return pos_; }

 private:
  static constexpr std::size_t kChunk = 4096;
  void put_marker(std::uint16_t fpduptr) {
    store_be16(out_, 0);  // reserved
    store_be16(out_ + 2, fpduptr);
    if (crc_on_) crc_ = crc32c({out_, kMarkerLen}, crc_);  // Markers are CRC-covered (fpdu.h)
    out_ += kMarkerLen;
    pos_ += kMarkerLen;
    next_marker_ += kMarkerInterval;
  }
  std::uint8_t* out_;
  std::uint64_t pos_;
  bool crc_on_;
  std::uint64_t next_marker_;
  std::uint64_t header_pos_ = 0;
  std::uint32_t crc_ = 0;
};

}  // namespace

Framer::Framer(bool markers, bool crc, std::uint32_t stream_start_offset)
    : pos_(stream_start_offset), markers_(markers), crc_(crc) {}

std::size_t Framer::fpdu_size(std::size_t ulpdu_len) const {
  const std::size_t n = fpdu_len(ulpdu_len);
  return markers_ ? n + kMarkerLen * markers_in(pos_, n) : n;
}

std::size_t Framer::frame(std::span<const bytes_view> ulpdu, mut_bytes out) {
  std::size_t len = 0;
  for (const bytes_view& b : ulpdu) len += b.size();
  if (len > max_ulpdu_len()) return 0;
  const std::size_t size = fpdu_size(len);
  if (out.size() < size) return 0;
  Writer w(out.data(), pos_, markers_, crc_);
  w.begin_fpdu();
  std::uint8_t hdr[kUlpduLengthLen];
  store_be16(hdr, static_cast<std::uint16_t>(len));
  w.put(hdr, sizeof hdr);
  for (const bytes_view& b : ulpdu) w.put(b.data(), b.size());
  w.put_zeros(pad_len(len));  // RFC 5044 4.1: pad octets are zero, covered by the CRC
  w.put_crc();
  pos_ = w.pos();
  return size;
}

std::size_t Framer::max_ulpdu(std::size_t emss) const {
  // fpdu_size is monotonic in the ULPDU length: binary search the largest that fits.
  std::size_t lo = 0, hi = max_ulpdu_len();
  if (fpdu_size(0) > emss) return 0;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo + 1) / 2;
    if (fpdu_size(mid) <= emss)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

std::size_t Framer::mulpdu(std::size_t emss, bool markers) {
  std::size_t overhead = 6 + emss % 4;
  if (markers) overhead += 4 * ((emss + kMarkerInterval - 1) / kMarkerInterval);
  return emss > overhead ? emss - overhead : 0;
}

}  // namespace esock::mpa
