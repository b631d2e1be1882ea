#include "tcp/wire/tcp.h"

#include <algorithm>

#include "base/endian.h"

namespace esock::tcp {

namespace {

// RFC 9293 section 3.1 header layout.
constexpr std::size_t off_src_port = 0;
constexpr std::size_t off_dst_port = 2;
constexpr std::size_t off_seq = 4;
constexpr std::size_t off_ack = 8;
constexpr std::size_t off_data_offset = 12;  // high nibble, in 32-bit words
constexpr std::size_t off_flags = 13;
constexpr std::size_t off_window = 14;
constexpr std::size_t off_checksum = 16;
constexpr std::size_t off_urgent = 18;

// Option kinds and their fixed lengths.
constexpr std::uint8_t opt_eol = 0;
constexpr std::uint8_t opt_nop = 1;
constexpr std::uint8_t opt_mss = 2;             // RFC 9293 3.2
constexpr std::uint8_t opt_wscale = 3;          // RFC 7323 2.2
constexpr std::uint8_t opt_sack_permitted = 4;  // RFC 2018 2
constexpr std::uint8_t opt_sack = 5;            // RFC 2018 3
constexpr std::uint8_t opt_timestamps = 8;      // RFC 7323 3.2
constexpr std::size_t max_options = tcp_max_header - tcp_min_header;

// Every option is emitted padded to a 32-bit boundary with leading NOPs (RFC 7323
// appendix A's recommended layout), so these are the space each one takes.
constexpr std::size_t space_mss = 4;
constexpr std::size_t space_sack_permitted = 4;  // NOP NOP kind len
constexpr std::size_t space_wscale = 4;          // NOP kind len shift
constexpr std::size_t space_timestamps = 12;     // NOP NOP kind len tsval tsecr
constexpr std::size_t space_sack_base = 4;       // NOP NOP kind len, then 8 per block

std::size_t fixed_option_space(const TcpOptions& o) {
  std::size_t n = 0;
  if (o.mss) n += space_mss;
  if (o.sack_permitted) n += space_sack_permitted;
  if (o.wscale) n += space_wscale;
  if (o.timestamps) n += space_timestamps;
  return n;
}

// RFC 2018 section 3: as many SACK blocks as fit in the 40 option octets (3 with
// timestamps, 4 without); the receiver reports the most recent first, so the ones dropped
// are the oldest.
std::size_t sack_blocks_that_fit(const TcpOptions& o) {
  const std::size_t used = fixed_option_space(o);
  if (o.sack_count == 0 || used + space_sack_base + 8 > max_options) return 0;
  const std::size_t fit = (max_options - used - space_sack_base) / 8;
  return std::min({fit, std::size_t{o.sack_count}, o.sacks.size()});
}

// Checks a known option's length (RFC 9293 3.1: a TCP must handle an illegal option
// length without crashing; such a segment is dropped).
bool parse_option(std::uint8_t kind, const std::uint8_t* p, std::size_t len, TcpOptions* o) {
  switch (kind) {
    case opt_mss:
      if (len != 4) return false;
      o->mss = load_be16(p + 2);
      return true;
    case opt_wscale:
      if (len != 3) return false;
      o->wscale = p[2];  // RFC 7323 2.3's clamp to 14 is the engine's business
      return true;
    case opt_sack_permitted:
      if (len != 2) return false;
      o->sack_permitted = true;
      return true;
    case opt_sack: {
      if (len < 10 || (len - 2) % 8 != 0) return false;
      const std::size_t n = (len - 2) / 8;  // at most 4: the option space is 40 octets
      o->sack_count = static_cast<std::uint8_t>(n);
      for (std::size_t i = 0; i < n; ++i)
        o->sacks[i] = {load_be32(p + 2 + 8 * i), load_be32(p + 6 + 8 * i)};
      return true;
    }
    case opt_timestamps:
      if (len != 10) return false;
      o->timestamps = TcpTimestamps{load_be32(p + 2), load_be32(p + 6)};
      return true;
    default:
      return true;  // unknown: skipped (RFC 9293 3.1 MUST ignore options it does not know)
  }
}

}  // namespace

TcpParseError parse_tcp(bytes_view segment, TcpRepr* out, bytes_view* payload) {
  if (segment.size() < tcp_min_header) return TcpParseError::truncated;
  const std::uint8_t* p = segment.data();
  const std::size_t hlen = std::size_t{static_cast<unsigned>(p[off_data_offset] >> 4)} * 4;
  if (hlen < tcp_min_header) return TcpParseError::bad_data_offset;
  if (segment.size() < hlen) return TcpParseError::truncated;

  TcpRepr r;
  r.src_port = load_be16(p + off_src_port);
  r.dst_port = load_be16(p + off_dst_port);
  r.seq = load_be32(p + off_seq);
  r.ack = load_be32(p + off_ack);
  r.flags = p[off_flags];
  r.window = load_be16(p + off_window);
  r.urgent = load_be16(p + off_urgent);

  std::size_t i = tcp_min_header;
  while (i < hlen) {
    const std::uint8_t kind = p[i];
    if (kind == opt_eol) break;
    if (kind == opt_nop) {
      ++i;
      continue;
    }
    if (hlen - i < 2) return TcpParseError::bad_option;  // no room for the length octet
    const std::size_t len = p[i + 1];
    if (len < 2 || len > hlen - i) return TcpParseError::bad_option;
    if (!parse_option(kind, p + i, len, &r.options)) return TcpParseError::bad_option;
    i += len;
  }
  *out = r;
  *payload = segment.subspan(hlen);
  return TcpParseError::none;
}

std::size_t tcp_header_len(const TcpRepr& r) {
  const std::size_t sacks = sack_blocks_that_fit(r.options);
  return tcp_min_header + fixed_option_space(r.options) + (sacks ? space_sack_base + 8 * sacks : 0);
}

void emit_tcp(const TcpRepr& r, mut_bytes out) {
  const std::size_t hlen = tcp_header_len(r);
  std::uint8_t* p = out.data();
  store_be16(p + off_src_port, r.src_port);
  store_be16(p + off_dst_port, r.dst_port);
  store_be32(p + off_seq, r.seq);
  store_be32(p + off_ack, r.ack);
  p[off_data_offset] = static_cast<std::uint8_t>((hlen / 4) << 4);
  p[off_flags] = r.flags;
  store_be16(p + off_window, r.window);
  store_be16(p + off_checksum, 0);
  store_be16(p + off_urgent, r.urgent);

  const TcpOptions& o = r.options;
  std::uint8_t* q = p + tcp_min_header;
  if (o.mss) {
    q[0] = opt_mss;
    q[1] = 4;
    store_be16(q + 2, *o.mss);
    q += space_mss;
  }
  if (o.sack_permitted) {
    q[0] = opt_nop;
    q[1] = opt_nop;
    q[2] = opt_sack_permitted;
    q[3] = 2;
    q += space_sack_permitted;
  }
  if (o.wscale) {
    q[0] = opt_nop;
    q[1] = opt_wscale;
    q[2] = 3;
    q[3] = *o.wscale;
    q += space_wscale;
  }
  if (o.timestamps) {
    q[0] = opt_nop;
    q[1] = opt_nop;
    q[2] = opt_timestamps;
    q[3] = 10;
    store_be32(q + 4, o.timestamps->tsval);
    store_be32(q + 8, o.timestamps->tsecr);
    q += space_timestamps;
  }
  const std::size_t sacks = sack_blocks_that_fit(o);
  if (sacks) {
    q[0] = opt_nop;
    q[1] = opt_nop;
    q[2] = opt_sack;
    q[3] = static_cast<std::uint8_t>(2 + 8 * sacks);
    for (std::size_t i = 0; i < sacks; ++i) {
      store_be32(q + 4 + 8 * i, o.sacks[i].left);
      store_be32(q + 8 + 8 * i, o.sacks[i].right);
    }
  }
}

}  // namespace esock::tcp
