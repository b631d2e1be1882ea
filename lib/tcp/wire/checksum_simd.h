// The bulk of the Internet checksum (RFC 1071) with the widest vector unit the CPU has.
// Every payload octet the stack sends or receives on a device without checksum offload
// passes through here, so on memif it is one of the few per-octet passes left.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace esock::tcp::detail {

// Sums the first `n` octets at `p` as native-order 16-bit words into a 64-bit ones'
// complement accumulator (unfolded: the caller folds), as the scalar loop would, and
// returns how many octets it consumed: a multiple of the vector width, 0 when the CPU
// has no vector unit this build can use or `n` is short. RFC 1071 section 2(B) makes the
// sum byte-order independent, and section 2(C) lets it be taken in any grouping, so lanes
// may accumulate separately and be added at the end.
std::size_t sum_words_simd(const std::uint8_t* p, std::size_t n, std::uint64_t* acc);

// The kernels sum_words_simd chooses from (AVX-512BW first, then AVX2), each with the same
// contract, callable directly where the CPU has them (tests compare each with the scalar
// sum): `have` says whether it may run here.
struct SumKernel {
  const char* name;
  bool have;
  std::size_t (*sum)(const std::uint8_t* p, std::size_t n, std::uint64_t* acc);
};
std::span<const SumKernel> sum_kernels();

}  // namespace esock::tcp::detail
