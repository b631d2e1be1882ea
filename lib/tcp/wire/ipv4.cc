#include "tcp/wire/ipv4.h"

#include "base/endian.h"
#include "tcp/wire/checksum.h"

namespace esock::tcp {

const char* to_string(Ipv4ParseError e) {
  switch (e) {
    case Ipv4ParseError::none:
      return "no error";
    case Ipv4ParseError::truncated:
      return "IPv4 datagram truncated";
    case Ipv4ParseError::bad_version:
      return "IP version is not 4";
    case Ipv4ParseError::bad_ihl:
      return "IPv4 IHL below 5";
    case Ipv4ParseError::bad_total_length:
      return "IPv4 Total Length below the header length";
    case Ipv4ParseError::bad_checksum:
      return "IPv4 header checksum mismatch";
    case Ipv4ParseError::bad_fragment:
      return "IPv4 fragment ends past 65535 octets";
  }
  return "unknown IPv4 error";
}

Ipv4ParseError Ipv4View::check(bytes_view packet, Ipv4View& out, bool verify_checksum) {
  if (packet.size() < ipv4_min_header) return Ipv4ParseError::truncated;
  const std::uint8_t vihl = packet[ipv4_off_vihl];
  if ((vihl >> 4) != 4) return Ipv4ParseError::bad_version;
  const std::size_t hlen = std::size_t{vihl & 0x0fu} * 4;
  if (hlen < ipv4_min_header) return Ipv4ParseError::bad_ihl;
  if (packet.size() < hlen) return Ipv4ParseError::truncated;
  const std::size_t total = load_be16(packet.data() + ipv4_off_total_len);
  if (total < hlen) return Ipv4ParseError::bad_total_length;
  // Octets beyond Total Length are link padding (RFC 894: Ethernet's 46-octet minimum).
  if (packet.size() < total) return Ipv4ParseError::truncated;
  // RFC 791 3.1: summing the header including its checksum gives all ones.
  if (verify_checksum && internet_checksum(packet.first(hlen)) != 0)
    return Ipv4ParseError::bad_checksum;
  const std::size_t frag_off =
      static_cast<std::size_t>(load_be16(packet.data() + ipv4_off_frag) & ipv4_frag_mask) * 8;
  // A fragment whose data would end past the largest datagram cannot be reassembled and
  // is the classic oversized-reassembly attack; the limit is on the datagram's data.
  if (frag_off + (total - hlen) > ipv4_max_total - hlen) return Ipv4ParseError::bad_fragment;
  out.data_ = packet.first(total);
  out.header_len_ = hlen;
  return Ipv4ParseError::none;
}

std::uint16_t Ipv4View::id() const {
  return load_be16(data_.data() + ipv4_off_id);
}
std::uint16_t Ipv4View::frag_word() const {
  return load_be16(data_.data() + ipv4_off_frag);
}
Ipv4Addr Ipv4View::src() const {
  return {load_be32(data_.data() + ipv4_off_src)};
}
Ipv4Addr Ipv4View::dst() const {
  return {load_be32(data_.data() + ipv4_off_dst)};
}

void emit_ipv4(const Ipv4Repr& r, mut_bytes out, bool fill_checksum) {
  std::uint8_t* p = out.data();
  p[ipv4_off_vihl] = 0x45;  // version 4, IHL 5: we never send options
  p[ipv4_off_tos] = r.tos;
  store_be16(p + ipv4_off_total_len, static_cast<std::uint16_t>(ipv4_min_header + r.payload_len));
  store_be16(p + ipv4_off_id, r.id);
  std::uint16_t frag = static_cast<std::uint16_t>((r.frag_offset / 8) & ipv4_frag_mask);
  if (r.dont_frag) frag |= ipv4_flag_df;
  if (r.more_frags) frag |= ipv4_flag_mf;
  store_be16(p + ipv4_off_frag, frag);
  p[ipv4_off_ttl] = r.ttl;
  p[ipv4_off_proto] = r.protocol;
  store_be16(p + ipv4_off_csum, 0);
  store_be32(p + ipv4_off_src, r.src.v);
  store_be32(p + ipv4_off_dst, r.dst.v);
  if (fill_checksum)
    store_be16(p + ipv4_off_csum, internet_checksum(bytes_view(p, ipv4_min_header)));
}

}  // namespace esock::tcp
