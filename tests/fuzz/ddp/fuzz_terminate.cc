// Terminate body parser: whatever parses must emit back to the same octets.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ddp/wire.h"

using namespace esock;
using namespace esock::ddp;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Terminate t;
  if (parse(bytes_view(data, size), t) != WireError::ok) return 0;
  if (t.length() != size) __builtin_trap();
  std::vector<std::uint8_t> out(size);
  if (emit(t, out) != size) __builtin_trap();
  // Reserved bits (low 13 of the control word) are not kept: compare the rest.
  for (std::size_t i = 0; i < size; ++i) {
    const std::uint8_t mask = i == 2 ? 0xe0 : i == 3 ? 0x00 : 0xff;
    if ((out[i] & mask) != (data[i] & mask)) __builtin_trap();
  }
  return 0;
}
