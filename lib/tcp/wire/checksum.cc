#include "tcp/wire/checksum.h"

#include <bit>
#include <cstring>

#include "base/endian.h"
#include "tcp/wire/checksum_simd.h"

namespace esock::tcp {

namespace {

// Folds a 64-bit ones' complement accumulator to 16 bits (RFC 1071 section 2(C): carries
// are added back in; the order of folding does not matter).
std::uint16_t fold(std::uint64_t s) {
  s = (s & 0xffffffffu) + (s >> 32);
  s = (s & 0xffffffffu) + (s >> 32);
  s = (s & 0xffffu) + (s >> 16);
  s = (s & 0xffffu) + (s >> 16);
  return static_cast<std::uint16_t>(s);
}

std::uint16_t swap16(std::uint16_t v) {
  return static_cast<std::uint16_t>((v << 8) | (v >> 8));
}

// Sums `data` as native-order 16-bit words, as if it started at an even position.
// RFC 1071 section 2(B): the ones' complement sum is byte-order independent up to a final
// swap, so the loads need no byte swapping. The vector unit takes the bulk; the rest is
// read 8 octets at a time and added as two 32-bit halves to a 64-bit accumulator.
std::uint16_t sum_native(const std::uint8_t* p, std::size_t n) {
  std::uint64_t a = 0, b = 0;
  const std::size_t bulk = detail::sum_words_simd(p, n, &a);  // even: parity unchanged
  p += bulk;
  n -= bulk;
  while (n >= 16) {
    std::uint64_t x, y;
    std::memcpy(&x, p, 8);
    std::memcpy(&y, p + 8, 8);
    a += (x & 0xffffffffu) + (x >> 32);
    b += (y & 0xffffffffu) + (y >> 32);
    p += 16;
    n -= 16;
  }
  if (n >= 8) {
    std::uint64_t x;
    std::memcpy(&x, p, 8);
    a += (x & 0xffffffffu) + (x >> 32);
    p += 8;
    n -= 8;
  }
  while (n >= 2) {
    std::uint16_t w;
    std::memcpy(&w, p, 2);
    b += w;
    p += 2;
    n -= 2;
  }
  if (n == 1) {
    // The odd octet is the first (high, in network order) octet of a word padded with a
    // zero octet (RFC 1071 section 4.1's trailing-byte rule).
    const std::uint16_t w = std::endian::native == std::endian::little
                                ? std::uint16_t{p[0]}
                                : static_cast<std::uint16_t>(p[0] << 8);
    a += w;
  }
  return fold(a + (b & 0xffffffffu) + (b >> 32));
}

}  // namespace

void InetChecksum::add(bytes_view data) {
  if (data.empty()) return;
  std::uint16_t s = sum_native(data.data(), data.size());
  if constexpr (std::endian::native == std::endian::little) s = swap16(s);
  // A piece that starts at an odd position has its octets in the other halves of the
  // words, which in a ones' complement sum is the byte-swapped sum (RFC 1071 2(B)).
  if (odd_) s = swap16(s);
  sum_ += s;
  if (data.size() & 1) odd_ = !odd_;
}

std::uint16_t InetChecksum::sum() const {
  return fold(sum_);
}

std::uint16_t internet_checksum(bytes_view data) {
  InetChecksum c;
  c.add(data);
  return c.checksum();
}

std::uint16_t ipv4_pseudo_header_sum(Ipv4Addr src, Ipv4Addr dst, std::uint8_t proto,
                                     std::uint16_t l4_len) {
  InetChecksum c;
  c.add_u32(src.v);
  c.add_u32(dst.v);
  c.add_word(proto);  // a zero octet, then the protocol
  c.add_word(l4_len);
  return c.sum();
}

bool tcp_checksum_ok(Ipv4Addr src, Ipv4Addr dst, bytes_view segment) {
  if (segment.size() > 0xffff) return false;
  InetChecksum c;
  c.add_word(
      ipv4_pseudo_header_sum(src, dst, ip_proto_tcp, static_cast<std::uint16_t>(segment.size())));
  c.add(segment);
  // RFC 1071 section 1: summing data that includes its own checksum gives all ones.
  return c.sum() == 0xffff;
}

void fill_tcp_checksum(Ipv4Addr src, Ipv4Addr dst, mut_bytes header,
                       std::span<const bytes_view> payload) {
  std::size_t len = header.size();
  for (const bytes_view& p : payload) len += p.size();
  store_be16(header.data() + 16, 0);
  InetChecksum c;
  c.add_word(ipv4_pseudo_header_sum(src, dst, ip_proto_tcp, static_cast<std::uint16_t>(len)));
  c.add(header);
  for (const bytes_view& p : payload) c.add(p);
  store_be16(header.data() + 16, c.checksum());
}

}  // namespace esock::tcp
