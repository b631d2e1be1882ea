#include "tcp/dev/fault_text.h"

#include <charconv>
#include <cstdint>

namespace esock::tcp {

namespace {

bool parse_probability(std::string_view v, double* out) {
  // from_chars: no locale and no terminator (the text is a view into the whole line).
  double x = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc{} || end != v.data() + v.size() || !(x >= 0 && x <= 1)) return false;
  *out = x;
  return true;
}

bool parse_seed(std::string_view v, std::uint64_t* out) {
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), *out);
  return ec == std::errc{} && end == v.data() + v.size() && !v.empty();
}

}  // namespace

bool carries_tcp_payload(const FaultFrameInfo& f) {
  const bytes_view h = f.head;
  // Ethernet II (14), IPv4 (IHL), TCP (data offset): the payload is what IPv4's total
  // length leaves after the two headers (the frame's length may include Ethernet padding).
  // Read by hand, not with tcp/wire's Ipv4View: a tx frame's head holds the headers only
  // (the payload is in pieces) and its checksums may be left to the device, which that
  // view's checks refuse.
  if (h.size() < 14 + 20 || h[12] != 0x08 || h[13] != 0x00 || (h[14] >> 4) != 4 || h[23] != 6)
    return false;
  const std::size_t ihl = static_cast<std::size_t>(h[14] & 0x0f) * 4;
  if (ihl < 20 || h.size() < 14 + ihl + 13) return false;
  const std::size_t doff = static_cast<std::size_t>(h[14 + ihl + 12] >> 4) * 4;
  std::size_t total = static_cast<std::size_t>(h[16]) << 8 | h[17];
  if (total == 0) total = f.length - 14;  // TSO: the device fills it in
  return total > ihl + doff;
}

std::optional<FaultConfig> parse_fault_text(std::string_view text, std::string* why) {
  FaultConfig c;
  FaultSpec s;
  s.filter = carries_tcp_payload;
  if (text.empty()) {
    *why = "no fault named";
    return std::nullopt;
  }
  std::string seen;  // ",key," for each key given: a repeated one is refused
  for (bool more = true; more;) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    more = comma != std::string_view::npos;  // "loss=0.1," ends in an empty item: refused
    text = more ? text.substr(comma + 1) : std::string_view{};
    const std::size_t eq = item.find('=');
    const std::string_view key = item.substr(0, eq);
    const std::string_view val =
        eq == std::string_view::npos ? std::string_view{} : item.substr(eq + 1);
    bool ok = eq != std::string_view::npos;
    if (ok && seen.find("," + std::string(key) + ",") != std::string::npos) {
      *why = "'" + std::string(key) + "' is given twice";
      return std::nullopt;
    }
    seen += "," + std::string(key) + ",";
    if (!ok) {
    } else if (key == "loss") {
      ok = parse_probability(val, &s.loss);
    } else if (key == "reorder") {
      ok = parse_probability(val, &s.reorder);
    } else if (key == "duplicate") {
      ok = parse_probability(val, &s.duplicate);
    } else if (key == "corrupt") {
      ok = parse_probability(val, &s.corrupt);
      s.corrupt_payload_only = true;
    } else if (key == "seed") {
      ok = parse_seed(val, &c.seed);
    } else {
      *why = "unknown fault '" + std::string(key) + "' (loss, reorder, duplicate, corrupt, seed)";
      return std::nullopt;
    }
    if (!ok) {
      *why = "'" + std::string(item) +
             "' must be NAME=VALUE, a probability 0..1 (seed: an unsigned integer)";
      return std::nullopt;
    }
  }
  c.tx = s;
  c.rx = s;
  return c;
}

}  // namespace esock::tcp
