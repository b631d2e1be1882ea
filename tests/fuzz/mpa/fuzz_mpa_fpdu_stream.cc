// Fuzzes the deframer (Markers and CRC on/off, input split at points taken from the input)
// and checks that framing then deframing fuzzer-chosen ULPDUs is the identity.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "mpa/deframer.h"
#include "mpa/framer.h"

using namespace esock;
using namespace esock::mpa;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return 0;
  const bool markers = data[0] & 1, crc = data[0] & 2;
  // Marker positions are only meaningful on a 4-aligned stream (FPDUs are 4-aligned).
  const std::uint32_t start = markers ? (data[1] & 0x7f) * 4u : data[1];
  const std::uint8_t split_seed = data[2];
  const std::size_t max_ulpdu = 1 + (static_cast<std::size_t>(data[3]) << 5);
  const bytes_view in(data + 4, size - 4);

  // 1. Arbitrary octets: must never crash; an error is sticky.
  {
    Deframer d(markers, crc, max_ulpdu, start);
    std::size_t off = 0, total = 0;
    Error e = Error::none;
    std::uint8_t s = split_seed;
    while (off < in.size()) {
      const std::size_t k = std::min<std::size_t>(1 + s % 97, in.size() - off);
      s = static_cast<std::uint8_t>(s * 73 + 41);
      e = d.feed(in.subspan(off, k), [&](bytes_view u) {
        check(u.size() <= max_ulpdu);
        total += u.size();
      });
      off += k;
      if (e != Error::none) break;
    }
    if (e != Error::none) check(d.feed(in, [](bytes_view) { std::abort(); }) == e);
  }

  // 2. Frame ULPDUs cut from the input (length from 2 octets, then that many octets), then
  //    deframe them with splits: identity.
  {
    Framer f(markers, crc, start);
    std::vector<std::vector<std::uint8_t>> ulpdus;
    std::vector<std::uint8_t> wire;
    std::size_t off = 0;
    while (in.size() - off >= 2 && ulpdus.size() < 64) {
      std::size_t n = (std::size_t{in[off]} << 8 | in[off + 1]) % (max_ulpdu + 1);
      off += 2;
      n = std::min(n, in.size() - off);
      ulpdus.emplace_back(in.begin() + off, in.begin() + off + n);
      off += n;
      const std::size_t at = wire.size();
      wire.resize(at + f.fpdu_size(n));
      check(f.frame(ulpdus.back(), {wire.data() + at, wire.size() - at}) == wire.size() - at);
    }
    Deframer d(markers, crc, max_ulpdu, start);
    std::size_t i = 0, pos = 0;
    std::uint8_t s = split_seed;
    while (pos < wire.size()) {
      const std::size_t k = std::min<std::size_t>(1 + s % 61, wire.size() - pos);
      s = static_cast<std::uint8_t>(s * 37 + 11);
      const Error e = d.feed({wire.data() + pos, k}, [&](bytes_view u) {
        check(i < ulpdus.size() && u.size() == ulpdus[i].size() &&
              (u.empty() || std::memcmp(u.data(), ulpdus[i].data(), u.size()) == 0));
        ++i;
      });
      check(e == Error::none);
      pos += k;
    }
    check(i == ulpdus.size() && d.at_boundary());
  }
  return 0;
}
