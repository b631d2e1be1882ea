// Fuzzes scan_segment on arbitrary octets (it must never crash or read out of bounds, and
// whatever it accepts the Deframer must deliver identically from the same position), and
// the sender side: frame_pieces of fuzzer-chosen ULPDUs equals frame(), the result scans
// back to the same ULPDUs, and a Deframer skipping a run of them delivers the others.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "mpa/deframer.h"
#include "mpa/framer.h"
#include "mpa/segment_scan.h"

using namespace esock;
using namespace esock::mpa;

namespace {

using Bytes = std::vector<std::uint8_t>;

void check(bool ok) {
  if (!ok) std::abort();
}

Bytes ulpdu_of(const ScannedFpdu& f, bytes_view seg) {
  check(f.hdr_len == std::min<std::size_t>(f.ulpdu_len, kScanHdrLen));
  Bytes u(f.hdr.begin(), f.hdr.begin() + f.hdr_len);
  for (const bytes_view& p : f.pieces) {
    check(!p.empty() && p.data() >= seg.data() && p.data() + p.size() <= seg.data() + seg.size());
    u.insert(u.end(), p.begin(), p.end());
  }
  check(u.size() == f.ulpdu_len);
  return u;
}

// Scans seg; on ok checks the FPDUs tile it and returns their ULPDUs.
ScanResult scan(bytes_view seg, std::uint64_t pos, const ScanConfig& cfg, std::size_t room,
                std::vector<Bytes>* ulpdus) {
  std::vector<ScannedFpdu> out(std::min(room, scan_max_fpdus(seg.size())));
  std::vector<bytes_view> pieces(scan_max_pieces(seg.size()));
  std::size_t n = 12345;
  const ScanResult r = scan_segment(seg, pos, cfg, out, pieces, &n);
  if (r != ScanResult::ok) {
    check(n == 0);
    return r;
  }
  std::size_t off = 0;
  for (std::size_t i = 0; i < n; ++i) {
    check(out[i].offset == off && out[i].wire_len >= 8 && out[i].ulpdu_len <= cfg.max_ulpdu);
    off += out[i].wire_len;
    ulpdus->push_back(ulpdu_of(out[i], seg));
  }
  check(off == seg.size());
  return r;
}

std::vector<Bytes> deframe(bytes_view wire, std::uint32_t pos, const ScanConfig& cfg, Error* e) {
  Deframer d(cfg.markers, cfg.crc, cfg.max_ulpdu, pos);
  std::vector<Bytes> got;
  *e = d.feed(wire, [&](bytes_view u) { got.emplace_back(u.begin(), u.end()); });
  if (*e == Error::none) check(d.at_boundary());
  return got;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 5) return 0;
  const std::uint8_t knobs = data[0];
  ScanConfig cfg{(knobs & 1) != 0, (knobs & 2) != 0, 1 + (std::size_t{data[3]} << 6)};
  std::uint32_t pos = std::uint32_t{data[1]} << 8 | data[2];
  if (cfg.markers && (knobs & 8)) pos &= ~3u;  // mostly where FPDUs can start
  const std::size_t room = knobs & 16 ? data[4] % 8 : SIZE_MAX;
  const bytes_view in(data + 5, size - 5);

  if (!(knobs & 4)) {
    // Arbitrary octets. Whatever scan accepts is what the Deframer delivers from there.
    std::vector<Bytes> got;
    if (scan(in, pos, cfg, room, &got) == ScanResult::ok) {
      Error e;
      check(deframe(in, pos, cfg, &e) == got && e == Error::none);
    }
    return 0;
  }

  // Sender side: ULPDUs cut from the input (2 octets header length and ULPDU length, then
  // the octets), framed in pieces and by copy, must agree; then scan and skip them.
  if (cfg.markers) pos &= ~3u;
  Framer fp(cfg.markers, cfg.crc, pos), fc(cfg.markers, cfg.crc, pos);
  std::vector<Bytes> ulpdus;
  std::vector<std::size_t> at;
  Bytes wire;
  std::size_t off = 0;
  while (in.size() - off >= 2 && ulpdus.size() < 32) {
    const std::size_t n =
        std::min<std::size_t>(in[off + 1] * 7u % (cfg.max_ulpdu + 1), in.size() - off - 2);
    const std::size_t h = std::min<std::size_t>(in[off] % 33, n);
    off += 2;
    ulpdus.emplace_back(in.begin() + off, in.begin() + off + n);
    off += n;
    const bytes_view u = ulpdus.back();
    const bytes_view pay = u.subspan(h);
    Bytes scratch(fp.scratch_size(h, n - h));
    std::vector<FramePiece> pieces(Framer::max_pieces(fp.fpdu_size(n), 1));
    const std::size_t count = fp.frame_pieces(u.first(h), {&pay, 1}, scratch, pieces);
    check(count > 0);
    at.push_back(wire.size());
    for (std::size_t i = 0; i < count; ++i)
      wire.insert(wire.end(), pieces[i].bytes.begin(), pieces[i].bytes.end());
    Bytes copy(fc.fpdu_size(n));
    check(fc.frame(u, copy) == copy.size());
    check(std::memcmp(copy.data(), wire.data() + at.back(), copy.size()) == 0);
  }
  at.push_back(wire.size());
  if (wire.empty()) return 0;
  std::vector<Bytes> got;
  const ScanResult r = scan(wire, pos, cfg, SIZE_MAX, &got);
  if (cfg.crc && (!cfg.markers || pos % 4 == 0)) check(r == ScanResult::ok && got == ulpdus);
  // Skip FPDUs [a, b) and feed the rest: exactly the others.
  const std::size_t a = data[4] % ulpdus.size(), b = a + (data[4] >> 4) % (ulpdus.size() - a + 1);
  Deframer d(cfg.markers, cfg.crc, cfg.max_ulpdu, pos);
  std::vector<Bytes> fed;
  auto sink = [&](bytes_view u) { fed.emplace_back(u.begin(), u.end()); };
  check(d.feed(bytes_view(wire).first(at[a]), sink) == Error::none);
  check(d.skip(at[b] - at[a]));
  check(d.feed(bytes_view(wire).subspan(at[b]), sink) == Error::none);
  std::vector<Bytes> want(ulpdus.begin(), ulpdus.begin() + static_cast<std::ptrdiff_t>(a));
  want.insert(want.end(), ulpdus.begin() + static_cast<std::ptrdiff_t>(b), ulpdus.end());
  check(fed == want && d.at_boundary());
  return 0;
}
