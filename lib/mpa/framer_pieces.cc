// Framer::frame_pieces: the FPDU as owned parts and views of the payload (no payload copy).
#include <cstdint>

#include "mpa/fpdu_writer.h"
#include "mpa/framer.h"

namespace esock::mpa {
namespace {

// frame_pieces()'s sink: owned octets go into scratch, adjacent ones sharing a piece; the
// payload is referred to, one piece per run between Markers, never copied or cut further.
class PieceSink {
 public:
  static constexpr std::size_t kChunk = SIZE_MAX;
  PieceSink(mut_bytes scratch, std::span<FramePiece> out) : s_(scratch.data()), out_(out) {}
  // Extends the previous piece when it ends at s_.
  std::uint8_t* owned(std::size_t n) {
    std::uint8_t* d = s_;
    if (n_ > 0 && out_[n_ - 1].owned && out_[n_ - 1].bytes.data() + out_[n_ - 1].bytes.size() == s_)
      out_[n_ - 1].bytes = bytes_view(out_[n_ - 1].bytes.data(), out_[n_ - 1].bytes.size() + n);
    else
      add(FramePiece{bytes_view(s_, n), true, 0});
    s_ += n;
    return d;
  }
  const std::uint8_t* payload(const std::uint8_t* p, std::size_t n, std::uint32_t index) {
    add(FramePiece{bytes_view(p, n), false, index});
    return p;
  }
  bool overflow() const { return overflow_; }
  std::size_t count() const { return n_; }

 private:
  void add(const FramePiece& p) {
    if (n_ == out_.size()) {
      overflow_ = true;  // keep going (scratch is sized exactly), report at the end
      return;
    }
    out_[n_++] = p;
  }

  std::uint8_t* s_;
  std::span<FramePiece> out_;
  std::size_t n_ = 0;
  bool overflow_ = false;
};

}  // namespace

std::size_t Framer::frame_pieces(bytes_view hdr, std::span<const bytes_view> payload,
                                 mut_bytes scratch, std::span<FramePiece> out) {
  std::size_t plen = 0;
  for (const bytes_view& b : payload) {
    if (b.size() > max_ulpdu_len()) return 0;  // keeps the sum from overflowing
    plen += b.size();
    if (plen > max_ulpdu_len()) return 0;
  }
  if (hdr.size() > max_ulpdu_len() - plen) return 0;
  if (payload.size() > UINT32_MAX || scratch.size() < scratch_size(hdr.size(), plen)) return 0;
  PieceSink sink(scratch, out);
  const MarkerCursor after = detail::write_fpdu(sink, cur_, crc_, hdr, payload);
  if (sink.overflow()) return 0;
  cur_ = after;
  return sink.count();
}

}  // namespace esock::mpa
