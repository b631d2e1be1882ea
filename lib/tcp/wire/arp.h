// ARP (RFC 826) for Ethernet and IPv4 only: the 28-octet packet that follows the Ethernet
// header. Other hardware or protocol types are rejected, not skipped: this interface has
// nothing to learn from them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/bytes.h"
#include "tcp/wire/addr.h"

namespace esock::tcp {

// RFC 826 "Packet format": ar$hrd, ar$pro, ar$hln, ar$pln, ar$op, ar$sha, ar$spa, ar$tha,
// ar$tpa.
inline constexpr std::size_t arp_len = 28;
inline constexpr std::size_t arp_off_hrd = 0;
inline constexpr std::size_t arp_off_pro = 2;
inline constexpr std::size_t arp_off_hln = 4;
inline constexpr std::size_t arp_off_pln = 5;
inline constexpr std::size_t arp_off_op = 6;
inline constexpr std::size_t arp_off_sha = 8;
inline constexpr std::size_t arp_off_spa = 14;
inline constexpr std::size_t arp_off_tha = 18;
inline constexpr std::size_t arp_off_tpa = 24;
inline constexpr std::uint16_t arp_hrd_ethernet = 1;  // ares_hrd$Ethernet (IANA)

enum class ArpOp : std::uint16_t { request = 1, reply = 2 };

enum class ArpParseError : std::uint8_t {
  none,
  truncated,      // fewer than 28 octets
  bad_hardware,   // ar$hrd is not Ethernet or ar$hln is not 6
  bad_protocol,   // ar$pro is not IPv4 or ar$pln is not 4
  bad_operation,  // neither request nor reply (e.g. RARP, InARP)
};
const char* to_string(ArpParseError e);

struct ArpRepr {
  ArpOp op = ArpOp::request;
  MacAddr sha;   // sender hardware address
  Ipv4Addr spa;  // sender protocol address
  MacAddr tha;   // target hardware address (ignored in requests)
  Ipv4Addr tpa;  // target protocol address
  friend bool operator==(const ArpRepr&, const ArpRepr&) = default;
};

// Checked view; Ethernet padding after the 28 octets is allowed and ignored.
class ArpView {
 public:
  static ArpParseError check(bytes_view packet, ArpView& out);
  ArpOp op() const;
  MacAddr sha() const;
  Ipv4Addr spa() const;
  MacAddr tha() const;
  Ipv4Addr tpa() const;
  ArpRepr repr() const { return {op(), sha(), spa(), tha(), tpa()}; }

 private:
  bytes_view data_;
};

inline ArpParseError parse_arp(bytes_view packet, ArpRepr* out) {
  ArpView v;
  const ArpParseError e = ArpView::check(packet, v);
  if (e == ArpParseError::none) *out = v.repr();
  return e;
}

// Writes the 28-octet packet; out must hold arp_len octets.
void emit_arp(const ArpRepr& r, mut_bytes out);

}  // namespace esock::tcp
