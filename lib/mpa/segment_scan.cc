#include "mpa/segment_scan.h"

#include <algorithm>
#include <cstring>

#include "base/endian.h"
#include "mpa/crc32c.h"
#include "mpa/marker_cursor.h"

namespace esock::mpa {
namespace {

// Walks the segment FPDU by FPDU from its first octet, the cursor at stream position
// base + index. Without Markers no Marker is ever due.
class Scanner {
 public:
  Scanner(bytes_view seg, std::uint64_t base, const ScanConfig& cfg)
      : seg_(seg),
        base_(base),
        crc_(cfg.crc),
        max_ulpdu_(std::min(cfg.max_ulpdu, cfg.markers ? kMaxUlpduMarkers : kMaxUlpdu)),
        cur_(base, cfg.markers) {}

  // Where the first Marker wholly inside the segment says the FPDU it falls in starts:
  // true if that is at or after the segment start (or there is no such Marker).
  bool first_marker_in_segment(bool* seen) const {
    *seen = false;
    if (!cur_.markers()) return true;
    const std::size_t m = static_cast<std::size_t>(cur_.to_marker());  // < 512
    if (seg_.size() < kMarkerLen || m > seg_.size() - kMarkerLen) return true;
    *seen = true;
    // A Marker at an FPDU start has FPDUPTR 0; inside an FPDU it points back m - ptr. The
    // two low bits are ignored on receipt (RFC 5044 section 5), as MarkerCursor does.
    const std::size_t ptr = load_be16(seg_.data() + m + 2) & ~3u;
    return ptr <= m;
  }

  ScanResult next(ScannedFpdu& f, std::span<bytes_view> pieces, std::size_t* np);
  bool done() const { return at() == seg_.size(); }

 private:
  std::size_t at() const { return static_cast<std::size_t>(cur_.pos() - base_); }
  // At a Marker inside [at(), end): check it points to the current FPDU (0 between FPDUs)
  // and step over it.
  ScanResult marker(std::size_t end) {
    if (end - at() < kMarkerLen) return ScanResult::partial;
    return cur_.take_marker(seg_.data() + at()) ? ScanResult::ok : ScanResult::marker_error;
  }

  bytes_view seg_;
  std::uint64_t base_;
  bool crc_;
  std::size_t max_ulpdu_;
  MarkerCursor cur_;
};

ScanResult Scanner::next(ScannedFpdu& f, std::span<bytes_view> pieces, std::size_t* np) {
  const std::size_t size = seg_.size();
  const std::size_t start = at();
  if (cur_.at_marker()) {  // a Marker due at the FPDU start leads it (fpdu.h)
    if (const ScanResult r = marker(size); r != ScanResult::ok) return r;
  }
  cur_.begin_fpdu();
  const std::size_t h = at();
  if (size - h < kUlpduLengthLen) return ScanResult::partial;
  const std::size_t ulen = load_be16(seg_.data() + h);
  if (ulen > max_ulpdu_) return ScanResult::length_error;
  const std::size_t wire = cur_.wire_len(fpdu_len(ulen));
  if (wire > size - h) return ScanResult::partial;
  const std::size_t end = h + wire;

  // The ULPDU: the first hdr_len octets copied, the rest as views between Markers.
  cur_.advance(kUlpduLengthLen);
  const std::size_t hdr_len = std::min(ulen, kScanHdrLen);
  const std::size_t first_piece = *np;
  std::size_t have = 0, left = ulen;
  while (left > 0) {
    if (cur_.at_marker()) {
      if (const ScanResult r = marker(end); r != ScanResult::ok) return r;
      continue;
    }
    std::size_t k = cur_.clamp(left);
    if (k > end - at()) return ScanResult::partial;  // cannot happen: wire counts every Marker
    if (have < hdr_len) {
      const std::size_t c = std::min(k, hdr_len - have);
      std::memcpy(f.hdr.data() + have, seg_.data() + at(), c);
      have += c;
      cur_.advance(c);
      left -= c;
      k -= c;
    }
    if (k > 0) {
      if (*np == pieces.size()) return ScanResult::no_room;
      pieces[(*np)++] = seg_.subspan(at(), k);
      cur_.advance(k);
      left -= k;
    }
  }
  // Pad: in a 4-aligned Marker stream no Marker falls inside it, but one may follow it,
  // right before the CRC; that one is inside the FPDU and CRC-covered.
  cur_.advance(pad_len(ulen));
  if (at() < end && cur_.at_marker()) {
    if (const ScanResult r = marker(end); r != ScanResult::ok) return r;
  }
  if (at() > end || end - at() != kCrcLen) return ScanResult::partial;  // cannot happen
  // RFC 5044 section 4.4: the CRC covers the FPDU as sent, Markers included (fpdu.h).
  if (crc_ && crc32c(seg_.subspan(start, at() - start)) != load_crc(seg_.data() + at()))
    return ScanResult::crc_error;
  cur_.advance(kCrcLen);
  cur_.end_fpdu();
  f.offset = static_cast<std::uint32_t>(start);
  f.wire_len = static_cast<std::uint32_t>(end - start);
  f.ulpdu_len = static_cast<std::uint16_t>(ulen);
  f.hdr_len = static_cast<std::uint8_t>(hdr_len);
  f.pieces = std::span<const bytes_view>(pieces.data() + first_piece, *np - first_piece);
  return ScanResult::ok;
}

// scan_segment past its quick refusals. Out of line so that those refusals (every segment
// of a connection without CRC or Markers) do not pay for this frame; `pieces` as two words,
// so that scan_segment passes its stack arguments on without a wide load of them.
[[gnu::noinline]] ScanResult scan_fpdus(bytes_view seg, std::uint64_t stream_pos,
                                        const ScanConfig& cfg, std::span<ScannedFpdu> out,
                                        bytes_view* pieces_data, std::size_t pieces_size,
                                        std::size_t* count) {
  const std::span<bytes_view> pieces(pieces_data, pieces_size);
  Scanner s(seg, stream_pos, cfg);
  if (cfg.markers) {
    // RFC 5044 section 5: the first Marker tells whether the FPDU it falls in began
    // before the segment (then the segment cannot be placed on its own).
    bool seen = false;
    if (!s.first_marker_in_segment(&seen)) return ScanResult::partial;
    // Without CRC a Marker is the only evidence that the segment starts at an FPDU.
    if (!seen && !cfg.crc) return ScanResult::not_self_describing;
  }
  std::size_t n = 0, np = 0;
  ScannedFpdu spare;
  while (!s.done()) {
    // Found in place (a copy of a ScannedFpdu just written costs a stalled load); out may
    // be full while the segment is not placeable anyway: say which.
    ScannedFpdu& f = n < out.size() ? out[n] : spare;
    f = ScannedFpdu{};
    if (const ScanResult r = s.next(f, pieces, &np); r != ScanResult::ok) return r;
    if (n == out.size()) return ScanResult::no_room;
    ++n;
  }
  *count = n;
  return ScanResult::ok;
}

}  // namespace

const char* to_string(ScanResult r) {
  switch (r) {
    case ScanResult::ok:
      return "ok";
    case ScanResult::not_self_describing:
      return "not self-describing (no CRC and no Marker)";
    case ScanResult::partial:
      return "not exactly whole FPDUs";
    case ScanResult::crc_error:
      return "MPA CRC mismatch";
    case ScanResult::length_error:
      return "ULPDU_Length larger than the maximum accepted";
    case ScanResult::marker_error:
      return "Marker FPDUPTR disagrees with the FPDUs";
    case ScanResult::no_room:
      return "output too small";
  }
  return "unknown scan result";
}

ScanResult scan_segment(bytes_view seg, std::uint64_t stream_pos, const ScanConfig& cfg,
                        std::span<ScannedFpdu> out, std::span<bytes_view> pieces,
                        std::size_t* count) {
  *count = 0;
  if (!cfg.markers && !cfg.crc) return ScanResult::not_self_describing;
  // Offsets are 32-bit; no TCP segment comes near that.
  if (seg.empty() || seg.size() > UINT32_MAX) return ScanResult::partial;
  if (cfg.markers && stream_pos % 4 != 0) return ScanResult::partial;
  return scan_fpdus(seg, stream_pos, cfg, out, pieces.data(), pieces.size(), count);
}

}  // namespace esock::mpa
