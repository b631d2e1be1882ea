// Link and network addresses as plain values.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <string>

namespace esock::tcp {

struct MacAddr {
  std::array<std::uint8_t, 6> b{};

  friend constexpr auto operator<=>(const MacAddr&, const MacAddr&) = default;
  static constexpr MacAddr broadcast() { return {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}; }
  bool is_broadcast() const { return *this == broadcast(); }
  bool is_multicast() const { return (b[0] & 1) != 0; }
  std::string to_string() const;
};

// An IPv4 address in host order (so it compares and masks naturally).
struct Ipv4Addr {
  std::uint32_t v = 0;

  friend constexpr auto operator<=>(const Ipv4Addr&, const Ipv4Addr&) = default;
  static constexpr Ipv4Addr from_octets(std::uint8_t a, std::uint8_t b, std::uint8_t c,
                                        std::uint8_t d) {
    return {(std::uint32_t{a} << 24) | (std::uint32_t{b} << 16) | (std::uint32_t{c} << 8) | d};
  }
  // Parses dotted-quad text; returns false (and leaves *out alone) on anything else.
  static bool parse(const std::string& text, Ipv4Addr* out);
  std::string to_string() const;
};

// A TCP connection's identity as seen from this host.
struct FourTuple {
  Ipv4Addr local_ip;
  Ipv4Addr remote_ip;
  std::uint16_t local_port = 0;
  std::uint16_t remote_port = 0;

  friend constexpr auto operator<=>(const FourTuple&, const FourTuple&) = default;
};

}  // namespace esock::tcp
