#include "mpa/crc32c.h"

#include <isa-l/crc.h>

#include <climits>

namespace esock::mpa {

std::uint32_t crc32c(bytes_view data, std::uint32_t crc) {
  // ISA-L's crc32_iscsi works on the raw register: it takes the register as its seed and
  // returns it without the final inversion, so the standard value is ~register.
  std::uint32_t reg = ~crc;
  const std::uint8_t* p = data.data();
  std::size_t n = data.size();
  while (n > 0) {  // its length is an int
    const std::size_t chunk = n < static_cast<std::size_t>(INT_MAX) ? n : INT_MAX;
    reg = crc32_iscsi(const_cast<unsigned char*>(p), static_cast<int>(chunk), reg);
    p += chunk;
    n -= chunk;
  }
  return ~reg;
}

}  // namespace esock::mpa
