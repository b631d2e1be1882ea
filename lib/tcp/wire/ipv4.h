// IPv4 header (RFC 791 section 3.1). Options are allowed and skipped (nothing here needs
// them); the header checksum is verified unless the device already did.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/bytes.h"
#include "tcp/wire/addr.h"

namespace esock::tcp {

inline constexpr std::size_t ipv4_min_header = 20;
inline constexpr std::size_t ipv4_max_header = 60;
inline constexpr std::size_t ipv4_max_total = 65535;
inline constexpr std::size_t ipv4_off_vihl = 0;
inline constexpr std::size_t ipv4_off_tos = 1;
inline constexpr std::size_t ipv4_off_total_len = 2;
inline constexpr std::size_t ipv4_off_id = 4;
inline constexpr std::size_t ipv4_off_frag = 6;  // flags (3 bits) + fragment offset (13)
inline constexpr std::size_t ipv4_off_ttl = 8;
inline constexpr std::size_t ipv4_off_proto = 9;
inline constexpr std::size_t ipv4_off_csum = 10;
inline constexpr std::size_t ipv4_off_src = 12;
inline constexpr std::size_t ipv4_off_dst = 16;
inline constexpr std::uint16_t ipv4_flag_df = 0x4000;
inline constexpr std::uint16_t ipv4_flag_mf = 0x2000;
inline constexpr std::uint16_t ipv4_frag_mask = 0x1fff;  // in units of 8 octets

enum class Ipv4ParseError : std::uint8_t {
  none,
  truncated,         // shorter than 20 octets, than IHL, or than Total Length
  bad_version,       // version is not 4
  bad_ihl,           // IHL < 5
  bad_total_length,  // Total Length < IHL * 4
  bad_checksum,      // header checksum does not verify
  bad_fragment,      // fragment offset + data runs past 65535 octets
};
const char* to_string(Ipv4ParseError e);

// Checked view of a datagram. `payload()` ends at Total Length, so Ethernet padding of
// short frames is excluded.
class Ipv4View {
 public:
  static Ipv4ParseError check(bytes_view packet, Ipv4View& out, bool verify_checksum = true);
  std::size_t header_len() const { return header_len_; }
  std::uint16_t total_len() const { return static_cast<std::uint16_t>(data_.size()); }
  std::uint8_t tos() const { return data_[ipv4_off_tos]; }
  std::uint16_t id() const;
  bool dont_frag() const { return (frag_word() & ipv4_flag_df) != 0; }
  bool more_frags() const { return (frag_word() & ipv4_flag_mf) != 0; }
  // In octets (RFC 791: the field counts 8-octet units).
  std::size_t frag_offset() const {
    return static_cast<std::size_t>(frag_word() & ipv4_frag_mask) * 8;
  }
  bool is_fragment() const { return more_frags() || frag_offset() != 0; }
  std::uint8_t ttl() const { return data_[ipv4_off_ttl]; }
  std::uint8_t protocol() const { return data_[ipv4_off_proto]; }
  Ipv4Addr src() const;
  Ipv4Addr dst() const;
  bytes_view header() const { return data_.first(header_len_); }
  bytes_view payload() const { return data_.subspan(header_len_); }

 private:
  std::uint16_t frag_word() const;
  bytes_view data_;  // exactly Total Length octets
  std::size_t header_len_ = 0;
};

// Plain header fields for emitting a datagram without options.
struct Ipv4Repr {
  Ipv4Addr src;
  Ipv4Addr dst;
  std::uint8_t protocol = 0;
  std::uint8_t ttl = 64;
  std::uint8_t tos = 0;
  std::uint16_t id = 0;
  bool dont_frag = false;
  bool more_frags = false;
  std::uint16_t frag_offset = 0;  // octets, a multiple of 8
  std::uint16_t payload_len = 0;
  friend bool operator==(const Ipv4Repr&, const Ipv4Repr&) = default;
};

// Writes a 20-octet header into out (which must hold ipv4_min_header octets). With
// fill_checksum false the checksum field is left zero for the device to complete.
// Precondition: payload_len <= 65515.
void emit_ipv4(const Ipv4Repr& r, mut_bytes out, bool fill_checksum = true);

}  // namespace esock::tcp
