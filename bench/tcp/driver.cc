#include "driver.h"

#include <signal.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <optional>

namespace esock::bench {
namespace {

struct Latency {
  double p50_us = 0, p99_us = 0;
};

struct Result {
  std::string name;
  bool ok = false;
  std::vector<double> gbps;  // one per bulk run
  std::map<std::uint32_t, Latency> rtt;
};

struct Child {
  pid_t pid = -1;
  FILE* out = nullptr;  // the child's stdout, when captured
};

// fork + exec of this binary with a role; stdout piped to us when `capture`, else sent to
// our stderr so the table on stdout stays clean.
Child spawn(const std::vector<std::string>& args, bool capture) {
  int fds[2] = {-1, -1};
  if (::pipe(fds) != 0) return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(capture ? fds[1] : STDERR_FILENO, STDOUT_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    std::vector<char*> argv;
    static char self[] = "bench_tcp";
    argv.push_back(self);
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv("/proc/self/exe", argv.data());
    std::perror("bench_tcp: exec");
    ::_exit(127);
  }
  ::close(fds[1]);
  Child c;
  c.pid = pid;
  if (pid > 0 && capture) {
    c.out = ::fdopen(fds[0], "r");
  } else {
    ::close(fds[0]);
  }
  return c;
}

// Exit status, killing the child if it has not exited within `limit_s`.
int reap(Child& c, unsigned limit_s) {
  if (c.out) {
    std::fclose(c.out);
    c.out = nullptr;
  }
  if (c.pid <= 0) return -1;
  int status = 0;
  for (unsigned waited_ms = 0;; waited_ms += 10) {
    const pid_t r = ::waitpid(c.pid, &status, WNOHANG);
    if (r == c.pid) break;
    if (r < 0) return -1;
    if (waited_ms >= limit_s * 1000) {
      std::fprintf(stderr, "bench_tcp: killing pid %d\n", static_cast<int>(c.pid));
      ::kill(c.pid, SIGKILL);
      ::waitpid(c.pid, &status, 0);
      return -1;
    }
    ::usleep(10'000);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Reads "bulk ..." and "pp ..." lines (workload.h) until the client closes its stdout.
void collect(FILE* in, Result& r) {
  char line[256];
  while (in && std::fgets(line, sizeof line, in)) {
    unsigned long long bytes = 0, n = 0;
    long long ns = 0, p50 = 0, p99 = 0, lo = 0, hi = 0;
    unsigned size = 0;
    if (std::sscanf(line, "bulk %llu %lld", &bytes, &ns) == 2 && ns > 0) {
      r.gbps.push_back(static_cast<double>(bytes) * 8.0 / static_cast<double>(ns));
    } else if (std::sscanf(line, "pp %u %llu %lld %lld %lld %lld", &size, &n, &p50, &p99, &lo,
                           &hi) == 6) {
      r.rtt[size] = {static_cast<double>(p50) / 1e3, static_cast<double>(p99) / 1e3};
    }
    std::fprintf(stderr, "  [%s] %s", r.name.c_str(), line);
  }
}

std::vector<std::string> plan_args(const RoleOptions& o) {
  std::string sizes;
  for (auto s : o.plan.sizes) {
    if (!sizes.empty()) sizes.push_back(',');
    sizes.append(std::to_string(s));
  }
  return {"--bulk-bytes=" + std::to_string(o.plan.bulk_bytes),
          "--bulk-runs=" + std::to_string(o.plan.bulk_runs),
          "--iters=" + std::to_string(o.plan.iters),
          "--warmup=" + std::to_string(o.plan.warmup),
          "--sizes=" + sizes,
          "--timeout=" + std::to_string(o.timeout_s)};
}

void remove_eal_dirs(const std::string& prefix) {
  std::error_code ec;
  std::filesystem::remove_all(std::filesystem::path("/var/run/dpdk") / prefix, ec);
  if (const char* x = std::getenv("XDG_RUNTIME_DIR")) {
    std::filesystem::remove_all(std::filesystem::path(x) / "dpdk" / prefix, ec);
  }
  std::filesystem::remove_all(std::filesystem::path("/tmp/dpdk") / prefix, ec);
}

Result run_esock(const RoleOptions& o, const DriverOptions& d, bool busy) {
  const std::string tag = busy ? "busy" : "backoff";
  Result r;
  r.name = busy ? "esock busy-poll" : "esock back-off";
  const std::string base = "esock-bench-" + std::to_string(::getpid()) + "-" + tag;
  const std::string sock = "/tmp/" + base + ".sock";
  std::error_code ec;
  std::filesystem::remove(sock, ec);
  const std::string poll = busy ? "--poll=busy" : "--poll=backoff";
  const std::string to = "--timeout=" + std::to_string(o.timeout_s);
  const std::string spin = "--spin-polls=" + std::to_string(o.spin_polls);
  Child server = spawn({"esock-server", "--core=" + std::to_string(d.server_core), poll,
                        "--socket=" + sock, "--prefix=" + base + "-s", to, spin},
                       false);
  // The memif client must find the server's socket: a client started first never retries.
  for (int i = 0; i < 3000 && !std::filesystem::exists(sock, ec); ++i) {
    if (::waitpid(server.pid, nullptr, WNOHANG) != 0) break;
    ::usleep(10'000);
  }
  std::vector<std::string> ca = {"esock-client",
                                 "--core=" + std::to_string(d.client_core),
                                 poll,
                                 "--socket=" + sock,
                                 "--prefix=" + base + "-c",
                                 spin};
  for (auto& a : plan_args(o)) ca.push_back(a);
  Child client = spawn(ca, true);
  collect(client.out, r);
  const int cs = reap(client, o.timeout_s);
  const int ss = reap(server, 10);
  r.ok = cs == 0 && ss == 0;
  if (!r.ok) std::fprintf(stderr, "bench_tcp: %s: client %d, server %d\n", r.name.c_str(), cs, ss);
  std::filesystem::remove(sock, ec);
  remove_eal_dirs(base + "-s");
  remove_eal_dirs(base + "-c");
  return r;
}

Result run_kernel(const RoleOptions& o, const DriverOptions& d, bool busy) {
  Result r;
  r.name = busy ? "kernel busy-poll" : "kernel blocking";
  const std::string to = "--timeout=" + std::to_string(o.timeout_s);
  const std::string poll = busy ? "--poll=busy" : "--poll=block";
  Child server =
      spawn({"kernel-server", "--core=" + std::to_string(d.server_core), poll, to}, true);
  unsigned port = 0;
  char line[64];
  if (server.out && std::fgets(line, sizeof line, server.out)) std::sscanf(line, "ready %u", &port);
  if (port != 0) {
    std::vector<std::string> ca = {"kernel-client", "--core=" + std::to_string(d.client_core), poll,
                                   "--port=" + std::to_string(port)};
    for (auto& a : plan_args(o)) ca.push_back(a);
    Child client = spawn(ca, true);
    collect(client.out, r);
    r.ok = reap(client, o.timeout_s) == 0;
  }
  r.ok = reap(server, 10) == 0 && r.ok;
  if (!r.ok) std::fprintf(stderr, "bench_tcp: %s run failed\n", r.name.c_str());
  return r;
}

std::optional<double> median(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string cell(std::optional<double> v, const char* fmt) {
  if (!v) return "n/a";
  char b[32];
  std::snprintf(b, sizeof b, fmt, *v);
  return b;
}

const Result* find(const std::vector<Result>& rs, const char* name) {
  for (const auto& r : rs) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

void print_table(const std::vector<Result>& rs, const RoleOptions& o) {
  // Ratios: each esock mode against the kernel as programs use it (blocking calls), and
  // like for like, busy-polling esock against a busy-polling kernel client and server.
  struct Pair {
    const Result* a;
    const Result* b;
  };
  std::vector<Pair> pairs;
  const char* pair_names[][2] = {{"esock busy-poll", "kernel blocking"},
                                 {"esock back-off", "kernel blocking"},
                                 {"esock busy-poll", "kernel busy-poll"}};
  for (auto& pn : pair_names) {
    const Result* a = find(rs, pn[0]);
    const Result* b = find(rs, pn[1]);
    if (a && b) pairs.push_back({a, b});
  }
  std::printf("| metric |");
  for (const auto& r : rs) std::printf(" %s |", r.name.c_str());
  for (const auto& p : pairs) std::printf(" %s / %s |", p.a->name.c_str(), p.b->name.c_str());
  std::printf("\n|---|");
  for (std::size_t i = 0; i < rs.size() + pairs.size(); ++i) std::printf("---:|");
  std::printf("\n");
  using Get = std::optional<double> (*)(const Result&, std::uint32_t);
  auto row = [&](const std::string& label, Get get, std::uint32_t key, const char* fmt) {
    std::printf("| %s |", label.c_str());
    for (const auto& r : rs) std::printf(" %s |", cell(get(r, key), fmt).c_str());
    for (const auto& p : pairs) {
      auto a = get(*p.a, key), b = get(*p.b, key);
      std::optional<double> q;
      if (a && b && *b > 0) q = *a / *b;
      std::printf(" %s |", cell(q, "%.2f").c_str());
    }
    std::printf("\n");
  };
  char label[96];
  std::snprintf(label, sizeof label, "bulk 1 stream, %llu MiB (Gbit/s, median of %u)",
                static_cast<unsigned long long>(o.plan.bulk_bytes >> 20), o.plan.bulk_runs);
  row(
      label, [](const Result& r, std::uint32_t) { return median(r.gbps); }, 0, "%.2f");
  for (std::uint32_t size : o.plan.sizes) {
    const std::string sz = size >= 1024 && size % 1024 == 0 ? std::to_string(size / 1024) + " KiB"
                                                            : std::to_string(size) + " B";
    row(
        "ping-pong " + sz + " RTT p50 (us)",
        [](const Result& r, std::uint32_t s) -> std::optional<double> {
          auto it = r.rtt.find(s);
          if (it == r.rtt.end()) return std::nullopt;
          return it->second.p50_us;
        },
        size, "%.1f");
    row(
        "ping-pong " + sz + " RTT p99 (us)",
        [](const Result& r, std::uint32_t s) -> std::optional<double> {
          auto it = r.rtt.find(s);
          if (it == r.rtt.end()) return std::nullopt;
          return it->second.p99_us;
        },
        size, "%.1f");
  }
}

}  // namespace

int run_driver(const RoleOptions& o, const DriverOptions& d) {
  std::vector<Result> rs;
  auto want = [&](const char* m) {
    return ("," + d.modes + ",").find(std::string(",") + m + ",") != std::string::npos;
  };
  if (want("busy")) rs.push_back(run_esock(o, d, true));
  if (want("backoff")) rs.push_back(run_esock(o, d, false));
  if (want("kernel")) rs.push_back(run_kernel(o, d, false));
  if (want("kernel-busy")) rs.push_back(run_kernel(o, d, true));

  const std::time_t now = std::time(nullptr);
  char date[64];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  utsname u{};
  ::uname(&u);
  std::printf(
      "bench_tcp, %s, %s %s, %ld cores; client on core %u, server on core %u; "
      "ping-pong: %u iterations after %u warm-up, TCP_NODELAY both stacks\n\n",
      date, u.sysname, u.release, ::sysconf(_SC_NPROCESSORS_ONLN), d.client_core, d.server_core,
      o.plan.iters, o.plan.warmup);
  print_table(rs, o);
  std::printf(
      "\nratio = esock / kernel (throughput: above 1 is better; latency: below 1 is "
      "better). RTT = one full round trip, message there and back.\n");
  bool ok = true;
  for (const auto& r : rs) {
    if (!r.ok) {
      std::printf("%s: FAILED (see stderr); its cells may be partial\n", r.name.c_str());
      ok = false;
    }
  }
  return ok ? 0 : 1;
}

}  // namespace esock::bench
