#include "tcp/wire/arp.h"

#include "base/endian.h"
#include "tcp/wire/ethernet.h"

namespace esock::tcp {

const char* to_string(ArpParseError e) {
  switch (e) {
    case ArpParseError::none:
      return "no error";
    case ArpParseError::truncated:
      return "ARP packet shorter than 28 octets";
    case ArpParseError::bad_hardware:
      return "ARP hardware type is not Ethernet";
    case ArpParseError::bad_protocol:
      return "ARP protocol type is not IPv4";
    case ArpParseError::bad_operation:
      return "ARP operation is neither request nor reply";
  }
  return "unknown ARP error";
}

ArpParseError ArpView::check(bytes_view packet, ArpView& out) {
  if (packet.size() < arp_len) return ArpParseError::truncated;
  const std::uint8_t* p = packet.data();
  if (load_be16(p + arp_off_hrd) != arp_hrd_ethernet || p[arp_off_hln] != 6)
    return ArpParseError::bad_hardware;
  if (load_be16(p + arp_off_pro) != ethertype::ipv4 || p[arp_off_pln] != 4)
    return ArpParseError::bad_protocol;
  const std::uint16_t op = load_be16(p + arp_off_op);
  if (op != static_cast<std::uint16_t>(ArpOp::request) &&
      op != static_cast<std::uint16_t>(ArpOp::reply))
    return ArpParseError::bad_operation;
  out.data_ = packet.first(arp_len);
  return ArpParseError::none;
}

ArpOp ArpView::op() const {
  return static_cast<ArpOp>(load_be16(data_.data() + arp_off_op));
}
MacAddr ArpView::sha() const {
  return load_mac(data_.data() + arp_off_sha);
}
Ipv4Addr ArpView::spa() const {
  return {load_be32(data_.data() + arp_off_spa)};
}
MacAddr ArpView::tha() const {
  return load_mac(data_.data() + arp_off_tha);
}
Ipv4Addr ArpView::tpa() const {
  return {load_be32(data_.data() + arp_off_tpa)};
}

void emit_arp(const ArpRepr& r, mut_bytes out) {
  std::uint8_t* p = out.data();
  store_be16(p + arp_off_hrd, arp_hrd_ethernet);
  store_be16(p + arp_off_pro, ethertype::ipv4);
  p[arp_off_hln] = 6;
  p[arp_off_pln] = 4;
  store_be16(p + arp_off_op, static_cast<std::uint16_t>(r.op));
  store_mac(p + arp_off_sha, r.sha);
  store_be32(p + arp_off_spa, r.spa.v);
  store_mac(p + arp_off_tha, r.tha);
  store_be32(p + arp_off_tpa, r.tpa.v);
}

}  // namespace esock::tcp
