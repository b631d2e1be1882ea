// The AZ-SDP paper's experiments (../shared/seeds/000_*, Fig. 6-10) on esock: the same
// unmodified socket program with four contenders side by side, in one run:
//   kernel  plain TCP over loopback (libesock's pass-through)
//   copy    DDPMODE, ESOCK_ZCOPY_COPY   (BSDP: every write copied into DATA messages)
//   sync    DDPMODE, ESOCK_ZCOPY_SYNC   (ZSDP: rendezvous, write waits for the pull)
//   async   DDPMODE, ESOCK_ZCOPY_ASYNC  (AZ-SDP: write returns, pages guarded until pulled)
//   async-cow  DDPMODE, ESOCK_ZCOPY_ASYNC_COW (AZ-SDP copy-on-write: a touch copies instead
//           of waiting; overlap and touch only, where it differs from async)
// The server is a forked child (its own esock runtime) serving each connection in a thread;
// the client is this process. DDPMODE runs over the dpdk provider on a net_memif link
// between the two (--provider ksock: kernel TCP under it instead). Buffers are page-aligned
// mmaps, the same for every contender; the zero-copy modes are set on both ends.
//
// Experiments (--exp, default all), one RESULT line per cell on stdout:
//   latency   ping-pong of `size` octets, us per round trip           (Fig. 6a)
//   bandwidth one-way stream of `size` writes, MB/s until the ack      (Fig. 6b)
//   overlap   stream with `x` us of computation after every write      (Fig. 7)
//   touch     stream from one buffer that the sender rewrites (one store per page)
//             after every `x` writes, and the receiver reads (one load per page)
//             after every `x` reads: the paper's window               (Fig. 8)
//   hotspot   4 client threads ping-pong with the one server at once, each its own
//             connection; the mean of their latencies against size   (Fig. 9)
//   streams   `x` connections stream 64 KiB writes at once, aggregate MB/s
//             (Fig. 10a; the paper's 10b, clients on other nodes, has no counterpart
//             on one 2-core machine)
//   pagefault the cost of one write fault on a read-only page: mprotect, the fault, a
//             handler that makes it writable, the store (a forked child, plain code)
// Each RESULT line: exp, contender, size, x, value, and the CPU seconds of each side.
// Nothing here judges a number (bench/azsdp/README.md).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "esock/esock.h"
#include "socket_bench.h"

namespace {

using esock_bench::cpu_seconds;
using esock_bench::now;
using esock_bench::read_all;
using esock_bench::write_all;

enum Contender { kernel = 0, bsdp = 1, zsdp = 2, azsdp = 3, azsdp_cow = 4 };
const char* const contender_names[] = {"kernel", "copy", "sync", "async", "async-cow"};
const int zmodes[] = {-1, ESOCK_ZCOPY_COPY, ESOCK_ZCOPY_SYNC, ESOCK_ZCOPY_ASYNC,
                      ESOCK_ZCOPY_ASYNC_COW};

struct Cmd {           // the client's first 24 octets on every connection
  std::uint32_t op;    // 1 ping-pong, 2 stream
  std::uint32_t size;  // octets per write
  std::uint64_t count;
  std::int32_t zmode;    // the server's ESOCK_ZCOPY_MODE, -1 for plain TCP
  std::uint32_t window;  // stream: the server reads its buffer (a load per page) every
                         // `window` reads (0: never), as the paper's receiver does (Fig. 8)
};

// A page-aligned buffer (what AZ-SDP sends whole pages of by reference).
struct Buffer {
  explicit Buffer(std::size_t n, char fill) : len(std::max<std::size_t>(n, 1)) {
    p = static_cast<char*>(
        ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (p == MAP_FAILED) std::abort();
    std::memset(p, fill, len);
  }
  ~Buffer() { ::munmap(p, len); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  char* p;
  std::size_t len;
};

bool g_dpdk = true;
std::string g_memif_socket;

void configure_dpdk(bool server) {
  const std::string vdev = std::string("net_memif0,role=") + (server ? "server" : "client") +
                           ",socket=" + g_memif_socket + ",socket-abstract=no";
  ::setenv("ESOCK_PROVIDER", "dpdk", 1);
  ::setenv("ESOCK_DPDK_VDEV", vdev.c_str(), 1);
  ::setenv("ESOCK_DPDK_IP", server ? "10.97.0.1/24" : "10.97.0.2/24", 1);
}

int make_socket(bool ddp) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  if (ddp && ::setsockopt(fd, SOL_ESOCK, ESOCK_DDPMODE, &one, sizeof one) != 0) {
    std::perror("setsockopt(ESOCK_DDPMODE)");
    std::exit(1);
  }
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

void set_zmode(int fd, int mode) {
  if (mode >= 0 && ::setsockopt(fd, SOL_ESOCK, ESOCK_ZCOPY_MODE, &mode, sizeof mode) != 0) {
    std::perror("setsockopt(ESOCK_ZCOPY_MODE)");
    std::exit(1);
  }
}

int listen_any(bool ddp, std::uint16_t* port) {
  const int fd = make_socket(ddp);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(ddp && g_dpdk ? INADDR_ANY : INADDR_LOOPBACK);
  socklen_t l = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 64) != 0)
    return -1;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &l);
  *port = ntohs(a.sin_port);
  return fd;
}

volatile char g_sink;  // the server's loads from its buffer (not optimised away)

void serve(int c) {
  Cmd cmd{};
  if (!read_all(c, &cmd, sizeof cmd)) return;
  set_zmode(c, cmd.zmode);
  Buffer buf(std::max<std::size_t>(cmd.size, 1 << 16), 's');
  if (cmd.op == 1) {
    for (std::uint64_t i = 0; i < cmd.count; ++i)
      if (!read_all(c, buf.p, cmd.size) || !write_all(c, buf.p, cmd.size)) return;
  } else {
    const std::uint64_t total = cmd.count * cmd.size;
    const long page = ::sysconf(_SC_PAGESIZE);
    std::uint64_t reads = 0;
    for (std::uint64_t got = 0; got < total;) {
      const ssize_t r = ::read(c, buf.p, std::min<std::uint64_t>(buf.len, total - got));
      if (r <= 0) return;
      got += static_cast<std::uint64_t>(r);
      if (cmd.window > 0 && ++reads % cmd.window == 0) {
        // An asynchronous read's pages are no-access until its data landed: this waits.
        char sum = 0;
        for (ssize_t off = 0; off < r; off += page) sum = static_cast<char>(sum + buf.p[off]);
        g_sink = sum;
      }
    }
    write_all(c, "k", 1);
  }
}

// One thread per connection, the acceptor waiting in select(): a thread blocked in a
// DDPMODE accept() runs the stack's rounds itself, beside the connections' threads (1 KiB
// round trips took 132 us so, 45 us with select in the same hour).
[[noreturn]] void server_main(int plain_l, int ddp_l) {
  esock_bench::accept_loop(plain_l, ddp_l, [](int c) {
    std::thread([c] {
      serve(c);
      ::close(c);
    }).detach();
  });
}

std::uint16_t g_ports[2];  // plain, DDPMODE
pid_t g_server = 0;

int connect_to(Contender k) {
  const bool ddp = k != kernel;
  const int fd = make_socket(ddp);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = ddp && g_dpdk ? inet_addr("10.97.0.1") : htonl(INADDR_LOOPBACK);
  a.sin_port = htons(g_ports[ddp ? 1 : 0]);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    std::perror("connect");
    std::exit(1);
  }
  set_zmode(fd, zmodes[k]);
  return fd;
}

// Busy computation for `us` microseconds (the paper's "computation between writes").
void compute(double us) {
  if (us <= 0) return;
  const double end = now() + us / 1e6;
  while (now() < end) {
  }
}

struct Cell {
  double value = -1;                      // us per round trip, or MB/s
  double cpu_client = 0, cpu_server = 0;  // seconds
};

struct Meter {
  double t0, c0, s0;
  Meter() : t0(now()), c0(cpu_seconds(::getpid())), s0(cpu_seconds(g_server)) {}
  double secs() const { return now() - t0; }
  void fill(Cell* c) const {
    c->cpu_client = cpu_seconds(::getpid()) - c0;
    c->cpu_server = cpu_seconds(g_server) - s0;
  }
};

void start(int fd, std::uint32_t op, std::uint32_t size, std::uint64_t count, Contender k,
           std::uint32_t window = 0) {
  const Cmd cmd{op, size, count, zmodes[k], window};
  if (!write_all(fd, &cmd, sizeof cmd)) std::exit(1);
}

// One connection's ping-pong: us per round trip after a 10% warm-up, -1 on failure.
double pingpong_on(Contender k, std::uint32_t size, std::uint64_t count) {
  const int fd = connect_to(k);
  const std::uint64_t warm = count / 10;
  start(fd, 1, size, count + warm, k);
  Buffer buf(size, 'x');
  double t0 = now();
  for (std::uint64_t i = 0; i < count + warm; ++i) {
    if (i == warm) t0 = now();
    if (!write_all(fd, buf.p, size) || !read_all(fd, buf.p, size)) return -1;
  }
  const double us = (now() - t0) / static_cast<double>(count) * 1e6;
  ::close(fd);
  return us;
}

// One connection's stream of count writes of size octets from one buffer; `compute_us` of
// computation after every write; `window` > 0: after every `window` writes the sender
// writes a pattern into the buffer (one store per page; the paper's Fig. 8). MB/s until
// the server's ack.
double stream_on(Contender k, std::uint32_t size, std::uint64_t count, double compute_us,
                 std::uint32_t window) {
  const int fd = connect_to(k);
  start(fd, 2, size, count, k, window);
  Buffer b(size, 'y');
  const long page = ::sysconf(_SC_PAGESIZE);
  const double t0 = now();
  for (std::uint64_t i = 0; i < count; ++i) {
    if (!write_all(fd, b.p, size)) return -1;
    if (window > 0 && (i + 1) % window == 0)
      for (std::size_t off = 0; off < size; off += static_cast<std::size_t>(page))
        b.p[off] = static_cast<char>(i);
    compute(compute_us);
  }
  char ack;
  if (!read_all(fd, &ack, 1)) return -1;
  const double secs = now() - t0;
  ::close(fd);
  return static_cast<double>(size) * static_cast<double>(count) / secs / 1e6;
}

void result(const char* exp, Contender k, std::uint32_t size, double x, const Cell& c) {
  std::printf(
      "RESULT exp=%s contender=%s size=%u x=%g value=%.2f cpu_client=%.3f cpu_server=%.3f\n", exp,
      contender_names[k], size, x, c.value, c.cpu_client, c.cpu_server);
  std::fflush(stdout);
}

// The median of three runs of f (each fills value), CPU of the median one.
template <typename F>
Cell median3(F f) {
  Cell c[3];
  for (Cell& x : c) {
    const Meter m;
    x.value = f();
    m.fill(&x);
  }
  std::sort(c, c + 3, [](const Cell& a, const Cell& b) { return a.value < b.value; });
  return c[1];
}

std::uint64_t stream_count(std::uint32_t size, std::uint64_t volume) {
  return std::clamp<std::uint64_t>(volume / size, 16, 100000);
}

// Fig. 9/10: `n` threads, each its own connection, at once.
double parallel(int n, const std::function<double()>& one, bool sum) {
  std::vector<double> v(static_cast<std::size_t>(n));
  std::vector<std::thread> t;
  for (int i = 0; i < n; ++i) t.emplace_back([&, i] { v[static_cast<std::size_t>(i)] = one(); });
  for (auto& x : t) x.join();
  double total = 0;
  for (double x : v) {
    if (x < 0) return -1;
    total += x;
  }
  return sum ? total : total / n;
}

// The cost of one write fault on a read-only page, taken by a handler that makes the page
// writable (what a block-on-write fault costs at least, before any waiting): microseconds
// per fault, and per mprotect pair without a fault, in a child with its own handler.
void pagefault_cost() {
  const pid_t c = ::fork();
  if (c == 0) {
    static char* page = nullptr;
    static long psz = ::sysconf(_SC_PAGESIZE);
    page = static_cast<char*>(
        ::mmap(nullptr, psz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    struct sigaction sa {};
    sa.sa_flags = SA_SIGINFO;
    sa.sa_sigaction = [](int, siginfo_t*, void*) { ::mprotect(page, psz, PROT_READ | PROT_WRITE); };
    ::sigaction(SIGSEGV, &sa, nullptr);
    const int n = 200000;
    double t0 = now();
    for (int i = 0; i < n; ++i) {
      ::mprotect(page, psz, PROT_READ);
      ::mprotect(page, psz, PROT_READ | PROT_WRITE);
      *reinterpret_cast<volatile char*>(page) = static_cast<char>(i);
    }
    const double pair_us = (now() - t0) / n * 1e6;
    t0 = now();
    for (int i = 0; i < n; ++i) {
      ::mprotect(page, psz, PROT_READ);
      *reinterpret_cast<volatile char*>(page) = static_cast<char>(i);  // faults
    }
    const double fault_us = (now() - t0) / n * 1e6;
    std::printf(
        "RESULT exp=pagefault contender=kernel size=%ld x=0 value=%.3f mprotect_pair_us=%.3f\n",
        psz, fault_us, pair_us);
    std::fflush(stdout);
    ::_exit(0);
  }
  ::waitpid(c, nullptr, 0);
}

bool wanted(const std::string& list, const char* exp) {
  return list == "all" ||
         ("," + list + ",").find(std::string(",") + exp + ",") != std::string::npos;
}

}  // namespace

int main(int argc, char** argv) {
  std::string exps = "all";
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--exp") == 0 && i + 1 < argc) {
      exps = argv[++i];
    } else if (std::strcmp(argv[i], "--provider") == 0 && i + 1 < argc) {
      g_dpdk = std::strcmp(argv[++i], "dpdk") == 0;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--quick] [--provider dpdk|ksock] "
                   "[--exp latency,bandwidth,overlap,touch,hotspot,streams,pagefault]\n",
                   argv[0]);
      return 2;
    }
  }
  if (wanted(exps, "pagefault")) pagefault_cost();
  // Rendezvous from 64 KiB (the default, 256 KiB, would leave the paper's 64 KiB rows to
  // copies in every mode); the sink threshold is 64 KiB already. An explicit setting wins.
  ::setenv("ESOCK_RNDV_THRESHOLD", "65536", 0);
  g_memif_socket = "/tmp/esock-bench-azsdp-" + std::to_string(::getpid()) + ".sock";
  ::unlink(g_memif_socket.c_str());
  int ports[2];
  if (::pipe(ports) != 0) return 1;
  g_server = ::fork();
  if (g_server == 0) {
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
  ::close(ports[1]);
  if (!read_all(ports[0], g_ports, sizeof g_ports)) {
    std::fprintf(stderr, "the server did not start\n");
    return 1;
  }
  std::fprintf(stderr, "%s, DDPMODE over %s\n", esock_version(),
               g_dpdk ? "the dpdk provider (net_memif)" : "the ksock provider (loopback)");
  const std::uint64_t volume = quick ? (16u << 20) : (128u << 20);
  const Contender all[] = {kernel, bsdp, zsdp, azsdp};
  const Contender with_cow[] = {kernel, bsdp, zsdp, azsdp, azsdp_cow};

  std::vector<std::uint32_t> sizes;
  for (std::uint32_t s = 1024; s <= (4u << 20); s *= 4) sizes.push_back(s);
  if (wanted(exps, "latency"))
    for (std::uint32_t size : sizes)
      for (Contender k : all) {
        const std::uint64_t n =
            std::clamp<std::uint64_t>(volume / 8 / size, 20, quick ? 300 : 2000);
        result("latency", k, size, 0, median3([&] { return pingpong_on(k, size, n); }));
      }
  if (wanted(exps, "bandwidth"))
    for (std::uint32_t size : sizes)
      for (Contender k : all)
        result("bandwidth", k, size, 0,
               median3([&] { return stream_on(k, size, stream_count(size, volume), 0, 0); }));
  if (wanted(exps, "overlap"))
    for (std::uint32_t size : {65536u, 1u << 20})
      for (double us : {0.0, 25.0, 50.0, 100.0, 200.0, 400.0, 800.0})
        for (Contender k : with_cow) {
          // Enough writes for a steady state, few enough that the compute stays bounded.
          const std::uint64_t n = std::clamp<std::uint64_t>(volume / size, 32, quick ? 200 : 1000);
          result("overlap", k, size, us, median3([&] { return stream_on(k, size, n, us, 0); }));
        }
  if (wanted(exps, "touch"))
    for (std::uint32_t size : {65536u, 1u << 20})
      for (std::uint32_t window : {1u, 2u, 4u, 8u, 16u, 32u, 64u})
        for (Contender k : with_cow)
          result("touch", k, size, window, median3([&] {
                   return stream_on(k, size, stream_count(size, volume), 0, window);
                 }));
  if (wanted(exps, "hotspot"))
    for (std::uint32_t size = 4096; size <= (1u << 20); size *= 4)
      for (Contender k : all) {
        const int clients = 4;
        const std::uint64_t n =
            std::clamp<std::uint64_t>(volume / 32 / size, 20, quick ? 100 : 500);
        result("hotspot", k, size, clients, median3([&] {
                 return parallel(
                     clients, [&] { return pingpong_on(k, size, n); }, false);
               }));
      }
  if (wanted(exps, "streams"))
    for (int streams : {1, 2, 4, 8})
      for (Contender k : all) {
        const std::uint32_t size = 65536;
        const std::uint64_t n = std::max<std::uint64_t>(stream_count(size, volume) / streams, 8);
        result("streams", k, size, streams, median3([&] {
                 return parallel(
                     streams, [&] { return stream_on(k, size, n, 0, 0); }, true);
               }));
      }
  ::kill(g_server, SIGTERM);
  ::waitpid(g_server, nullptr, 0);
  ::unlink(g_memif_socket.c_str());
  return 0;
}
