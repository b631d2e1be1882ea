// Byte spans used across esock's engines.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace esock {

using bytes_view = std::span<const std::uint8_t>;
using mut_bytes = std::span<std::uint8_t>;

}  // namespace esock
