// CRC32c (Castagnoli) for MPA FPDUs, RFC 5044 section 4.4, computed by ISA-L.
#pragma once

#include <cstdint>

#include "base/bytes.h"

namespace esock::mpa {

// The finished, standard CRC32c of `data` (reflected, init and final XOR 0xffffffff:
// crc32c("123456789") == 0xe3069283). Chainable: crc32c(b, crc32c(a)) == crc32c(a + b).
std::uint32_t crc32c(bytes_view data, std::uint32_t crc = 0);

// The 4 CRC octets as MPA puts them on the wire. RFC 5044 section 4.4 takes the CRC from
// iSCSI (RFC 3720 section 12.1): the register is sent least significant octet first, which
// is what RFC 3720 appendix B.4 shows (32 zero octets -> aa 36 91 8a, the value 0x8a9136aa)
// and what Linux siw sends (checked against a siw capture in tests/unit/mpa). Tools that
// read the field as a big-endian number (tshark) therefore show the octets reversed.
inline void store_crc(std::uint8_t* p, std::uint32_t crc) {
  p[0] = static_cast<std::uint8_t>(crc);
  p[1] = static_cast<std::uint8_t>(crc >> 8);
  p[2] = static_cast<std::uint8_t>(crc >> 16);
  p[3] = static_cast<std::uint8_t>(crc >> 24);
}
inline std::uint32_t load_crc(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

}  // namespace esock::mpa
