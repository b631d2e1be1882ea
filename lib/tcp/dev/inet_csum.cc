#include "tcp/dev/inet_csum.h"

#include "base/endian.h"
#include "tcp/wire/checksum.h"

namespace esock::tcp {
namespace {

// IPv4 header (RFC 791 section 3.1) offsets.
constexpr std::size_t ip_ver_ihl = 0;
constexpr std::size_t ip_total_len = 2;
constexpr std::size_t ip_frag = 6;
constexpr std::size_t ip_proto = 9;
constexpr std::size_t ip_csum = 10;
constexpr std::size_t ip_src = 12;
constexpr std::size_t ip_dst = 16;
constexpr std::size_t ip_min_len = 20;
constexpr std::uint8_t proto_tcp = ip_proto_tcp;
constexpr std::uint8_t proto_udp = ip_proto_udp;
constexpr std::size_t tcp_csum_off = 16;  // RFC 9293 section 3.1
constexpr std::size_t udp_csum_off = 6;   // RFC 768
constexpr std::uint16_t ethertype_ipv4 = 0x0800;

struct Ipv4Span {
  std::size_t ihl = 0;    // header bytes
  std::size_t total = 0;  // datagram bytes actually present
  std::uint8_t proto = 0;
  bool fragment = false;
};

// Locates the IPv4 datagram; false when the frame is not (complete enough) IPv4.
bool locate(bytes_view frame, std::size_t l2_len, Ipv4Span* out) {
  if (l2_len < 14 || frame.size() < l2_len || frame.size() - l2_len < ip_min_len) return false;
  if (load_be16(frame.data() + l2_len - 2) != ethertype_ipv4) return false;
  const std::uint8_t* ip = frame.data() + l2_len;
  if ((ip[ip_ver_ihl] >> 4) != 4) return false;
  const std::size_t ihl = std::size_t{ip[ip_ver_ihl] & 0x0fu} * 4;
  const std::size_t avail = frame.size() - l2_len;
  std::size_t total = load_be16(ip + ip_total_len);
  // A TSO super-frame may carry total length 0 or a value that does not cover the whole
  // frame; the capture shows what is there, so trust the bytes present in that case.
  if (total == 0 || total > avail) total = avail;
  if (ihl < ip_min_len || ihl > total) return false;
  out->ihl = ihl;
  out->total = total;
  out->proto = ip[ip_proto];
  // More-fragments or a non-zero offset: the L4 checksum covers the reassembled datagram.
  out->fragment = (load_be16(ip + ip_frag) & 0x3fffu) != 0;
  return true;
}

// The ones' complement sum of the pseudo-header (RFC 9293 section 3.1) and the segment.
std::uint16_t l4_sum(const std::uint8_t* ip, std::uint8_t proto, bytes_view seg) {
  InetChecksum c;
  c.add_word(ipv4_pseudo_header_sum(Ipv4Addr{load_be32(ip + ip_src)},
                                    Ipv4Addr{load_be32(ip + ip_dst)}, proto,
                                    static_cast<std::uint16_t>(seg.size())));
  c.add(seg);
  return c.sum();
}

std::size_t l4_csum_offset(std::uint8_t proto) {
  return proto == proto_tcp ? tcp_csum_off : udp_csum_off;
}

std::size_t l4_min_len(std::uint8_t proto) {
  return proto == proto_tcp ? 20 : 8;
}

}  // namespace

bool fill_checksums(mut_bytes frame, std::size_t l2_len, bool ip, bool l4) {
  Ipv4Span s;
  if (!locate(frame, l2_len, &s)) return false;
  std::uint8_t* iph = frame.data() + l2_len;
  bool wrote = false;
  if (ip) {
    store_be16(iph + ip_csum, 0);
    store_be16(iph + ip_csum, internet_checksum(bytes_view(iph, s.ihl)));
    wrote = true;
  }
  const bool is_l4 = s.proto == proto_tcp || s.proto == proto_udp;
  if (l4 && is_l4 && !s.fragment && s.total - s.ihl >= l4_min_len(s.proto)) {
    std::uint8_t* seg = iph + s.ihl;
    const std::size_t seg_len = s.total - s.ihl;
    const std::size_t off = l4_csum_offset(s.proto);
    store_be16(seg + off, 0);
    std::uint16_t c = static_cast<std::uint16_t>(~l4_sum(iph, s.proto, bytes_view(seg, seg_len)));
    // RFC 768: a computed UDP checksum of zero is sent as all ones (zero means "none").
    if (s.proto == proto_udp && c == 0) c = 0xffff;
    store_be16(seg + off, c);
    wrote = true;
  }
  return wrote;
}

bool checksums_ok(bytes_view frame, std::size_t l2_len) {
  Ipv4Span s;
  if (!locate(frame, l2_len, &s)) return false;
  const std::uint8_t* iph = frame.data() + l2_len;
  if (internet_checksum(bytes_view(iph, s.ihl)) != 0) return false;
  const bool is_l4 = s.proto == proto_tcp || s.proto == proto_udp;
  if (!is_l4 || s.fragment || s.total - s.ihl < l4_min_len(s.proto)) return true;
  const std::uint8_t* seg = iph + s.ihl;
  const std::size_t seg_len = s.total - s.ihl;
  if (s.proto == proto_udp && load_be16(seg + udp_csum_off) == 0) return true;
  return l4_sum(iph, s.proto, bytes_view(seg, seg_len)) == 0xffff;
}

}  // namespace esock::tcp
