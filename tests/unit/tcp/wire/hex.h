// Test helper: bytes from a hex string (whitespace ignored), so golden frames read like
// a tshark -x dump.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace esock::tcp::test {

inline std::vector<std::uint8_t> from_hex(std::string_view s) {
  std::vector<std::uint8_t> out;
  int hi = -1;
  for (char c : s) {
    int v;
    if (c >= '0' && c <= '9')
      v = c - '0';
    else if (c >= 'a' && c <= 'f')
      v = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      v = c - 'A' + 10;
    else
      continue;
    if (hi < 0) {
      hi = v;
    } else {
      out.push_back(static_cast<std::uint8_t>(hi * 16 + v));
      hi = -1;
    }
  }
  return out;
}

}  // namespace esock::tcp::test
