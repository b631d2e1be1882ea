#include "tcp/wire/ethernet.h"

#include <cstring>

#include "base/endian.h"

namespace esock::tcp {

const char* to_string(EthParseError e) {
  switch (e) {
    case EthParseError::none:
      return "no error";
    case EthParseError::truncated:
      return "frame shorter than an Ethernet header";
    case EthParseError::not_ethernet_ii:
      return "IEEE 802.3 length field instead of an EtherType";
    case EthParseError::vlan_unsupported:
      return "VLAN-tagged frame";
  }
  return "unknown Ethernet error";
}

MacAddr load_mac(const std::uint8_t* p) {
  MacAddr m;
  std::memcpy(m.b.data(), p, m.b.size());
  return m;
}

void store_mac(std::uint8_t* p, const MacAddr& m) {
  std::memcpy(p, m.b.data(), m.b.size());
}

EthParseError EthernetView::check(bytes_view frame, EthernetView& out) {
  if (frame.size() < eth_header_len) return EthParseError::truncated;
  const std::uint16_t type = load_be16(frame.data() + eth_off_type);
  // Values up to 1500 are 802.3 lengths; 0x0600 is where EtherTypes begin.
  if (type < 0x0600) return EthParseError::not_ethernet_ii;
  if (type == ethertype::vlan || type == ethertype::qinq) return EthParseError::vlan_unsupported;
  out.data_ = frame;
  return EthParseError::none;
}

std::uint16_t EthernetView::ethertype() const {
  return load_be16(data_.data() + eth_off_type);
}

MacAddr EthernetView::mac_at(std::size_t off) const {
  return load_mac(data_.data() + off);
}

void emit_ethernet(const EthernetRepr& r, mut_bytes out) {
  store_mac(out.data() + eth_off_dst, r.dst);
  store_mac(out.data() + eth_off_src, r.src);
  store_be16(out.data() + eth_off_type, r.ethertype);
}

}  // namespace esock::tcp
