#include "tcp/wire/addr.h"

#include <cstdio>

namespace esock::tcp {

std::string MacAddr::to_string() const {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3], b[4],
                b[5]);
  return buf;
}

std::string Ipv4Addr::to_string() const {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%u.%u.%u.%u", (v >> 24) & 0xffu, (v >> 16) & 0xffu,
                (v >> 8) & 0xffu, v & 0xffu);
  return buf;
}

// Strict dotted-quad: four decimal fields of 1 to 3 digits, each at most 255. The
// inet_aton shorthands ("10.1", hex, octal) are refused: a configuration typo should fail
// rather than name another host.
bool Ipv4Addr::parse(const std::string& text, Ipv4Addr* out) {
  std::uint32_t v = 0;
  std::size_t i = 0;
  for (int field = 0; field < 4; ++field) {
    if (field > 0) {
      if (i >= text.size() || text[i] != '.') return false;
      ++i;
    }
    std::uint32_t octet = 0;
    std::size_t digits = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9' && digits < 4) {
      octet = octet * 10 + static_cast<std::uint32_t>(text[i] - '0');
      ++i;
      ++digits;
    }
    if (digits == 0 || digits > 3 || octet > 255) return false;
    v = (v << 8) | octet;
  }
  if (i != text.size()) return false;
  *out = Ipv4Addr{v};
  return true;
}

}  // namespace esock::tcp
