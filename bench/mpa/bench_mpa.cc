// MPA framing + deframing throughput against raw ISA-L CRC32c and memcpy over the same
// octets, in the same run. Each iteration moves a ~64 KiB stream of FPDUs of one payload
// size through Framer::frame and Deframer::feed (one feed per stream, so FPDUs without
// Markers take the deframer's zero-copy path; with Markers they are assembled).
//
// Then the two paths that run on every segment of the DPDK fast path, over the same ~64 KiB
// stream: Framer::frame_pieces (zero-copy framing: each ULPDU a 14-octet DDP tagged header
// plus one payload view, as lib/esock/rnic's sender hands them over) and scan_segment (each
// FPDU a segment of its own, as an aligned sender sends them; every one found and verified).
// Without Markers or CRC a segment is not self-describing, so scan "none" measures only
// that refusal.
#include <benchmark/benchmark.h>
#include <isa-l/crc.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "mpa/deframer.h"
#include "mpa/framer.h"
#include "mpa/segment_scan.h"

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
// The per-segment paths, at segment-sized payloads (and one jumbo frame).
const std::size_t kSegSizes[] = {512, 1460, 9000};
constexpr std::size_t kDdpHdr = 14;  // RFC 5041 tagged buffer header, framed as `hdr`

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

void pieces(benchmark::State& st, std::size_t size, Mode m) {
  const std::size_t count = (kStream + size - 1) / size;
  const auto ulpdus = data(size * count);
  const std::size_t plen = size - kDdpHdr;
  std::vector<std::uint8_t> scratch(kDdpHdr + 16 + 4 * (size / 500 + 2));
  std::vector<FramePiece> out(Framer::max_pieces(size + 12 + 4 * (size / 500 + 2), 1));
  Framer f(m.markers, m.crc);
  for (auto _ : st) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const bytes_view ulpdu = bytes_view(ulpdus).subspan(i * size, size);
      const bytes_view payload = ulpdu.subspan(kDdpHdr, plen);
      const std::size_t k = f.frame_pieces(ulpdu.first(kDdpHdr), {&payload, 1}, scratch, out);
      benchmark::DoNotOptimize(out.data());
      benchmark::ClobberMemory();
      n += k != 0;
    }
    if (n != count) st.SkipWithError("frame_pieces failed");
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * ulpdus.size()));
}

void scan(benchmark::State& st, std::size_t size, Mode m) {
  const std::size_t count = (kStream + size - 1) / size;
  const auto payload = data(size * count);
  std::vector<std::uint8_t> wire(count * (size + 12 + 4 * (size / 500 + 2)));
  struct Segment {
    bytes_view bytes;
    std::uint64_t pos;
  };
  std::vector<Segment> segs;
  Framer f(m.markers, m.crc);
  std::size_t w = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t pos = f.position();
    const std::size_t n =
        f.frame(bytes_view(payload).subspan(i * size, size), {wire.data() + w, wire.size() - w});
    segs.push_back({{wire.data() + w, n}, pos});
    w += n;
  }
  const ScanConfig cfg{m.markers, m.crc, kMaxUlpdu};
  const ScanResult want = m.markers || m.crc ? ScanResult::ok : ScanResult::not_self_describing;
  std::vector<ScannedFpdu> fpdus(scan_max_fpdus(segs.front().bytes.size()));
  std::vector<bytes_view> views(scan_max_pieces(segs.front().bytes.size()));
  for (auto _ : st) {
    std::size_t got = 0;
    for (const Segment& s : segs) {
      std::size_t n = 0;
      const ScanResult r = scan_segment(s.bytes, s.pos, cfg, fpdus, views, &n);
      benchmark::DoNotOptimize(fpdus.data());
      got += r == want && n == (r == ScanResult::ok ? 1u : 0u);  // one FPDU, or the refusal
    }
    if (got != count) st.SkipWithError("scan failed");
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
  for (std::size_t size : kSegSizes) {
    for (const Mode& m : kModes)
      benchmark::RegisterBenchmark(name((std::string("pieces_") + m.name).c_str(), size).c_str(),
                                   pieces, size, m);
    for (const Mode& m : kModes)
      benchmark::RegisterBenchmark(name((std::string("scan_") + m.name).c_str(), size).c_str(),
                                   scan, size, m);
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
  std::printf(
      "\nPer-segment paths, GB/s of ULPDU: Framer::frame_pieces (14-octet header + one payload "
      "view) and scan_segment (one FPDU per segment; \"none\" is refused at once)\n");
  std::printf("%-9s %12s %12s %12s %12s %12s %12s\n", "payload", "pieces m+c", "pieces crc",
              "pieces none", "scan m+c", "scan crc", "scan none");
  for (std::size_t size : kSegSizes) {
    std::printf("%-9zu", size);
    for (const char* op : {"pieces_", "scan_"}) {
      for (const Mode& m : kModes) {
        auto it = rep.gbps.find(name((std::string(op) + m.name).c_str(), size));
        if (it == rep.gbps.end())
          std::printf(" %12s", "-");
        else
          std::printf(" %12.2f", it->second);
      }
    }
    std::printf("\n");
  }
  benchmark::Shutdown();
  return 0;
}
