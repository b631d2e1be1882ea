#include "tcp/dev/inet_csum.h"

#include "base/endian.h"

namespace esock::tcp {
namespace {

// IPv4 header (RFC 791 section 3.1) offsets.
constexpr std::size_t ip_ver_ihl = 0;
constexpr std::size_t ip_total_len = 2;
constexpr std::size_t ip_frag = 6;
constexpr std::size_t ip_proto = 9;
constexpr std::size_t ip_csum = 10;
constexpr std::size_t ip_src = 12;
constexpr std::size_t ip_min_len = 20;
constexpr std::uint8_t proto_tcp = 6;
constexpr std::uint8_t proto_udp = 17;
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

std::uint32_t pseudo_sum(const std::uint8_t* ip, std::uint8_t proto, std::size_t l4_len) {
  // RFC 9293 section 3.1: source, destination, zero, protocol, TCP length.
  std::uint32_t s = inet_sum(bytes_view(ip + ip_src, 8));
  s += proto;
  s += static_cast<std::uint32_t>(l4_len);
  return s;
}

std::size_t l4_csum_offset(std::uint8_t proto) {
  return proto == proto_tcp ? tcp_csum_off : udp_csum_off;
}

std::size_t l4_min_len(std::uint8_t proto) {
  return proto == proto_tcp ? 20 : 8;
}

}  // namespace

std::uint32_t inet_sum(bytes_view data, std::uint32_t sum) {
  std::uint64_t s = sum;
  std::size_t i = 0;
  for (; i + 1 < data.size(); i += 2) s += load_be16(data.data() + i);
  if (i < data.size()) s += std::uint32_t{data[i]} << 8;
  while (s >> 32) s = (s & 0xffffffffu) + (s >> 32);
  return static_cast<std::uint32_t>(s);
}

std::uint16_t inet_fold(std::uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffffu) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum & 0xffffu);
}

bool fill_checksums(mut_bytes frame, std::size_t l2_len, bool ip, bool l4) {
  Ipv4Span s;
  if (!locate(frame, l2_len, &s)) return false;
  std::uint8_t* iph = frame.data() + l2_len;
  bool wrote = false;
  if (ip) {
    store_be16(iph + ip_csum, 0);
    store_be16(iph + ip_csum, inet_fold(inet_sum(bytes_view(iph, s.ihl))));
    wrote = true;
  }
  const bool is_l4 = s.proto == proto_tcp || s.proto == proto_udp;
  if (l4 && is_l4 && !s.fragment && s.total - s.ihl >= l4_min_len(s.proto)) {
    std::uint8_t* seg = iph + s.ihl;
    const std::size_t seg_len = s.total - s.ihl;
    const std::size_t off = l4_csum_offset(s.proto);
    store_be16(seg + off, 0);
    std::uint16_t c =
        inet_fold(inet_sum(bytes_view(seg, seg_len), pseudo_sum(iph, s.proto, seg_len)));
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
  if (inet_fold(inet_sum(bytes_view(iph, s.ihl))) != 0) return false;
  const bool is_l4 = s.proto == proto_tcp || s.proto == proto_udp;
  if (!is_l4 || s.fragment || s.total - s.ihl < l4_min_len(s.proto)) return true;
  const std::uint8_t* seg = iph + s.ihl;
  const std::size_t seg_len = s.total - s.ihl;
  if (s.proto == proto_udp && load_be16(seg + udp_csum_off) == 0) return true;
  return inet_fold(inet_sum(bytes_view(seg, seg_len), pseudo_sum(iph, s.proto, seg_len))) == 0;
}

}  // namespace esock::tcp
