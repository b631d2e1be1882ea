#include "mpa/framer.h"

#include <cstring>

#include "mpa/fpdu_writer.h"

namespace esock::mpa {
namespace {

// frame()'s sink: everything is copied into out, in chunks of 4 KiB so that the CRC runs
// on each chunk right after the copy, while it is in L1 (ISA-L's CRC runs ~3x faster than
// memcpy).
class CopySink {
 public:
  static constexpr std::size_t kChunk = 4096;
  explicit CopySink(std::uint8_t* out) : out_(out) {}
  std::uint8_t* owned(std::size_t n) {
    std::uint8_t* d = out_;
    out_ += n;
    return d;
  }
  const std::uint8_t* payload(const std::uint8_t* p, std::size_t n, std::uint32_t) {
    std::uint8_t* d = owned(n);
    std::memcpy(d, p, n);
    return d;
  }

 private:
  std::uint8_t* out_;
};

}  // namespace

Framer::Framer(bool markers, bool crc, std::uint32_t stream_start_offset)
    : cur_(stream_start_offset, markers), crc_(crc) {}

std::size_t Framer::fpdu_size(std::size_t ulpdu_len) const {
  return cur_.wire_len(fpdu_len(ulpdu_len));
}

std::size_t Framer::frame(std::span<const bytes_view> ulpdu, mut_bytes out) {
  std::size_t len = 0;
  for (const bytes_view& b : ulpdu) len += b.size();
  if (len > max_ulpdu_len()) return 0;
  const std::size_t size = fpdu_size(len);
  if (out.size() < size) return 0;
  CopySink sink(out.data());
  cur_ = detail::write_fpdu(sink, cur_, crc_, {}, ulpdu);
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
