// bench_utcp_kernel: the Linux TCP baseline of bench/utcp (README.md), over 127.0.0.1 with
// TCP_NODELAY, blocking calls (what a socket program gets; the esock processes use the
// idle back-off, not a busy loop). Prints the same kind of RESULT line as esock_iwarp so
// run.sh and report.py treat all contenders alike.
//
//   bench_utcp_kernel --listen PORT                       (serves one connection)
//   bench_utcp_kernel --connect 127.0.0.1:PORT --mode lat|bw --size BYTES --iters N
//                     [--warmup N] [--timeout SECONDS]
//
// lat: ping-pong, the client sends `size` octets, the server echoes them; every round trip
//      is timed on the client (full round trip, rtt_p50_us/rtt_p99_us).
// bw:  the client writes `iters` messages of `size` octets back to back (TCP's send buffer
//      is the window), the server reads them and answers one octet after the last one;
//      time from the first write to that answer.
// Each run starts with a 16-octet request: mode (be32), size (be32), count (be64).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/endian.h"

namespace {

using esock::load_be32;
using esock::load_be64;
using esock::store_be32;
using esock::store_be64;

enum class Mode : std::uint32_t { lat = 1, bw = 2 };
constexpr std::size_t kRequest = 16;
constexpr std::uint32_t kMaxSize = 64u << 20;

std::int64_t mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

bool send_all(int fd, const std::uint8_t* p, std::size_t n) {
  while (n > 0) {
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

bool recv_all(int fd, std::uint8_t* p, std::size_t n) {
  while (n > 0) {
    const ssize_t k = ::recv(fd, p, n, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

// SO_RCVTIMEO/SO_SNDTIMEO turn a stuck peer into a failed call instead of a hang.
void tune(int fd, unsigned timeout_s) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout_s);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

int serve(std::uint16_t port, unsigned timeout_s) {
  const int ls = ::socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  ::setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (ls < 0 || ::bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(ls, 1) != 0) {
    std::fprintf(stderr, "kernel server: listen: %s\n", std::strerror(errno));
    return 1;
  }
  const int fd = ::accept(ls, nullptr, nullptr);
  ::close(ls);
  if (fd < 0) return 1;
  tune(fd, timeout_s);
  std::uint8_t req[kRequest];
  if (!recv_all(fd, req, kRequest)) return 1;
  const auto mode = static_cast<Mode>(load_be32(req));
  const std::uint32_t size = load_be32(req + 4);
  const std::uint64_t count = load_be64(req + 8);
  if (size == 0 || size > kMaxSize) return 1;
  std::vector<std::uint8_t> buf(size);
  for (std::uint64_t i = 0; i < count; ++i) {
    if (!recv_all(fd, buf.data(), size)) return 1;
    if (mode == Mode::lat && !send_all(fd, buf.data(), size)) return 1;
  }
  const std::uint8_t done = 1;
  const bool ok = mode == Mode::lat || send_all(fd, &done, 1);
  ::close(fd);
  return ok ? 0 : 1;
}

// The server may not be listening yet: retry a refused connect for up to ~5 s.
int dial(const std::string& host_port) {
  const auto colon = host_port.rfind(':');
  if (colon == std::string::npos) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(std::atoi(host_port.c_str() + colon + 1)));
  if (::inet_pton(AF_INET, host_port.substr(0, colon).c_str(), &a.sin_addr) != 1) return -1;
  for (int attempt = 0; attempt < 500; ++attempt) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
    ::close(fd);
    ::usleep(10'000);
  }
  return -1;
}

double pct_us(const std::vector<std::int64_t>& sorted, double p) {
  if (sorted.empty()) return -1;
  const auto i = static_cast<std::size_t>(p * static_cast<double>(sorted.size() - 1) + 0.5);
  return static_cast<double>(sorted[std::min(i, sorted.size() - 1)]) / 1e3;
}

struct ClientArgs {
  std::string peer;
  Mode mode = Mode::lat;
  std::uint32_t size = 64;
  std::uint64_t iters = 1000;
  std::uint64_t warmup = 100;
  unsigned timeout_s = 60;
};

int run_client(const ClientArgs& c) {
  const int fd = dial(c.peer);
  if (fd < 0) {
    std::fprintf(stderr, "kernel client: cannot connect to %s\n", c.peer.c_str());
    return 1;
  }
  tune(fd, c.timeout_s);
  const std::uint64_t warmup = c.mode == Mode::lat ? c.warmup : 0;
  std::uint8_t req[kRequest];
  store_be32(req, static_cast<std::uint32_t>(c.mode));
  store_be32(req + 4, c.size);
  store_be64(req + 8, warmup + c.iters);
  std::vector<std::uint8_t> out(c.size), in(c.size);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::uint8_t>(i * 131 + 7);
  std::vector<std::int64_t> rtt;
  bool ok = send_all(fd, req, kRequest);
  std::int64_t t0 = mono_ns();
  for (std::uint64_t i = 0; ok && i < warmup + c.iters; ++i) {
    if (i == warmup) t0 = mono_ns();
    const std::int64_t s = mono_ns();
    ok = send_all(fd, out.data(), c.size);
    if (ok && c.mode == Mode::lat) {
      ok = recv_all(fd, in.data(), c.size) && in.front() == out.front();
      if (i >= warmup) rtt.push_back(mono_ns() - s);
    }
  }
  std::uint8_t done = 0;
  if (ok && c.mode == Mode::bw) ok = recv_all(fd, &done, 1) && done == 1;
  const double secs = static_cast<double>(mono_ns() - t0) / 1e9;
  ::close(fd);
  std::sort(rtt.begin(), rtt.end());
  const double bytes = static_cast<double>(c.size) * static_cast<double>(c.iters);
  std::printf(
      "RESULT role=client contender=kernel op=stream mode=%s size=%u iters=%llu bytes=%.0f "
      "secs=%.6f MBps=%.2f msgs_per_s=%.0f rtt_p50_us=%.2f rtt_p99_us=%.2f error=%s\n",
      c.mode == Mode::lat ? "lat" : "bw", c.size, static_cast<unsigned long long>(c.iters), bytes,
      secs, secs > 0 ? bytes / secs / 1e6 : 0.0,
      secs > 0 ? static_cast<double>(c.iters) / secs : 0.0, pct_us(rtt, 0.50), pct_us(rtt, 0.99),
      ok ? "none" : "io");
  return ok ? 0 : 1;
}

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: bench_utcp_kernel --listen PORT [--timeout S]\n"
               "       bench_utcp_kernel --connect A.B.C.D:PORT --mode lat|bw --size BYTES\n"
               "                         --iters N [--warmup N] [--timeout S]\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  ClientArgs c;
  int listen_port = -1;
  for (int i = 1; i < argc; ++i) {
    const std::string o = argv[i];
    if (i + 1 >= argc) usage();
    const char* v = argv[++i];
    if (o == "--listen") {
      listen_port = std::atoi(v);
    } else if (o == "--connect") {
      c.peer = v;
    } else if (o == "--mode") {
      if (std::strcmp(v, "lat") != 0 && std::strcmp(v, "bw") != 0) usage();
      c.mode = std::strcmp(v, "lat") == 0 ? Mode::lat : Mode::bw;
    } else if (o == "--size") {
      c.size = static_cast<std::uint32_t>(std::strtoul(v, nullptr, 10));
    } else if (o == "--iters") {
      c.iters = std::strtoull(v, nullptr, 10);
    } else if (o == "--warmup") {
      c.warmup = std::strtoull(v, nullptr, 10);
    } else if (o == "--timeout") {
      c.timeout_s = static_cast<unsigned>(std::atoi(v));
    } else {
      usage();
    }
  }
  if (listen_port >= 0) return serve(static_cast<std::uint16_t>(listen_port), c.timeout_s);
  if (c.peer.empty() || c.size == 0 || c.size > kMaxSize || c.iters == 0) usage();
  return run_client(c);
}
