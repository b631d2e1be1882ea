// ICMP (RFC 792) as far as this stack answers it: echo request and echo reply. Other
// messages parse (type, code, the 4 octets after the checksum) so callers can count them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/bytes.h"

namespace esock::tcp {

inline constexpr std::size_t icmp_header_len = 8;
inline constexpr std::size_t icmp_off_type = 0;
inline constexpr std::size_t icmp_off_code = 1;
inline constexpr std::size_t icmp_off_csum = 2;
inline constexpr std::size_t icmp_off_ident = 4;  // echo: identifier
inline constexpr std::size_t icmp_off_seq = 6;    // echo: sequence number

namespace icmp_type {
inline constexpr std::uint8_t echo_reply = 0;
inline constexpr std::uint8_t echo_request = 8;
}  // namespace icmp_type

enum class IcmpParseError : std::uint8_t {
  none,
  truncated,     // fewer than 8 octets
  bad_checksum,  // RFC 792: the checksum covers the whole ICMP message
};
const char* to_string(IcmpParseError e);

struct IcmpRepr {
  std::uint8_t type = 0;
  std::uint8_t code = 0;
  std::uint16_t ident = 0;  // echo identifier (other types: octets 4-5)
  std::uint16_t seq = 0;    // echo sequence number (other types: octets 6-7)
  friend bool operator==(const IcmpRepr&, const IcmpRepr&) = default;
};

// Parses and verifies the message (the IPv4 payload); *data is what follows the 8-octet
// header (an echo's data).
IcmpParseError parse_icmp(bytes_view message, IcmpRepr* out, bytes_view* data);

// Writes header + data into out (which must hold icmp_header_len + data.size() octets)
// with the checksum filled in. `data` may alias out's tail (an in-place reply).
void emit_icmp(const IcmpRepr& r, bytes_view data, mut_bytes out);

}  // namespace esock::tcp
