// The fuzz input as a script of numbers (fuzz_tcp_tcb, fuzz_tcp_listen): big-endian, and
// zeros once the input is used up, so every input is a complete script.
#pragma once

#include <cstddef>
#include <cstdint>

namespace esock::tcp::fuzz {

struct Reader {
  const std::uint8_t* p;
  std::size_t n;
  std::uint8_t u8() { return n ? (--n, *p++) : 0; }
  std::uint16_t u16() { return static_cast<std::uint16_t>(u8() << 8 | u8()); }
  std::uint32_t u32() { return std::uint32_t{u16()} << 16 | u16(); }
};

}  // namespace esock::tcp::fuzz
