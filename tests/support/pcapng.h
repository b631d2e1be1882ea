// A tiny test-only pcapng reader: Ethernet/IPv4/TCP segments and per-direction TCP stream
// reassembly, enough to replay reference captures (../shared/captures) in golden tests.
// Not for production: no IPv6, no IP fragments, no out-of-order reassembly.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace esock::test {

struct TcpSegment {
  std::uint32_t src_ip = 0, dst_ip = 0;  // host order
  std::uint16_t src_port = 0, dst_port = 0;
  std::uint32_t seq = 0;
  std::uint8_t flags = 0;  // TCP flags octet (SYN 0x02, FIN 0x01, ...)
  std::vector<std::uint8_t> payload;
};

// Reads all Enhanced/Simple Packet Blocks of Ethernet interfaces and returns their
// IPv4/TCP segments in capture order. nullopt if the file cannot be read or is not pcapng.
std::optional<std::vector<TcpSegment>> read_pcapng_tcp(const std::string& path);

struct TcpDirection {
  std::uint32_t src_ip, dst_ip;
  std::uint16_t src_port, dst_port;
  auto operator<=>(const TcpDirection&) const = default;
};

// Each direction's byte stream from its SYN on (retransmitted octets counted once).
std::map<TcpDirection, std::vector<std::uint8_t>> reassemble_tcp(
    const std::vector<TcpSegment>& segments);

}  // namespace esock::test
