#include "pcapng.h"

#include <cstring>
#include <fstream>
#include <iterator>

namespace esock::test {
namespace {

std::uint32_t rd32(const std::uint8_t* p, bool swap) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return swap ? __builtin_bswap32(v) : v;
}
std::uint16_t be16(const std::uint8_t* p) {
  return static_cast<std::uint16_t>(p[0] << 8 | p[1]);
}
std::uint32_t be32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} << 24 | std::uint32_t{p[1]} << 16 | std::uint32_t{p[2]} << 8 | p[3];
}

constexpr std::uint32_t kShb = 0x0A0D0D0A, kIdb = 1, kSpb = 3, kEpb = 6;
constexpr std::uint32_t kByteOrderMagic = 0x1A2B3C4D;
constexpr std::uint16_t kLinkEthernet = 1;

void parse_ethernet(const std::uint8_t* p, std::size_t n, std::vector<TcpSegment>& out) {
  if (n < 14) return;
  std::uint16_t type = be16(p + 12);
  std::size_t off = 14;
  while ((type == 0x8100 || type == 0x88a8) && n >= off + 4) {  // VLAN tags
    type = be16(p + off + 2);
    off += 4;
  }
  if (type != 0x0800 || n < off + 20) return;
  const std::uint8_t* ip = p + off;
  const std::size_t ihl = (ip[0] & 0x0f) * 4u;
  const std::size_t total = be16(ip + 2);
  if ((ip[0] >> 4) != 4 || ihl < 20 || total < ihl || n - off < total || ip[9] != 6) return;
  if ((be16(ip + 6) & 0x3fff) != 0) return;  // fragment
  const std::uint8_t* tcp = ip + ihl;
  const std::size_t tcp_len = total - ihl;
  if (tcp_len < 20) return;
  const std::size_t doff = (tcp[12] >> 4) * 4u;
  if (doff < 20 || doff > tcp_len) return;
  TcpSegment s;
  s.src_ip = be32(ip + 12);
  s.dst_ip = be32(ip + 16);
  s.src_port = be16(tcp);
  s.dst_port = be16(tcp + 2);
  s.seq = be32(tcp + 4);
  s.flags = tcp[13];
  s.payload.assign(tcp + doff, tcp + tcp_len);
  out.push_back(std::move(s));
}

}  // namespace

std::optional<std::vector<TcpSegment>> read_pcapng_tcp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  const std::vector<std::uint8_t> d{std::istreambuf_iterator<char>(f), {}};
  std::vector<TcpSegment> out;
  std::vector<std::uint16_t> link_types;
  bool swap = false;
  std::size_t off = 0;
  bool first = true;
  while (d.size() - off >= 12) {
    const std::uint8_t* b = d.data() + off;
    std::uint32_t type = rd32(b, false);
    if (type == kShb) {
      const std::uint32_t magic = rd32(b + 8, false);
      if (magic == kByteOrderMagic)
        swap = false;
      else if (magic == __builtin_bswap32(kByteOrderMagic))
        swap = true;
      else
        return std::nullopt;
      link_types.clear();
    } else if (first) {
      return std::nullopt;
    }
    first = false;
    type = rd32(b, swap);
    const std::uint32_t len = rd32(b + 4, swap);
    if (len < 12 || len % 4 != 0 || len > d.size() - off) return std::nullopt;
    if (type == kIdb && len >= 20) {
      std::uint16_t lt;
      std::memcpy(&lt, b + 8, 2);
      link_types.push_back(swap ? __builtin_bswap16(lt) : lt);
    } else if (type == kEpb && len >= 32) {
      const std::uint32_t iface = rd32(b + 8, swap);
      const std::uint32_t caplen = rd32(b + 20, swap);
      if (caplen <= len - 32 && iface < link_types.size() && link_types[iface] == kLinkEthernet)
        parse_ethernet(b + 28, caplen, out);
    } else if (type == kSpb && len >= 16 && !link_types.empty() && link_types[0] == kLinkEthernet) {
      const std::uint32_t orig = rd32(b + 8, swap);
      parse_ethernet(b + 12, std::min<std::size_t>(orig, len - 16), out);
    }
    off += len;
  }
  return out;
}

std::map<TcpDirection, std::vector<std::uint8_t>> reassemble_tcp(
    const std::vector<TcpSegment>& segments) {
  std::map<TcpDirection, std::vector<std::uint8_t>> streams;
  std::map<TcpDirection, std::uint32_t> next;  // next expected sequence number
  for (const TcpSegment& s : segments) {
    const TcpDirection dir{s.src_ip, s.dst_ip, s.src_port, s.dst_port};
    if (s.flags & 0x02) {  // SYN: the stream starts at seq + 1
      next[dir] = s.seq + 1;
      streams[dir];
      continue;
    }
    auto it = next.find(dir);
    if (it == next.end() || s.payload.empty()) continue;
    // Keep only the octets past what we have (a retransmission overlaps it).
    const std::uint32_t skip = it->second - s.seq;
    if (skip >= s.payload.size() && skip < 0x80000000u) continue;
    if (skip >= 0x80000000u) continue;  // a gap: this reader does not reorder
    std::vector<std::uint8_t>& st = streams[dir];
    st.insert(st.end(), s.payload.begin() + skip, s.payload.end());
    it->second += static_cast<std::uint32_t>(s.payload.size() - skip);
  }
  return streams;
}

}  // namespace esock::test
