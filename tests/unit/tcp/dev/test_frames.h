// Test frames for the device layer: Ethernet + IPv4 + TCP built by hand (the device tests
// must not depend on tcp/wire, which is written concurrently), and a BufHolder that counts
// its releases.
#pragma once

#include <cstdint>
#include <vector>

#include "base/buf_ref.h"
#include "base/endian.h"
#include "tcp/dev/device.h"
#include "tcp/dev/inet_csum.h"
#include "tcp/wire/checksum.h"

namespace esock::tcp::test {

inline constexpr std::size_t hdr_len = 14 + 20 + 20;

struct CountingHolder : BufHolder {
  int released = 0;
  CountingHolder() {
    release = [](BufHolder* h) { ++static_cast<CountingHolder*>(h)->released; };
  }
};

// A TCP segment with `payload_len` octets of `fill + i`; seq goes in the TCP header and in
// the first payload octets (when there is room) so tests can tell frames apart. Checksums
// are complete unless `offload`, in which case the IPv4 checksum is zero and the TCP
// checksum holds the pseudo-header sum (device.h's offload convention).
inline std::vector<std::uint8_t> tcp_frame(std::uint32_t seq, std::size_t payload_len,
                                           std::uint8_t fill = 0, bool offload = false) {
  std::vector<std::uint8_t> f(hdr_len + payload_len, 0);
  std::uint8_t* p = f.data();
  const std::uint8_t dst[6] = {0x02, 0, 0, 0, 0, 0x0b}, src[6] = {0x02, 0, 0, 0, 0, 0x0a};
  std::copy(dst, dst + 6, p);
  std::copy(src, src + 6, p + 6);
  store_be16(p + 12, 0x0800);
  std::uint8_t* ip = p + 14;
  ip[0] = 0x45;
  store_be16(ip + 2, static_cast<std::uint16_t>(20 + 20 + payload_len));
  store_be16(ip + 4, static_cast<std::uint16_t>(seq));
  store_be16(ip + 6, 0x4000);  // DF
  ip[8] = 64;
  ip[9] = 6;
  store_be32(ip + 12, 0x0a000001);
  store_be32(ip + 16, 0x0a000002);
  std::uint8_t* tcp = ip + 20;
  store_be16(tcp + 0, 40000);
  store_be16(tcp + 2, 5001);
  store_be32(tcp + 4, seq);
  tcp[12] = 5 << 4;
  tcp[13] = 0x18;  // PSH|ACK
  store_be16(tcp + 14, 65535);
  for (std::size_t i = 0; i < payload_len; ++i)
    f[hdr_len + i] = static_cast<std::uint8_t>(fill + i);
  if (payload_len >= 4) store_be32(f.data() + hdr_len, seq);
  fill_checksums(f, 14, true, true);
  if (offload) {
    store_be16(ip + 10, 0);
    // Pseudo-header sum, not complemented (RFC 9293 section 3.1 pseudo-header).
    store_be16(tcp + 16,
               ipv4_pseudo_header_sum(Ipv4Addr{load_be32(ip + 12)}, Ipv4Addr{load_be32(ip + 16)},
                                      ip_proto_tcp, static_cast<std::uint16_t>(20 + payload_len)));
  }
  return f;
}

// A TxFrame over `bytes`: the first hdr_len octets as head, the rest as one piece.
struct TxOf {
  TxPiece piece;
  TxFrame frame;
  explicit TxOf(const std::vector<std::uint8_t>& bytes, BufRef ref = {}) {
    const std::size_t h = std::min(bytes.size(), hdr_len);
    frame.head = bytes_view(bytes.data(), h);
    if (bytes.size() > h) {
      piece.data = bytes_view(bytes.data() + h, bytes.size() - h);
      piece.ref = std::move(ref);
      frame.payload = std::span<const TxPiece>(&piece, 1);
    }
  }
  TxOf(const TxOf&) = delete;
};

inline std::vector<std::uint8_t> to_vec(bytes_view b) {
  return {b.begin(), b.end()};
}

}  // namespace esock::tcp::test
