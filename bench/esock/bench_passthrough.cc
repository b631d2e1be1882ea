// Pass-through cost: 1-byte TCP ping-pong over loopback where the timed side calls read/
// write through libesock.so's shims (the binary links -lesock) or straight into libc (the
// functions looked up in libc.so.6 itself), alternating in one run. An echo thread answers
// with libc directly. Reports per-round-trip latency of each and the ratio (goal: within 1%).
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <thread>

#include "esock/esock.h"

namespace {

using read_fn = ssize_t (*)(int, void*, size_t);
using write_fn = ssize_t (*)(int, const void*, size_t);

struct Libc {
  read_fn read;
  write_fn write;
};

Libc libc_direct() {
  void* h = ::dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  return {reinterpret_cast<read_fn>(::dlsym(h, "read")),
          reinterpret_cast<write_fn>(::dlsym(h, "write"))};
}

struct Loopback {
  int client = -1, server = -1;
  std::thread echo;
  Loopback() {
    const int l = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    ::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(l, 1);
    ::getsockname(l, reinterpret_cast<sockaddr*>(&a), &al);
    client = ::socket(AF_INET, SOCK_STREAM, 0);
    ::connect(client, reinterpret_cast<sockaddr*>(&a), sizeof a);
    server = ::accept(l, nullptr, nullptr);
    ::close(l);
    int one = 1;
    ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ::setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const Libc c = libc_direct();
    echo = std::thread([c, fd = server] {
      char b;
      while (c.read(fd, &b, 1) == 1)
        if (c.write(fd, &b, 1) != 1) break;
    });
  }
  ~Loopback() {
    ::shutdown(client, SHUT_RDWR);
    echo.join();
    ::close(client);
    ::close(server);
  }
};

Loopback& loop() {
  static Loopback l;
  return l;
}

template <bool Shim>
void BM_pingpong(benchmark::State& state) {
  static const Libc c = libc_direct();
  const int fd = loop().client;
  char b = 'x';
  for (auto _ : state) {
    if constexpr (Shim) {
      if (::write(fd, &b, 1) != 1 || ::read(fd, &b, 1) != 1) state.SkipWithError("io");
    } else {
      if (c.write(fd, &b, 1) != 1 || c.read(fd, &b, 1) != 1) state.SkipWithError("io");
    }
  }
  state.SetLabel(Shim ? "through libesock.so shims" : "libc direct");
}

// Interleaved repetitions so drift affects both equally; compare the medians.
BENCHMARK(BM_pingpong<false>)->Name("pingpong_1B/libc")->Repetitions(9)->ReportAggregatesOnly();
BENCHMARK(BM_pingpong<true>)
    ->Name("pingpong_1B/esock_passthrough")
    ->Repetitions(9)
    ->ReportAggregatesOnly();

// Pure call overhead, no kernel: read() of 0 bytes on an invalid fd fails in libc at once
// after the syscall; the shim adds its flag check in front.
template <bool Shim>
void BM_call(benchmark::State& state) {
  static const Libc c = libc_direct();
  char b;
  for (auto _ : state) {
    benchmark::DoNotOptimize(Shim ? ::read(-1, &b, 0) : c.read(-1, &b, 0));
  }
}
BENCHMARK(BM_call<false>)->Name("read_ebadf/libc")->Repetitions(5)->ReportAggregatesOnly();
BENCHMARK(BM_call<true>)
    ->Name("read_ebadf/esock_passthrough")
    ->Repetitions(5)
    ->ReportAggregatesOnly();

}  // namespace

int main(int argc, char** argv) {
  std::printf("%s: compare the *_median lines of each pair (goal: esock within 1%% of libc)\n",
              esock_version());
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
