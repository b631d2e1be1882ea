// MPA framing + deframing throughput against raw ISA-L CRC32c and memcpy over the same
// octets, in the same run. Each iteration moves a ~64 KiB stream of FPDUs of one payload
// size through Framer::frame and Deframer::feed (one feed per stream, so FPDUs without
// Markers take the deframer's zero-copy path; with Markers they are assembled).
#include <benchmark/benchmark.h>
#include <isa-l/crc.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "mpa/deframer.h"
#include "mpa/framer.h"

namespace {

using namespace esock;
using namespace esock::mpa;

constexpr std::size_t kStream = 64 * 1024;
const std::size_t kSizes[] = {512, 1460, 9000, 64512};

struct Mode {
  const char* name;
  bool markers, crc;
};
const Mode kModes[] = {{"markers+crc", true, true}, {"crc", false, true}, {"none", false, false}};

std::vector<std::uint8_t> data(std::size_t n) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(i * 131 + 7);
  return v;
}

void frame_deframe(benchmark::State& st, std::size_t size, Mode m) {
  const std::size_t count = (kStream + size - 1) / size;
  const auto payload = data(size * count);
  std::vector<std::uint8_t> wire(count * (size + 12 + 4 * (size / 500 + 2)));
  Framer f(m.markers, m.crc);
  Deframer d(m.markers, m.crc, size, 0);
  for (auto _ : st) {
    std::size_t w = 0;
    for (std::size_t i = 0; i < count; ++i)
      w += f.frame(bytes_view(payload).subspan(i * size, size), {wire.data() + w, wire.size() - w});
    std::size_t got = 0;
    const Error e = d.feed({wire.data(), w}, [&](bytes_view u) {
      benchmark::DoNotOptimize(u.data());
      got += u.size();
    });
    if (e != Error::none || got != payload.size()) st.SkipWithError("deframe failed");
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * payload.size()));
}

void crc_baseline(benchmark::State& st, std::size_t size) {
  const std::size_t count = (kStream + size - 1) / size;
  auto payload = data(size * count);
  for (auto _ : st) {
    for (std::size_t i = 0; i < count; ++i)
      benchmark::DoNotOptimize(crc32_iscsi(payload.data() + i * size, static_cast<int>(size), ~0u));
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * payload.size()));
}

void memcpy_baseline(benchmark::State& st, std::size_t size) {
  const std::size_t count = (kStream + size - 1) / size;
  const auto payload = data(size * count);
  std::vector<std::uint8_t> out(payload.size());
  for (auto _ : st) {
    for (std::size_t i = 0; i < count; ++i)
      std::memcpy(out.data() + i * size, payload.data() + i * size, size);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * payload.size()));
}

// Collects bytes/s per benchmark name so main can print one table.
class TableReporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, double> gbps;
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      auto it = r.counters.find("bytes_per_second");
      if (it != r.counters.end()) gbps[r.benchmark_name()] = it->second.value / 1e9;
    }
    ConsoleReporter::ReportRuns(runs);
  }
};

std::string name(const char* what, std::size_t size) {
  return std::string(what) + "/" + std::to_string(size);
}

}  // namespace

int main(int argc, char** argv) {
  for (std::size_t size : kSizes) {
    for (const Mode& m : kModes)
      benchmark::RegisterBenchmark(name(m.name, size).c_str(), frame_deframe, size, m);
    benchmark::RegisterBenchmark(name("isal_crc32_iscsi", size).c_str(), crc_baseline, size);
    benchmark::RegisterBenchmark(name("memcpy", size).c_str(), memcpy_baseline, size);
  }
  benchmark::Initialize(&argc, argv);
  TableReporter rep;
  benchmark::RunSpecifiedBenchmarks(&rep);
  std::printf(
      "\nMPA frame+deframe throughput, GB/s of ULPDU payload (64 KiB stream per "
      "iteration; baselines over the same octets)\n");
  std::printf("%-9s %12s %12s %12s %12s %12s\n", "payload", "markers+crc", "crc", "none",
              "isal crc", "memcpy");
  for (std::size_t size : kSizes) {
    std::printf("%-9zu", size);
    for (const char* col : {"markers+crc", "crc", "none", "isal_crc32_iscsi", "memcpy"}) {
      auto it = rep.gbps.find(name(col, size));
      if (it == rep.gbps.end())
        std::printf(" %12s", "-");
      else
        std::printf(" %12.2f", it->second);
    }
    std::printf("\n");
  }
  benchmark::Shutdown();
  return 0;
}
