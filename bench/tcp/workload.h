// The two workloads of bench_tcp, written once over a byte-stream "link" so esock over
// memif and kernel TCP over loopback run exactly the same exchange:
//   bulk:      the client sends `count` bytes in 64 KiB writes; the server reads them all
//              and answers one byte. Throughput = bytes / (first write .. answer).
//   ping-pong: the client sends `size` bytes, the server echoes them back, `count` times;
//              each round trip is timed on the client.
// Each request starts with a 16-byte header (op, size, count; big-endian).
//
// A Link provides: bool send_all(const uint8_t*, size_t) and bool recv_all(uint8_t*, size_t),
// both false on error or timeout (the link reports why on stderr).
#pragma once

#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "base/endian.h"

namespace esock::bench {

enum class Op : std::uint32_t { bulk = 1, ping_pong = 2, quit = 3 };

constexpr std::size_t kHeader = 16;
constexpr std::size_t kChunk = 64 * 1024;  // bulk write/read size, both stacks

inline std::int64_t mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

template <class Link>
bool send_request(Link& l, Op op, std::uint32_t size, std::uint64_t count) {
  std::uint8_t h[kHeader];
  store_be32(h, static_cast<std::uint32_t>(op));
  store_be32(h + 4, size);
  store_be64(h + 8, count);
  return l.send_all(h, kHeader);
}

// Serves requests until quit (true) or a link error (false).
template <class Link>
bool serve(Link& l) {
  std::vector<std::uint8_t> buf(std::max<std::size_t>(kChunk, 1u << 20));
  for (;;) {
    std::uint8_t h[kHeader];
    if (!l.recv_all(h, kHeader)) return false;
    const auto op = static_cast<Op>(load_be32(h));
    const std::uint32_t size = load_be32(h + 4);
    const std::uint64_t count = load_be64(h + 8);
    switch (op) {
      case Op::bulk: {
        for (std::uint64_t left = count; left > 0;) {
          const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, kChunk));
          if (!l.recv_all(buf.data(), n)) return false;
          left -= n;
        }
        const std::uint8_t done = 1;
        if (!l.send_all(&done, 1)) return false;
        break;
      }
      case Op::ping_pong:
        if (size == 0 || size > buf.size()) return false;
        for (std::uint64_t i = 0; i < count; ++i) {
          if (!l.recv_all(buf.data(), size) || !l.send_all(buf.data(), size)) return false;
        }
        break;
      case Op::quit: {
        const std::uint8_t bye = 2;
        return l.send_all(&bye, 1);
      }
      default:
        std::fprintf(stderr, "server: unknown op %u\n", static_cast<unsigned>(op));
        return false;
    }
  }
}

// Nanoseconds for `bytes` one way, or -1.
template <class Link>
std::int64_t run_bulk(Link& l, std::uint64_t bytes) {
  static std::vector<std::uint8_t> src = [] {
    std::vector<std::uint8_t> v(kChunk);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::uint8_t>(i * 131 + 7);
    return v;
  }();
  if (!send_request(l, Op::bulk, 0, bytes)) return -1;
  const std::int64_t t0 = mono_ns();
  for (std::uint64_t left = bytes; left > 0;) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, kChunk));
    if (!l.send_all(src.data(), n)) return -1;
    left -= n;
  }
  std::uint8_t done = 0;
  if (!l.recv_all(&done, 1) || done != 1) return -1;
  return mono_ns() - t0;
}

// Round-trip times in ns of the `iters` measured exchanges (after `warmup` untimed ones),
// sorted; empty on failure. Checks the echo of the first and last byte.
template <class Link>
std::vector<std::int64_t> run_ping_pong(Link& l, std::uint32_t size, std::uint32_t warmup,
                                        std::uint32_t iters) {
  std::vector<std::uint8_t> out(size), in(size);
  std::vector<std::int64_t> rtt;
  rtt.reserve(iters);
  if (!send_request(l, Op::ping_pong, size, std::uint64_t{warmup} + iters)) return {};
  for (std::uint32_t i = 0; i < warmup + iters; ++i) {
    out.front() = static_cast<std::uint8_t>(i);
    out.back() = static_cast<std::uint8_t>(i >> 8);
    const std::int64_t t0 = mono_ns();
    if (!l.send_all(out.data(), size) || !l.recv_all(in.data(), size)) return {};
    const std::int64_t t1 = mono_ns();
    if (in.front() != out.front() || in.back() != out.back()) {
      std::fprintf(stderr, "client: echo mismatch at %u\n", i);
      return {};
    }
    if (i >= warmup) rtt.push_back(t1 - t0);
  }
  std::sort(rtt.begin(), rtt.end());
  return rtt;
}

inline std::int64_t percentile(const std::vector<std::int64_t>& sorted, double p) {
  if (sorted.empty()) return -1;
  const auto i = static_cast<std::size_t>(p * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

struct ClientPlan {
  std::uint64_t bulk_bytes = 256ull << 20;
  std::uint64_t bulk_warmup_bytes = 32ull << 20;
  std::uint32_t bulk_runs = 3;
  std::vector<std::uint32_t> sizes{64, 1024, 4096, 16384, 65536};
  std::uint32_t warmup = 500;
  std::uint32_t iters = 5000;
};

// Runs the plan and prints one machine-readable line per result on stdout:
//   bulk <bytes> <ns>                    (one per run)
//   pp <size> <iters> <p50> <p99> <min> <max>   (ns round trip)
// then sends quit. False on the first failure.
template <class Link>
bool run_client(Link& l, const ClientPlan& plan) {
  if (plan.bulk_warmup_bytes && run_bulk(l, plan.bulk_warmup_bytes) < 0) return false;
  for (std::uint32_t r = 0; r < plan.bulk_runs; ++r) {
    const std::int64_t ns = run_bulk(l, plan.bulk_bytes);
    if (ns < 0) return false;
    std::printf("bulk %llu %lld\n", static_cast<unsigned long long>(plan.bulk_bytes),
                static_cast<long long>(ns));
    std::fflush(stdout);
  }
  for (std::uint32_t size : plan.sizes) {
    const auto rtt = run_ping_pong(l, size, plan.warmup, plan.iters);
    if (rtt.empty()) return false;
    std::printf("pp %u %zu %lld %lld %lld %lld\n", size, rtt.size(),
                static_cast<long long>(percentile(rtt, 0.50)),
                static_cast<long long>(percentile(rtt, 0.99)), static_cast<long long>(rtt.front()),
                static_cast<long long>(rtt.back()));
    std::fflush(stdout);
  }
  if (!send_request(l, Op::quit, 0, 0)) return false;
  std::uint8_t bye = 0;
  return l.recv_all(&bye, 1) && bye == 2;
}

}  // namespace esock::bench
