// Command-line value parsing shared by the example tools (esock_tcp, esock_iwarp, the
// rdma_tools' DPDK transport): strict, no exceptions, false on anything malformed.
#pragma once

#include <cstdint>
#include <string_view>

#include "tcp/wire/addr.h"

namespace esock::tools::cli {

// Decimal, 0x hex or 0 octal; with `suffixes`, one k/K, m/M or g/G multiplier (2^10,
// 2^20, 2^30). No sign, no overflow.
bool parse_u64(std::string_view s, std::uint64_t* out, bool suffixes);
// A finite value in [lo, hi].
bool parse_double(std::string_view s, double* out, double lo, double hi);
// 1..65535.
bool parse_port(std::string_view s, std::uint16_t* out);
// A.B.C.D[/N]; without "/N" the prefix is default_prefix.
bool parse_cidr(std::string_view s, tcp::Ipv4Addr* ip, std::uint8_t* prefix,
                std::uint8_t default_prefix = 32);

}  // namespace esock::tools::cli
