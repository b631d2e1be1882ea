// The system calls one AZ-SDP asynchronous read costs (docs/sockets.md, "The asynchronous
// receiver"), each timed alone through esock's own code, against a copy of the same octets
// (what the read would otherwise do): the probe (page_flip::private_anonymous), the move
// out (page_flip::staging), the guard (page_guard::protect, no-access), the move back
// (page_flip::land) and the release (page_guard::release). No network: the "placement" is
// a memset into the staging pages. Prints a markdown table, microseconds per call, the
// median of `rounds` rounds per size.
//
//   bench_page_flip [rounds]      (default 2000)
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "esock/process/page_flip.h"
#include "esock/process/page_guard.h"

namespace {

namespace pf = esock::sockets::page_flip;
namespace pg = esock::sockets::page_guard;
using Clock = std::chrono::steady_clock;

double us(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

double median(std::vector<double>& v) {
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 2000;
  if (rounds <= 0) {
    std::fprintf(stderr, "usage: %s [rounds > 0]\n", argv[0]);
    return 2;
  }
  std::printf("| read size | probe | move out | guard | move back | release | total | copy |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const std::size_t n : {std::size_t{64} << 10, std::size_t{256} << 10, std::size_t{1} << 20,
                              std::size_t{4} << 20}) {
    auto* p = static_cast<std::uint8_t*>(
        ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    std::vector<std::uint8_t> src(n, 7);
    if (p == MAP_FAILED) return 1;
    std::memset(p, 1, n);
    std::vector<double> t[6];
    for (auto& v : t) v.reserve(static_cast<std::size_t>(rounds));
    for (int i = 0; i < rounds; ++i) {
      const auto a = Clock::now();
      if (!pf::private_anonymous(p, n)) return 1;
      const auto b = Clock::now();
      bool own = false;
      void* staging = pf::staging(p, n, &own);
      const auto c = Clock::now();
      const int guard = pg::protect(p, n, pg::Access::none);
      const auto d = Clock::now();
      if (staging == nullptr || !own || guard < 0) return 1;
      std::memset(staging, i & 0xff, n);  // the stack's placement (not timed)
      const auto e = Clock::now();
      if (!pf::land(staging, p, n)) return 1;
      const auto f = Clock::now();
      pg::release(guard);
      const auto g = Clock::now();
      std::memcpy(p, src.data(), n);  // what a synchronous read copies instead
      const auto h = Clock::now();
      t[0].push_back(us(a, b));
      t[1].push_back(us(b, c));
      t[2].push_back(us(c, d));
      t[3].push_back(us(e, f));
      t[4].push_back(us(f, g));
      t[5].push_back(us(g, h));
    }
    double m[6];
    for (int k = 0; k < 6; ++k) m[k] = median(t[k]);
    std::printf("| %zu KiB | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", n >> 10, m[0],
                m[1], m[2], m[3], m[4], m[0] + m[1] + m[2] + m[3] + m[4], m[5]);
    ::munmap(p, n);
  }
  return 0;
}
