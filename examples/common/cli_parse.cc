#include "cli_parse.h"

#include <cerrno>
#include <cstdlib>
#include <string>

namespace esock::tools::cli {

bool parse_u64(std::string_view s, std::uint64_t* out, bool suffixes) {
  if (s.empty() || s[0] == '-') return false;
  const std::string text(s);
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 0);
  if (errno != 0 || end == text.c_str()) return false;
  std::uint64_t mult = 1;
  if (suffixes && *end != '\0' && end[1] == '\0') {
    switch (*end) {
      case 'k':
      case 'K':
        mult = 1ull << 10;
        break;
      case 'm':
      case 'M':
        mult = 1ull << 20;
        break;
      case 'g':
      case 'G':
        mult = 1ull << 30;
        break;
      default:
        return false;
    }
    ++end;
  }
  if (*end != '\0' || v > UINT64_MAX / mult) return false;
  *out = v * mult;
  return true;
}

bool parse_double(std::string_view s, double* out, double lo, double hi) {
  const std::string text(s);
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !(v >= lo && v <= hi)) return false;
  *out = v;
  return true;
}

bool parse_port(std::string_view s, std::uint16_t* out) {
  std::uint64_t v = 0;
  if (!parse_u64(s, &v, false) || v == 0 || v > 65535) return false;
  *out = static_cast<std::uint16_t>(v);
  return true;
}

bool parse_cidr(std::string_view s, tcp::Ipv4Addr* ip, std::uint8_t* prefix,
                std::uint8_t default_prefix) {
  const auto slash = s.find('/');
  std::uint64_t p = default_prefix;
  if (slash != std::string_view::npos && (!parse_u64(s.substr(slash + 1), &p, false) || p > 32))
    return false;
  if (!tcp::Ipv4Addr::parse(std::string(s.substr(0, slash)), ip)) return false;
  *prefix = static_cast<std::uint8_t>(p);
  return true;
}

}  // namespace esock::tools::cli
