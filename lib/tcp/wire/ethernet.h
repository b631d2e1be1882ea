// Ethernet II header (IEEE 802.3 clause 3.2.6 with an EtherType; RFC 894 for IPv4 over
// it): destination, source, EtherType, 14 octets, no FCS (the device strips it).
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/bytes.h"
#include "tcp/wire/addr.h"

namespace esock::tcp {

inline constexpr std::size_t eth_header_len = 14;
inline constexpr std::size_t eth_off_dst = 0;
inline constexpr std::size_t eth_off_src = 6;
inline constexpr std::size_t eth_off_type = 12;

namespace ethertype {
inline constexpr std::uint16_t ipv4 = 0x0800;
inline constexpr std::uint16_t arp = 0x0806;
inline constexpr std::uint16_t vlan = 0x8100;  // IEEE 802.1Q tag
inline constexpr std::uint16_t qinq = 0x88a8;  // IEEE 802.1ad service tag
}  // namespace ethertype

enum class EthParseError : std::uint8_t {
  none,
  truncated,         // fewer than 14 octets
  not_ethernet_ii,   // the type field is an IEEE 802.3 length (< 0x0600)
  vlan_unsupported,  // an 802.1Q/802.1ad tag: this interface is untagged
};
const char* to_string(EthParseError e);

struct EthernetRepr {
  MacAddr dst;
  MacAddr src;
  std::uint16_t ethertype = 0;
  friend bool operator==(const EthernetRepr&, const EthernetRepr&) = default;
};

// Checked view of a frame: after check() succeeds the accessors cannot fail.
class EthernetView {
 public:
  static EthParseError check(bytes_view frame, EthernetView& out);
  MacAddr dst() const { return mac_at(eth_off_dst); }
  MacAddr src() const { return mac_at(eth_off_src); }
  std::uint16_t ethertype() const;
  bytes_view payload() const { return data_.subspan(eth_header_len); }
  EthernetRepr repr() const { return {dst(), src(), ethertype()}; }

 private:
  MacAddr mac_at(std::size_t off) const;
  bytes_view data_;
};

// Writes the 14-octet header; out must hold eth_header_len octets.
void emit_ethernet(const EthernetRepr& r, mut_bytes out);

// Helpers for MAC addresses at a position in a buffer (6 octets each).
MacAddr load_mac(const std::uint8_t* p);
void store_mac(std::uint8_t* p, const MacAddr& m);

}  // namespace esock::tcp
