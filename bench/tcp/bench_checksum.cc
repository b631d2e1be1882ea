// The Internet checksum's per-octet pass (lib/tcp/wire/checksum_simd.cc) against memcpy
// over the same octets, in the same run: each vector kernel the CPU has, the scalar loop
// (the public InetChecksum on pieces shorter than one vector round, summed), and what the
// stack calls (InetChecksum::add, which picks the widest kernel), at segment sizes from a
// standard frame to a memif jumbo frame and a 64 KiB TSO-sized one, hot in cache.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "tcp/wire/checksum.h"
#include "tcp/wire/checksum_simd.h"

namespace {

using namespace esock;

std::vector<std::uint8_t> data(std::size_t n) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(i * 131 + 7);
  return v;
}

void inet_checksum(benchmark::State& st) {
  const auto d = data(static_cast<std::size_t>(st.range(0)));
  for (auto _ : st) {
    tcp::InetChecksum c;
    c.add(d);
    benchmark::DoNotOptimize(c.sum());
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations()) * st.range(0));
}

// The scalar loop alone: 63-octet pieces never reach a vector kernel (one round is 64).
void scalar(benchmark::State& st) {
  const auto d = data(static_cast<std::size_t>(st.range(0)));
  for (auto _ : st) {
    tcp::InetChecksum c;
    for (std::size_t off = 0; off < d.size(); off += 62)
      c.add(bytes_view(d).subspan(off, std::min<std::size_t>(62, d.size() - off)));
    benchmark::DoNotOptimize(c.sum());
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations()) * st.range(0));
}

void kernel(benchmark::State& st, const tcp::detail::SumKernel* k) {
  if (!k->have) {
    st.SkipWithError("not on this CPU");
    return;
  }
  const auto d = data(static_cast<std::size_t>(st.range(0)));
  for (auto _ : st) {
    std::uint64_t acc = 0;
    benchmark::DoNotOptimize(k->sum(d.data(), d.size(), &acc));
    benchmark::DoNotOptimize(acc);
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations()) * st.range(0));
}

void memcpy_baseline(benchmark::State& st) {
  const auto d = data(static_cast<std::size_t>(st.range(0)));
  std::vector<std::uint8_t> out(d.size());
  for (auto _ : st) {
    std::memcpy(out.data(), d.data(), d.size());
    benchmark::DoNotOptimize(out.data());
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations()) * st.range(0));
}

constexpr std::int64_t kSizes[] = {1460, 16000, 65536};

}  // namespace

int main(int argc, char** argv) {
  for (const std::int64_t n : kSizes) {
    benchmark::RegisterBenchmark("memcpy", memcpy_baseline)->Arg(n);
    benchmark::RegisterBenchmark("InetChecksum::add", inet_checksum)->Arg(n);
    benchmark::RegisterBenchmark("scalar", scalar)->Arg(n);
    for (const tcp::detail::SumKernel& k : tcp::detail::sum_kernels())
      benchmark::RegisterBenchmark(k.name, kernel, &k)->Arg(n);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
