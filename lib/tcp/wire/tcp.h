// TCP header and options (RFC 9293 section 3.1; MSS 3.7.1; window scale and timestamps
// RFC 7323 sections 2 and 3; SACK-permitted and SACK RFC 2018 sections 2 and 3).
// The engine works on TcpRepr only; parse/emit live here so it never touches bytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "base/bytes.h"
#include "tcp/wire/addr.h"

namespace esock::tcp {

namespace tcp_flag {
inline constexpr std::uint8_t fin = 0x01;
inline constexpr std::uint8_t syn = 0x02;
inline constexpr std::uint8_t rst = 0x04;
inline constexpr std::uint8_t psh = 0x08;
inline constexpr std::uint8_t ack = 0x10;
inline constexpr std::uint8_t urg = 0x20;
inline constexpr std::uint8_t ece = 0x40;
inline constexpr std::uint8_t cwr = 0x80;
}  // namespace tcp_flag

inline constexpr std::size_t tcp_min_header = 20;
inline constexpr std::size_t tcp_max_header = 60;

struct SackBlock {
  std::uint32_t left = 0;   // first sequence number of the block
  std::uint32_t right = 0;  // sequence number just after the block
  friend constexpr bool operator==(const SackBlock&, const SackBlock&) = default;
};

struct TcpTimestamps {
  std::uint32_t tsval = 0;
  std::uint32_t tsecr = 0;
  friend constexpr bool operator==(const TcpTimestamps&, const TcpTimestamps&) = default;
};

struct TcpOptions {
  std::optional<std::uint16_t> mss;         // kind 2, SYN only
  std::optional<std::uint8_t> wscale;       // kind 3, SYN only (shift count as sent)
  bool sack_permitted = false;              // kind 4, SYN only
  std::optional<TcpTimestamps> timestamps;  // kind 8
  std::uint8_t sack_count = 0;              // kind 5: number of valid entries in sacks
  std::array<SackBlock, 4> sacks{};
  friend bool operator==(const TcpOptions&, const TcpOptions&) = default;
};

struct TcpRepr {
  std::uint16_t src_port = 0;
  std::uint16_t dst_port = 0;
  std::uint32_t seq = 0;
  std::uint32_t ack = 0;
  std::uint8_t flags = 0;    // tcp_flag bits
  std::uint16_t window = 0;  // as on the wire (unscaled)
  std::uint16_t urgent = 0;
  TcpOptions options;

  bool has(std::uint8_t f) const { return (flags & f) != 0; }
  friend bool operator==(const TcpRepr&, const TcpRepr&) = default;
};

enum class TcpParseError : std::uint8_t {
  none,
  truncated,        // shorter than 20 octets or than its data offset
  bad_data_offset,  // data offset < 5
  bad_option,       // an option runs past the header or has an impossible length
};

// Parses the header at the start of `segment` (the IP payload). Unknown options are
// skipped; a malformed known option is an error (RFC 9293 3.1: a TCP MUST be prepared to
// handle an illegal option length without crashing; we drop the segment). On success
// *payload is the data after the header.
TcpParseError parse_tcp(bytes_view segment, TcpRepr* out, bytes_view* payload);

// Length of the header emit_tcp writes for `r` (20 + options, padded to 4).
std::size_t tcp_header_len(const TcpRepr& r);

// Writes the header (checksum field zero) into out, which must hold tcp_header_len(r).
void emit_tcp(const TcpRepr& r, mut_bytes out);

}  // namespace esock::tcp
