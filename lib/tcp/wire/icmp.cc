#include "tcp/wire/icmp.h"

#include <cstring>

#include "base/endian.h"
#include "tcp/wire/checksum.h"

namespace esock::tcp {

const char* to_string(IcmpParseError e) {
  switch (e) {
    case IcmpParseError::none:
      return "no error";
    case IcmpParseError::truncated:
      return "ICMP message shorter than 8 octets";
    case IcmpParseError::bad_checksum:
      return "ICMP checksum mismatch";
  }
  return "unknown ICMP error";
}

IcmpParseError parse_icmp(bytes_view message, IcmpRepr* out, bytes_view* data) {
  if (message.size() < icmp_header_len) return IcmpParseError::truncated;
  if (internet_checksum(message) != 0) return IcmpParseError::bad_checksum;
  const std::uint8_t* p = message.data();
  out->type = p[icmp_off_type];
  out->code = p[icmp_off_code];
  out->ident = load_be16(p + icmp_off_ident);
  out->seq = load_be16(p + icmp_off_seq);
  *data = message.subspan(icmp_header_len);
  return IcmpParseError::none;
}

void emit_icmp(const IcmpRepr& r, bytes_view data, mut_bytes out) {
  std::uint8_t* p = out.data();
  if (!data.empty() && data.data() != p + icmp_header_len)
    std::memmove(p + icmp_header_len, data.data(), data.size());
  p[icmp_off_type] = r.type;
  p[icmp_off_code] = r.code;
  store_be16(p + icmp_off_csum, 0);
  store_be16(p + icmp_off_ident, r.ident);
  store_be16(p + icmp_off_seq, r.seq);
  store_be16(p + icmp_off_csum, internet_checksum(bytes_view(p, icmp_header_len + data.size())));
}

}  // namespace esock::tcp
