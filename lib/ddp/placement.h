// Payload placement helpers (internal to lib/ddp): copy a payload given as gather pieces
// (the MPA deframer's views with Markers stepped over, or one contiguous ULPDU payload)
// straight into a tagged buffer or a receive WR's scatter list. No allocation, no staging
// copy: one memcpy per piece/SGE overlap.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>

#include "base/bytes.h"
#include "ddp/qp.h"

namespace esock::ddp::detail {

inline std::uint64_t total_size(std::span<const bytes_view> pieces) {
  std::uint64_t n = 0;
  for (const bytes_view p : pieces) n += p.size();
  return n;
}

// dst has room for total_size(pieces) octets (the caller validated the STag range).
inline void copy_pieces(std::uint8_t* dst, std::span<const bytes_view> pieces) {
  for (const bytes_view p : pieces) {
    if (p.empty()) continue;
    std::memcpy(dst, p.data(), p.size());
    dst += p.size();
  }
}

// Scatters the pieces to message offset `off` of the scatter list. The caller checked that
// off + total_size(pieces) fits the list (RFC 5041 section 7.2, Message too long); the
// bound is kept here anyway so a wrong caller cannot write past the last SGE.
inline void scatter(std::span<const Sge> sg, std::uint64_t off,
                    std::span<const bytes_view> pieces) {
  std::size_t i = 0;
  while (i < sg.size() && off >= sg[i].length) off -= sg[i++].length;
  for (bytes_view p : pieces) {
    while (!p.empty()) {
      if (i == sg.size()) return;
      const std::size_t n = std::min<std::uint64_t>(sg[i].length - off, p.size());
      std::memcpy(sg[i].addr + off, p.data(), n);
      p = p.subspan(n);
      off += n;
      while (i < sg.size() && off >= sg[i].length) {
        off = 0;
        ++i;
      }
    }
  }
}

}  // namespace esock::ddp::detail
