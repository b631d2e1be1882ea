// bench_tcp: lib/tcp over net_memif between two processes against Linux TCP over loopback,
// in one run, printed as one markdown table (bulk throughput, ping-pong round trips).
//
//   bench_tcp [--modes=busy,backoff,kernel] [--bulk-mib=256] [--bulk-runs=3]
//             [--iters=5000] [--warmup=500] [--sizes=64,1024,4096,16384,65536]
//             [--client-core=0] [--server-core=1] [--timeout=120] [--spin-polls=N]
//
// The driver itself does no I/O on the measured path: for every configuration it starts a
// server and a client as separate processes (this binary again, with a role as first
// argument; see roles.h), reads the client's result lines and tabulates them.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "driver.h"
#include "roles.h"

namespace {

using esock::bench::RoleOptions;

bool starts(const char* arg, const char* key, const char** value) {
  const std::size_t n = std::strlen(key);
  if (std::strncmp(arg, key, n) != 0 || arg[n] != '=') return false;
  *value = arg + n + 1;
  return true;
}

std::vector<std::uint32_t> parse_list(const char* s) {
  std::vector<std::uint32_t> v;
  while (*s) {
    char* end = nullptr;
    v.push_back(static_cast<std::uint32_t>(std::strtoul(s, &end, 10)));
    s = *end == ',' ? end + 1 : end;
    if (end == s && *s) break;
  }
  return v;
}

// Options shared by the driver and the roles (the driver forwards them to its children).
bool parse(int argc, char** argv, int first, RoleOptions* o, esock::bench::DriverOptions* d) {
  for (int i = first; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = nullptr;
    if (starts(a, "--core", &v)) {
      o->core = static_cast<unsigned>(std::atoi(v));
    } else if (starts(a, "--poll", &v)) {
      o->busy_poll = std::strcmp(v, "busy") == 0;
    } else if (starts(a, "--spin-polls", &v)) {
      o->spin_polls = static_cast<std::uint32_t>(std::atoi(v));
    } else if (starts(a, "--socket", &v)) {
      o->socket = v;
    } else if (starts(a, "--prefix", &v)) {
      o->file_prefix = v;
    } else if (starts(a, "--port", &v)) {
      o->port = static_cast<std::uint16_t>(std::atoi(v));
    } else if (starts(a, "--timeout", &v)) {
      o->timeout_s = static_cast<unsigned>(std::atoi(v));
    } else if (starts(a, "--bulk-bytes", &v)) {
      o->plan.bulk_bytes = std::strtoull(v, nullptr, 10);
    } else if (starts(a, "--bulk-mib", &v)) {
      o->plan.bulk_bytes = std::strtoull(v, nullptr, 10) << 20;
    } else if (starts(a, "--bulk-runs", &v)) {
      o->plan.bulk_runs = static_cast<std::uint32_t>(std::atoi(v));
    } else if (starts(a, "--iters", &v)) {
      o->plan.iters = static_cast<std::uint32_t>(std::atoi(v));
    } else if (starts(a, "--warmup", &v)) {
      o->plan.warmup = static_cast<std::uint32_t>(std::atoi(v));
    } else if (starts(a, "--sizes", &v)) {
      o->plan.sizes = parse_list(v);
    } else if (d && starts(a, "--modes", &v)) {
      d->modes = v;
    } else if (d && starts(a, "--client-core", &v)) {
      d->client_core = static_cast<unsigned>(std::atoi(v));
    } else if (d && starts(a, "--server-core", &v)) {
      d->server_core = static_cast<unsigned>(std::atoi(v));
    } else {
      std::fprintf(stderr, "bench_tcp: unknown argument %s\n", a);
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace esock::bench;
  RoleOptions o;
  const std::string role = argc > 1 && argv[1][0] != '-' ? argv[1] : "";
  if (!role.empty()) {
    if (!parse(argc, argv, 2, &o, nullptr)) return 2;
    if (role == "esock-server") return esock_server(o);
    if (role == "esock-client") return esock_client(o);
    if (role == "kernel-server") return kernel_server(o);
    if (role == "kernel-client") return kernel_client(o);
    std::fprintf(stderr, "bench_tcp: unknown role %s\n", role.c_str());
    return 2;
  }
  DriverOptions d;
  if (!parse(argc, argv, 1, &o, &d)) return 2;
  return run_driver(o, d);
}
