#include "tcp/wire/checksum_simd.h"

#include <algorithm>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace esock::tcp::detail {

#if defined(__x86_64__)
namespace {

// 64 octets per round: each 16-bit word is widened to a 32-bit lane (unpack with zero)
// and added. A 32-bit lane takes at most 2^16 words of 0xffff before it could carry out,
// so the lanes are widened into 64-bit sums every `flush_rounds` rounds (each round adds
// two words per lane).
constexpr std::size_t round_octets = 64;
constexpr std::size_t flush_rounds = 16384;

__attribute__((target("avx2"))) std::uint64_t widen(__m256i v) {
  const __m256i zero = _mm256_setzero_si256();
  const __m256i s =
      _mm256_add_epi64(_mm256_unpacklo_epi32(v, zero), _mm256_unpackhi_epi32(v, zero));
  const __m128i h = _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
  return static_cast<std::uint64_t>(_mm_cvtsi128_si64(h)) +
         static_cast<std::uint64_t>(_mm_extract_epi64(h, 1));
}

__attribute__((target("avx2"))) std::size_t sum_avx2(const std::uint8_t* p, std::size_t n,
                                                     std::uint64_t* acc) {
  const __m256i zero = _mm256_setzero_si256();
  const std::size_t rounds = n / round_octets;
  std::uint64_t total = 0;
  for (std::size_t done = 0; done < rounds;) {
    const std::size_t stop = done + std::min(flush_rounds, rounds - done);
    __m256i a = zero, b = zero;
    for (; done < stop; ++done) {
      const auto* q = reinterpret_cast<const __m256i*>(p + done * round_octets);
      const __m256i x = _mm256_loadu_si256(q);
      const __m256i y = _mm256_loadu_si256(q + 1);
      a = _mm256_add_epi32(a, _mm256_unpacklo_epi16(x, zero));
      b = _mm256_add_epi32(b, _mm256_unpackhi_epi16(x, zero));
      a = _mm256_add_epi32(a, _mm256_unpacklo_epi16(y, zero));
      b = _mm256_add_epi32(b, _mm256_unpackhi_epi16(y, zero));
    }
    total += widen(a) + widen(b);
  }
  *acc += total;
  return rounds * round_octets;
}

// The same with 512-bit registers: 128 octets per round, the same lane bound per round.
constexpr std::size_t round_octets_512 = 128;

// Through memory: GCC 12's 512-bit unpack and reduce intrinsics read an undefined value
// (-Wmaybe-uninitialized in its own header). Once per 2 MiB at most.
__attribute__((target("avx512bw"))) std::uint64_t widen512(__m512i v) {
  alignas(64) std::uint32_t lanes[16];
  _mm512_store_si512(lanes, v);
  std::uint64_t t = 0;
  for (const std::uint32_t l : lanes) t += l;
  return t;
}

__attribute__((target("avx512bw"))) std::size_t sum_avx512(const std::uint8_t* p, std::size_t n,
                                                           std::uint64_t* acc) {
  const __m512i zero = _mm512_setzero_si512();
  const std::size_t rounds = n / round_octets_512;
  std::uint64_t total = 0;
  for (std::size_t done = 0; done < rounds;) {
    const std::size_t stop = done + std::min(flush_rounds, rounds - done);
    __m512i a = zero, b = zero;
    for (; done < stop; ++done) {
      const std::uint8_t* q = p + done * round_octets_512;
      const __m512i x = _mm512_loadu_si512(q);
      const __m512i y = _mm512_loadu_si512(q + 64);
      a = _mm512_add_epi32(a, _mm512_unpacklo_epi16(x, zero));
      b = _mm512_add_epi32(b, _mm512_unpackhi_epi16(x, zero));
      a = _mm512_add_epi32(a, _mm512_unpacklo_epi16(y, zero));
      b = _mm512_add_epi32(b, _mm512_unpackhi_epi16(y, zero));
    }
    total += widen512(a) + widen512(b);
  }
  *acc += total;
  return rounds * round_octets_512;
}

const SumKernel kernels[] = {
    {"avx512bw", __builtin_cpu_supports("avx512bw") != 0, sum_avx512},
    {"avx2", __builtin_cpu_supports("avx2") != 0, sum_avx2},
};
const SumKernel* const chosen = [] {
  for (const SumKernel& k : kernels)
    if (k.have) return &k;
  return static_cast<const SumKernel*>(nullptr);
}();

}  // namespace

std::size_t sum_words_simd(const std::uint8_t* p, std::size_t n, std::uint64_t* acc) {
  // Short pieces (headers) stay scalar: a kernel consumes whole rounds only.
  if (chosen == nullptr || n < round_octets) return 0;
  return chosen->sum(p, n, acc);
}

std::span<const SumKernel> sum_kernels() {
  return kernels;
}

#else

std::size_t sum_words_simd(const std::uint8_t*, std::size_t, std::uint64_t*) {
  return 0;
}
std::span<const SumKernel> sum_kernels() {
  return {};
}

#endif

}  // namespace esock::tcp::detail
