// Framer::frame_pieces: the FPDU as owned parts and views of the payload (no payload copy).
#include <cstring>

#include "base/endian.h"
#include "mpa/crc32c.h"
#include "mpa/framer.h"

namespace esock::mpa {
namespace {

// Lays the FPDU out as pieces, stepping over Marker positions like frame()'s writer and
// running the CRC over every wire octet before the CRC field, Markers included (fpdu.h).
class PieceWriter {
 public:
  PieceWriter(mut_bytes scratch, std::span<FramePiece> out, std::uint64_t pos, bool markers,
              bool crc)
      : s_(scratch.data()),
        out_(out),
        pos_(pos),
        crc_on_(crc),
        next_marker_(markers ? pos + to_next_marker(pos) : UINT64_MAX) {}

  // A Marker due where the FPDU starts goes before ULPDU_Length with FPDUPTR 0 (fpdu.h).
  void begin_fpdu() {
    if (pos_ == next_marker_) put_marker(0);
    header_pos_ = pos_;
  }
  // Copies n octets into scratch (owned) or refers to them (payload view `index`).
  void put(const std::uint8_t* p, std::size_t n, bool owned, std::uint32_t index) {
    while (n > 0) {
      if (pos_ == next_marker_) put_marker(static_cast<std::uint16_t>(pos_ - header_pos_));
      std::size_t chunk = n;
      if (next_marker_ - pos_ < chunk) chunk = static_cast<std::size_t>(next_marker_ - pos_);
      if (owned) {
        std::memcpy(s_, p, chunk);
        own(chunk);
      } else {
        add(FramePiece{bytes_view(p, chunk), false, index});
      }
      if (crc_on_) crc_ = crc32c({p, chunk}, crc_);
      pos_ += chunk;
      p += chunk;
      n -= chunk;
    }
  }
  void put_crc() {
    // A Marker due right before the CRC field is part of what the CRC covers.
    if (pos_ == next_marker_) put_marker(static_cast<std::uint16_t>(pos_ - header_pos_));
    std::uint8_t c[kCrcLen];
    store_crc(c, crc_on_ ? crc_ : 0);  // RFC 5044 4.4: zero when CRC is not in use
    crc_on_ = false;
    put(c, kCrcLen, true, 0);
  }
  bool overflow() const { return overflow_; }
  std::size_t count() const { return n_; }
  std::uint64_t pos() const { return pos_; }

 private:
  void put_marker(std::uint16_t fpduptr) {
    store_be16(s_, 0);  // reserved
    store_be16(s_ + 2, fpduptr);
    if (crc_on_) crc_ = crc32c({s_, kMarkerLen}, crc_);  // Markers are CRC-covered (fpdu.h)
    own(kMarkerLen);
    pos_ += kMarkerLen;
    next_marker_ += kMarkerInterval;
  }
  // n octets were just written at s_: extend the previous piece when it ends there.
  void own(std::size_t n) {
    if (n_ > 0 && out_[n_ - 1].owned && out_[n_ - 1].bytes.data() + out_[n_ - 1].bytes.size() == s_)
      out_[n_ - 1].bytes = bytes_view(out_[n_ - 1].bytes.data(), out_[n_ - 1].bytes.size() + n);
    else
      add(FramePiece{bytes_view(s_, n), true, 0});
    s_ += n;
  }
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
  std::uint64_t pos_;
  bool crc_on_;
  std::uint64_t next_marker_;
  std::uint64_t header_pos_ = 0;
  std::uint32_t crc_ = 0;
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
  PieceWriter w(scratch, out, pos_, markers_, crc_);
  w.begin_fpdu();
  std::uint8_t len[kUlpduLengthLen];
  store_be16(len, static_cast<std::uint16_t>(hdr.size() + plen));
  w.put(len, sizeof len, true, 0);
  w.put(hdr.data(), hdr.size(), true, 0);
  for (std::size_t i = 0; i < payload.size(); ++i)
    w.put(payload[i].data(), payload[i].size(), false, static_cast<std::uint32_t>(i));
  static constexpr std::uint8_t kZeros[4] = {};
  w.put(kZeros, pad_len(hdr.size() + plen), true, 0);  // RFC 5044 4.1: zero pad, CRC-covered
  w.put_crc();
  if (w.overflow()) return 0;
  pos_ = w.pos();
  return w.count();
}

}  // namespace esock::mpa
