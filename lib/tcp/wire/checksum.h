// The Internet checksum (RFC 1071) and the IPv4 pseudo-header (RFC 9293 section 3.1) that
// TCP covers. Every segment passes through here when the device offers no checksum offload,
// so the running sum reads 8 octets at a time into a 64-bit accumulator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "base/bytes.h"
#include "tcp/wire/addr.h"

namespace esock::tcp {

// A running ones' complement sum over a sequence of byte pieces, as if they were one
// contiguous buffer: a piece may have any length and start at any (odd or even) position.
// Values returned and taken are 16-bit words as numbers (what load_be16 reads); store them
// with store_be16.
class InetChecksum {
 public:
  // Appends `data` at the current position.
  void add(bytes_view data);
  // Adds one 16-bit word that sits at an even position of the summed data (pseudo-header
  // fields); it does not move the current position.
  void add_word(std::uint16_t w) { sum_ += w; }
  void add_u32(std::uint32_t v) {
    add_word(static_cast<std::uint16_t>(v >> 16));
    add_word(static_cast<std::uint16_t>(v));
  }
  // The folded ones' complement sum (0xffff over data that carries a correct checksum).
  std::uint16_t sum() const;
  // The checksum to store: the ones' complement of the sum.
  std::uint16_t checksum() const { return static_cast<std::uint16_t>(~sum()); }

 private:
  std::uint64_t sum_ = 0;  // unfolded; fits as long as fewer than 2^47 octets are added
  bool odd_ = false;       // an odd number of octets has been added so far
};

// The checksum of one buffer (e.g. an IPv4 or ICMP header with its checksum field zero).
std::uint16_t internet_checksum(bytes_view data);

inline constexpr std::uint8_t ip_proto_icmp = 1;
inline constexpr std::uint8_t ip_proto_tcp = 6;
inline constexpr std::uint8_t ip_proto_udp = 17;

// RFC 9293 section 3.1: the 96-bit pseudo-header (source, destination, zero, protocol,
// TCP length) as a folded, uncomplemented sum. With checksum offload this value goes into
// the TCP checksum field and the NIC completes it (device.h).
std::uint16_t ipv4_pseudo_header_sum(Ipv4Addr src, Ipv4Addr dst, std::uint8_t proto,
                                     std::uint16_t l4_len);

// True when `segment` (TCP header and data) carries a correct checksum for src -> dst.
bool tcp_checksum_ok(Ipv4Addr src, Ipv4Addr dst, bytes_view segment);

// Computes the checksum of a segment given as its header (checksum field zero or anything:
// it is cleared first) and payload pieces, and stores it in header[16..18).
// Precondition: header.size() >= 20 and header + pieces fit in 65535 octets.
void fill_tcp_checksum(Ipv4Addr src, Ipv4Addr dst, mut_bytes header,
                       std::span<const bytes_view> payload);

}  // namespace esock::tcp
