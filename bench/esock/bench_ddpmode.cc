// DDPMODE against plain TCP sockets in one run: ping-pong latency (echo of `size` octets)
// and streaming bandwidth (one-way, acknowledged at the end) from 64 B to 4 MiB, over
// loopback, printed as a markdown table. The server is a forked child process (its own
// esock runtime and progress thread), the client this process; each cell gets a fresh
// connection. Plain sockets go through libesock's pass-through (the same as libc, see
// bench_esock_passthrough).
//
// Every cell also reports the CPU time each side spent on it (all of its threads: the
// application's and esock's progress thread), from /proc/PID/task/*/schedstat, so bytes per
// CPU-second can be compared with the kernel's; the kernel's loopback work runs in the
// processes' system time, so it is counted too.
//
// Usage: bench_esock_ddpmode [--quick] [--provider ksock|dpdk] [--sizes N,N...]
//                            [--profile pingpong|stream]
// --sizes: only these message sizes (octets), e.g. to profile one row.
// --profile: only DDPMODE's ping-pong or stream at the first size, ten times, one line each
// (no kernel TCP in the same processes): what `perf record` should watch.
// ksock (default): DDPMODE over kernel TCP on loopback. dpdk: DDPMODE over esock's own
// stack on a DPDK net_memif link between the two processes (the child is the memif
// server at 10.98.0.1, this process the client at 10.98.0.2); plain TCP stays on
// loopback. Nothing DDPMODE happens before the fork, so each process reads its own
// configuration (set here through the environment).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "esock/esock.h"
#include "socket_bench.h"

namespace {

using esock_bench::cpu_seconds;
using esock_bench::now;
using esock_bench::read_all;
using esock_bench::write_all;

struct Cmd {         // the client's first 16 octets on every connection
  std::uint32_t op;  // 1 ping-pong, 2 stream
  std::uint32_t size;
  std::uint64_t count;
};

int make_socket(bool ddp) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  if (ddp) ::setsockopt(fd, SOL_ESOCK, ESOCK_DDPMODE, &one, sizeof one);
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

bool g_dpdk = false;
const char* const memif_socket = "/tmp/esock-bench-ddpmode.sock";

// The dpdk provider's settings for one side of the memif link.
void configure_dpdk(bool server) {
  const std::string vdev = std::string("net_memif0,role=") + (server ? "server" : "client") +
                           ",socket=" + memif_socket + ",socket-abstract=no";
  ::setenv("ESOCK_PROVIDER", "dpdk", 1);
  ::setenv("ESOCK_DPDK_VDEV", vdev.c_str(), 1);
  ::setenv("ESOCK_DPDK_IP", server ? "10.98.0.1/24" : "10.98.0.2/24", 1);
}

int listen_any(bool ddp, std::uint16_t* port) {
  const int fd = make_socket(ddp);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  // The dpdk provider's stack has no loopback address (binding one is EADDRNOTAVAIL): the
  // DDPMODE listener takes every address, which means the stack's.
  a.sin_addr.s_addr = htonl(ddp && g_dpdk ? INADDR_ANY : INADDR_LOOPBACK);
  socklen_t l = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 8) != 0) return -1;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &l);
  *port = ntohs(a.sin_port);
  return fd;
}

void serve(int c) {
  Cmd cmd{};
  if (!read_all(c, &cmd, sizeof cmd)) return;
  std::vector<char> buf(std::max<std::size_t>(cmd.size, 1));
  if (cmd.op == 1) {
    for (std::uint64_t i = 0; i < cmd.count; ++i)
      if (!read_all(c, buf.data(), cmd.size) || !write_all(c, buf.data(), cmd.size)) return;
  } else {
    const std::uint64_t total = cmd.count * cmd.size;
    std::uint64_t got = 0;
    std::vector<char> big(std::max<std::size_t>(cmd.size, 1 << 16));
    while (got < total) {
      const ssize_t r = ::read(c, big.data(), std::min<std::uint64_t>(big.size(), total - got));
      if (r <= 0) return;
      got += static_cast<std::uint64_t>(r);
    }
    write_all(c, "k", 1);
  }
}

// The child: serves connections on both listeners, one at a time, until the parent's pipe
// closes (the parent runs one cell at a time, so that is all it needs).
[[noreturn]] void server_main(int plain_l, int ddp_l) {
  esock_bench::accept_loop(plain_l, ddp_l, [](int c) {
    serve(c);
    ::close(c);
  });
}

int connect_to(bool ddp, std::uint16_t port) {
  const int fd = make_socket(ddp);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = ddp && g_dpdk ? inet_addr("10.98.0.1") : htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    std::perror("connect");
    return -1;
  }
  return fd;
}

pid_t g_server = 0;

// CPU seconds both sides spent between start() and stop().
struct CpuMeter {
  double client = 0, server = 0;
  void start() {
    client = -cpu_seconds(::getpid());
    server = -cpu_seconds(g_server);
  }
  void stop() {
    client += cpu_seconds(::getpid());
    server += cpu_seconds(g_server);
  }
};

// Microseconds per round trip.
double pingpong(bool ddp, std::uint16_t port, std::uint32_t size, std::uint64_t count,
                CpuMeter* cpu) {
  const int fd = connect_to(ddp, port);
  const Cmd cmd{1, size, count + count / 10};
  std::vector<char> buf(size, 'x');
  write_all(fd, &cmd, sizeof cmd);
  double t0 = 0;
  for (std::uint64_t i = 0; i < cmd.count; ++i) {
    if (i == count / 10) {  // the first 10% warm up
      t0 = now();
      cpu->start();
    }
    if (!write_all(fd, buf.data(), size) || !read_all(fd, buf.data(), size)) return -1;
  }
  const double us = (now() - t0) / static_cast<double>(cmd.count - count / 10) * 1e6;
  cpu->stop();
  ::close(fd);
  return us;
}

// MB/s (10^6 octets per second) of count writes of size octets, until the server's ack.
double stream(bool ddp, std::uint16_t port, std::uint32_t size, std::uint64_t count,
              CpuMeter* cpu) {
  const int fd = connect_to(ddp, port);
  const Cmd cmd{2, size, count};
  std::vector<char> buf(size, 'y');
  write_all(fd, &cmd, sizeof cmd);
  cpu->start();
  const double t0 = now();
  for (std::uint64_t i = 0; i < count; ++i)
    if (!write_all(fd, buf.data(), size)) return -1;
  char k;
  if (!read_all(fd, &k, 1)) return -1;
  const double secs = now() - t0;
  cpu->stop();
  ::close(fd);
  return static_cast<double>(size) * static_cast<double>(count) / secs / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  std::vector<std::uint32_t> sizes;
  std::string profile;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
      for (const char* p = argv[++i]; *p != '\0';) {
        char* end = nullptr;
        const unsigned long n = std::strtoul(p, &end, 10);
        if (end == p || n == 0 || n > (4ul << 20) || (*end != ',' && *end != '\0')) {
          std::fprintf(stderr, "--sizes: octet counts 1..4194304, comma separated\n");
          return 2;
        }
        sizes.push_back(static_cast<std::uint32_t>(n));
        p = *end == ',' ? end + 1 : end;
      }
    } else if (std::strcmp(argv[i], "--provider") == 0 && i + 1 < argc) {
      g_dpdk = std::strcmp(argv[++i], "dpdk") == 0;
    } else if (std::strcmp(argv[i], "--profile") == 0 && i + 1 < argc &&
               (std::strcmp(argv[i + 1], "pingpong") == 0 ||
                std::strcmp(argv[i + 1], "stream") == 0)) {
      profile = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: %s [--quick] [--provider ksock|dpdk] [--sizes N,N...] "
                   "[--profile pingpong|stream]\n",
                   argv[0]);
      return 2;
    }
  }
  // A server killed by a signal leaves its memif socket file behind; a new one needs it gone.
  if (g_dpdk) ::unlink(memif_socket);
  // The child listens (after configuring itself) and reports both ports through a pipe.
  int ports[2];
  if (::pipe(ports) != 0) return 1;
  const pid_t child = ::fork();
  g_server = child;
  if (child == 0) {
    if (g_dpdk) configure_dpdk(true);
    std::uint16_t pp[2] = {0, 0};
    const int pl = listen_any(false, &pp[0]);
    const int dl = listen_any(true, &pp[1]);
    if (pl < 0 || dl < 0) std::perror("listen");
    write_all(ports[1], pp, sizeof pp);
    if (pl < 0 || dl < 0) ::_exit(1);
    server_main(pl, dl);
  }
  if (g_dpdk) configure_dpdk(false);
  std::uint16_t pp[2] = {0, 0};
  ::close(ports[1]);
  if (!read_all(ports[0], pp, sizeof pp)) {
    std::fprintf(stderr, "the server did not start\n");
    return 1;
  }
  const std::uint16_t pport = pp[0], dport = pp[1];

  if (!profile.empty()) {
    const std::uint32_t size = sizes.empty() ? 65536 : sizes[0];
    const std::uint64_t volume = quick ? (64u << 20) : (1u << 30);
    for (int r = 0; r < 10; ++r) {
      CpuMeter cpu;
      if (profile == "stream")
        std::printf("DDPMODE stream %u: %.0f MB/s\n", size,
                    stream(true, dport, size, std::max<std::uint64_t>(volume / size, 8), &cpu));
      else
        std::printf("DDPMODE ping-pong %u: %.1f us\n", size,
                    pingpong(true, dport, size,
                             std::clamp<std::uint64_t>(volume / 8 / size, 100, 20000), &cpu));
      std::fflush(stdout);
    }
    ::kill(child, SIGTERM);
    ::waitpid(child, nullptr, 0);
    if (g_dpdk) ::unlink(memif_socket);
    return 0;
  }
  std::printf("%s, DDPMODE over %s, server in a forked process; median of 3 runs per cell\n\n",
              esock_version(),
              g_dpdk ? "the dpdk provider (net_memif between the processes)"
                     : "the ksock provider (loopback)");
  std::printf(
      "| size | TCP ping-pong (us) | DDPMODE ping-pong (us) | ratio | TCP stream (MB/s) | "
      "DDPMODE stream (MB/s) | ratio |\n|---:|---:|---:|---:|---:|---:|---:|\n");
  std::vector<std::string> cpu_rows;
  if (sizes.empty())
    for (std::uint32_t size = 64; size <= (4u << 20); size *= 4) sizes.push_back(size);
  for (const std::uint32_t size : sizes) {
    const std::uint64_t volume = quick ? (8u << 20) : (256u << 20);
    const std::uint64_t pp_count =
        std::clamp<std::uint64_t>(volume / 8 / size, quick ? 20 : 100, quick ? 500 : 5000);
    const std::uint64_t st_count =
        std::clamp<std::uint64_t>(volume / size, 8, quick ? 2000 : 20000);
    const double rts = static_cast<double>(pp_count - pp_count / 10);
    const double mb = static_cast<double>(size) * static_cast<double>(st_count) / 1e6;
    // Per contender (TCP, DDPMODE): time, then CPU per side; medians of 3.
    double lat[2], bw[2], lat_cpu[2][2], bw_cpu[2][2];
    for (int ddp = 0; ddp < 2; ++ddp) {
      double l3[3], b3[3], lc[2][3], bc[2][3];
      for (int r = 0; r < 3; ++r) {  // interleaving per cell keeps drift off the ratio
        CpuMeter pc, sc;
        l3[r] = pingpong(ddp != 0, ddp ? dport : pport, size, pp_count, &pc);
        b3[r] = stream(ddp != 0, ddp ? dport : pport, size, st_count, &sc);
        lc[0][r] = pc.client / rts * 1e6;  // CPU us per round trip
        lc[1][r] = pc.server / rts * 1e6;
        bc[0][r] = mb / sc.client;  // MB per CPU-second
        bc[1][r] = mb / sc.server;
      }
      const auto median = [](double* v) {
        std::sort(v, v + 3);
        return v[1];
      };
      lat[ddp] = median(l3);
      bw[ddp] = median(b3);
      for (int side = 0; side < 2; ++side) {
        lat_cpu[ddp][side] = median(lc[side]);
        bw_cpu[ddp][side] = median(bc[side]);
      }
    }
    const char* unit = size >= (1u << 20) ? "MiB" : size >= 1024 ? "KiB" : "B";
    const std::uint32_t shown = size >= (1u << 20) ? size >> 20 : size >= 1024 ? size >> 10 : size;
    std::printf("| %u %s | %.1f | %.1f | %.2f | %.0f | %.0f | %.2f |\n", shown, unit, lat[0],
                lat[1], lat[1] / lat[0], bw[0], bw[1], bw[1] / bw[0]);
    std::fflush(stdout);
    char row[256];
    std::snprintf(row, sizeof row,
                  "| %u %s | %.1f / %.1f | %.1f / %.1f | %.0f / %.0f | %.0f / %.0f |\n", shown,
                  unit, lat_cpu[0][0], lat_cpu[0][1], lat_cpu[1][0], lat_cpu[1][1], bw_cpu[0][0],
                  bw_cpu[0][1], bw_cpu[1][0], bw_cpu[1][1]);
    cpu_rows.emplace_back(row);
  }
  std::printf(
      "\nCPU time per side (client / server, every thread of each process, medians of 3)\n\n"
      "| size | TCP ping-pong (CPU us per round trip) | DDPMODE ping-pong (CPU us per round "
      "trip) | TCP stream (MB per CPU-second) | DDPMODE stream (MB per CPU-second) |\n"
      "|---:|---:|---:|---:|---:|\n");
  for (const std::string& r : cpu_rows) std::fputs(r.c_str(), stdout);
  ::kill(child, SIGTERM);
  ::waitpid(child, nullptr, 0);
  if (g_dpdk) ::unlink(memif_socket);
  return 0;
}
