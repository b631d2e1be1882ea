// esock-stat [-p PID] [--json] [-w SECONDS]: what every process using esock is doing, from
// the statistics region each publishes (lib/esock/runtime/stats_layout.h, esock-stat(1)):
// its provider, its own stack's counters, and per DDPMODE connection the mode, state,
// addresses, negotiated MPA, ESTP credits, octets and messages each way. Reads shared memory
// only: the processes it watches do nothing for it. Regions of processes that are gone are
// removed.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "esock/runtime/stats_layout.h"
#include "esock/version.h"

namespace {

namespace st = esock::stats;

// A consistent copy of a region (seqlock), as octets: the region holds an atomic, which
// cannot be copied as an object.
struct Snapshot {
  std::vector<std::uint64_t> buf = std::vector<std::uint64_t>((sizeof(st::Region) + 7) / 8);
  const st::Region& region() const { return *reinterpret_cast<const st::Region*>(buf.data()); }
};

// Every text field of a copy ends within its array, whatever the writer put there (the
// file is another process's).
template <std::size_t N>
void nul(char (&a)[N]) {
  a[N - 1] = '\0';
}
void terminate_strings(st::Region* r) {
  nul(r->program);
  nul(r->provider);
  nul(r->esock_version);
  for (st::Counter& c : r->counters) nul(c.name);
  for (st::Conn& c : r->conn) {
    nul(c.mode);
    nul(c.state);
    nul(c.local);
    nul(c.peer);
  }
}

// A consistent copy of /dev/shm/<name>, or false (not a region of this layout, or never
// quiet long enough to copy).
bool read_region(const std::string& name, Snapshot* out) {
  const int fd = ::shm_open(("/" + name).c_str(), O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return false;
  struct stat sb {};
  void* p = MAP_FAILED;
  if (::fstat(fd, &sb) == 0 && static_cast<std::size_t>(sb.st_size) >= sizeof(st::Region))
    p = ::mmap(nullptr, sizeof(st::Region), PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return false;
  const auto* r = static_cast<const st::Region*>(p);
  bool ok = false;
  if (std::memcmp(r->magic, st::magic, sizeof st::magic) == 0 && r->version == st::layout_version &&
      r->size == sizeof(st::Region)) {
    for (int tries = 0; tries < 1000 && !ok; ++tries) {
      const std::uint64_t a = r->seq.load(std::memory_order_acquire);
      if (a & 1) {
        std::this_thread::yield();
        continue;
      }
      std::memcpy(out->buf.data(), static_cast<const void*>(r), sizeof(st::Region));
      std::atomic_thread_fence(std::memory_order_acquire);
      ok = r->seq.load(std::memory_order_relaxed) == a;
    }
  }
  ::munmap(p, sizeof(st::Region));
  if (ok) terminate_strings(reinterpret_cast<st::Region*>(out->buf.data()));
  return ok;
}

bool alive(pid_t pid) {
  return ::kill(pid, 0) == 0 || errno == EPERM;
}

// Every live process's snapshot (only `only` when not 0), in pid order.
std::vector<Snapshot> collect(pid_t only) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir("/dev/shm")) {
    const std::string prefix = st::file_prefix;
    while (const dirent* e = ::readdir(d)) {
      const std::string n = e->d_name;
      if (n.compare(0, prefix.size(), prefix) == 0) names.push_back(n);
    }
    ::closedir(d);
  }
  std::vector<Snapshot> out;
  for (const std::string& n : names) {
    const pid_t pid = static_cast<pid_t>(std::atol(n.c_str() + std::strlen(st::file_prefix)));
    if (pid <= 0) continue;
    if (!alive(pid)) {  // the process died without its exit handler (killed): tidy up
      ::shm_unlink(("/" + n).c_str());
      continue;
    }
    if (only != 0 && pid != only) continue;
    Snapshot s;
    if (read_region(n, &s) && s.region().pid == pid) out.push_back(s);
  }
  std::sort(out.begin(), out.end(),
            [](const Snapshot& a, const Snapshot& b) { return a.region().pid < b.region().pid; });
  return out;
}

double ago_s(std::uint64_t ns) {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  const double now = static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  return now - static_cast<double>(ns) * 1e-9;
}

// A connection's numbers by name, in the order JSON lists them (the text picks from them).
std::vector<std::pair<const char*, long long>> numbers(const st::Conn& c) {
  const auto u = [](std::uint64_t v) { return static_cast<long long>(v); };
  return {{"mpa_revision", c.mpa_revision},
          {"mpa_crc", c.mpa_crc},
          {"markers_tx", c.markers_tx},
          {"markers_rx", c.markers_rx},
          {"ird", c.ird},
          {"ord", c.ord},
          {"send_credits", c.send_credits},
          {"error", c.error},
          {"bytes_tx", u(c.bytes_tx)},
          {"bytes_rx", u(c.bytes_rx)},
          {"data_tx", u(c.data_tx)},
          {"data_rx", u(c.data_rx)},
          {"credit_tx", u(c.credit_tx)},
          {"srcavail_tx", u(c.srcavail_tx)},
          {"srcavail_rx", u(c.srcavail_rx)},
          {"zero_copy_pulls", u(c.zero_copy_pulls)},
          {"bounce_pulls", u(c.bounce_pulls)},
          {"sinks_offered", u(c.sinks_offered)},
          {"sinks_written", u(c.sinks_written)},
          {"sink_writes", u(c.sink_writes)},
          {"zcopy_mode", c.zcopy_mode},
          {"copied_tx", u(c.copied_tx)},
          {"zcopy_tx", u(c.zcopy_tx)},
          {"async_writes", u(c.async_writes)},
          {"guard_faults", u(c.guard_faults)},
          {"cow_copies", u(c.cow_copies)},
          {"cow_octets", u(c.cow_octets)},
          {"async_reads", u(c.async_reads)},
          {"async_read_octets", u(c.async_read_octets)},
          {"fpdus_tx", u(c.fpdus_tx)},
          {"fpdus_rx", u(c.fpdus_rx)},
          {"ooo_segments", u(c.ooo_segments)},
          {"ooo_placed", u(c.ooo_placed)},
          {"tcp_retransmits", u(c.tcp_retransmits)},
          {"rx_queued", u(c.rx_queued)},
          {"tx_queued", u(c.tx_queued)}};
}

void print_text(const std::vector<Snapshot>& all) {
  if (all.empty()) std::printf("no process is using esock's DDPMODE sockets\n");
  for (const Snapshot& s : all) {
    const st::Region& r = s.region();
    std::printf("pid %d (%s)  esock %s  provider %s  up %.1f s  updated %.2f s ago\n", r.pid,
                r.program, r.esock_version, r.provider, ago_s(r.started_ns), ago_s(r.updated_ns));
    if (r.ncounters > 0) {
      std::printf("  stack:");
      for (std::uint32_t i = 0; i < r.ncounters && i < st::max_counters; ++i)
        std::printf(" %s=%llu", r.counters[i].name,
                    static_cast<unsigned long long>(r.counters[i].value));
      std::printf("\n");
    }
    std::printf("  sockets: %u%s\n", r.conns_seen,
                r.conns_seen > r.nconns ? " (the first ones shown)" : "");
    for (std::uint32_t i = 0; i < r.nconns && i < st::max_conns; ++i) {
      const st::Conn& c = r.conn[i];
      std::printf("    %-7s %-10s %s%s%s\n", c.mode, c.state, c.local, c.peer[0] ? " -> " : "",
                  c.peer);
      if (std::strcmp(c.state, "listening") == 0) continue;
      const auto n = numbers(c);
      const auto v = [&n](const char* name) {
        for (const auto& [k, x] : n)
          if (std::strcmp(k, name) == 0) return x;
        return 0LL;
      };
      std::printf(
          "      MPA v%lld CRC %s markers %s/%s IRD/ORD %lld/%lld  credits %lld  queued rx %lld "
          "tx %lld  error %lld\n",
          v("mpa_revision"), v("mpa_crc") ? "on" : "off", v("markers_tx") ? "tx" : "-",
          v("markers_rx") ? "rx" : "-", v("ird"), v("ord"), v("send_credits"), v("rx_queued"),
          v("tx_queued"), v("error"));
      std::printf(
          "      octets tx %lld rx %lld  DATA tx %lld rx %lld  CREDIT tx %lld  SRCAVAIL tx "
          "%lld rx %lld  pulls %lld+%lld bounce  sinks offered %lld written %lld, writes "
          "into sinks %lld\n",
          v("bytes_tx"), v("bytes_rx"), v("data_tx"), v("data_rx"), v("credit_tx"),
          v("srcavail_tx"), v("srcavail_rx"), v("zero_copy_pulls"), v("bounce_pulls"),
          v("sinks_offered"), v("sinks_written"), v("sink_writes"));
      static const char* const zmodes[] = {"copy", "sync", "async", "async-cow"};
      const long long zm = v("zcopy_mode");
      std::printf(
          "      zero-copy %s: octets copied %lld, by reference %lld  asynchronous writes %lld, "
          "reads %lld (%lld octets), faults held %lld, copies on write %lld (%lld octets)\n",
          zm >= 0 && zm <= 3 ? zmodes[zm] : "?", v("copied_tx"), v("zcopy_tx"), v("async_writes"),
          v("async_reads"), v("async_read_octets"), v("guard_faults"), v("cow_copies"),
          v("cow_octets"));
      std::printf(
          "      FPDUs tx %lld rx %lld  out of order %lld, placed early %lld  TCP "
          "retransmits %lld%s\n",
          v("fpdus_tx"), v("fpdus_rx"), v("ooo_segments"), v("ooo_placed"), v("tcp_retransmits"),
          c.terminated ? "  TERMINATED" : "");
    }
  }
}

// JSON strings here are names, addresses and states; escape what JSON requires anyway.
std::string js(const char* s) {
  std::string o = "\"";
  for (const char* p = s; *p; ++p) {
    const auto ch = static_cast<unsigned char>(*p);
    if (ch == '"' || ch == '\\') {
      o += '\\';
      o += static_cast<char>(ch);
    } else if (ch < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", ch);
      o += buf;
    } else {
      o += static_cast<char>(ch);
    }
  }
  return o + "\"";
}

void print_json(const std::vector<Snapshot>& all) {
  std::printf("{\"processes\":[");
  for (std::size_t k = 0; k < all.size(); ++k) {
    const st::Region& r = all[k].region();
    std::printf(
        "%s{\"pid\":%d,\"program\":%s,\"esock_version\":%s,\"provider\":%s,"
        "\"started_ns\":%llu,\"updated_ns\":%llu,\"sockets\":%u,\"counters\":{",
        k ? "," : "", r.pid, js(r.program).c_str(), js(r.esock_version).c_str(),
        js(r.provider).c_str(), static_cast<unsigned long long>(r.started_ns),
        static_cast<unsigned long long>(r.updated_ns), r.conns_seen);
    for (std::uint32_t i = 0; i < r.ncounters && i < st::max_counters; ++i)
      std::printf("%s%s:%llu", i ? "," : "", js(r.counters[i].name).c_str(),
                  static_cast<unsigned long long>(r.counters[i].value));
    std::printf("},\"connections\":[");
    for (std::uint32_t i = 0; i < r.nconns && i < st::max_conns; ++i) {
      const st::Conn& c = r.conn[i];
      std::printf("%s{\"mode\":%s,\"state\":%s,\"local\":%s,\"peer\":%s", i ? "," : "",
                  js(c.mode).c_str(), js(c.state).c_str(), js(c.local).c_str(), js(c.peer).c_str());
      for (const auto& [name, v] : numbers(c)) std::printf(",\"%s\":%lld", name, v);
      std::printf(",\"terminated\":%s}", c.terminated ? "true" : "false");
    }
    std::printf("]}");
  }
  std::printf("]}\n");
}

void usage(FILE* f) {
  std::fprintf(f,
               "usage: esock-stat [-p PID] [--json] [-w SECONDS]\n"
               "  -p, --pid PID       only this process (exit status 1 if it has no esock "
               "statistics)\n"
               "  -j, --json          one JSON document (per refresh with -w)\n"
               "  -w, --watch SECONDS refresh every SECONDS until interrupted\n"
               "  -V, --version\n"
               "  -h, --help\n");
}

}  // namespace

int main(int argc, char** argv) {
  pid_t only = 0;
  bool json = false;
  double watch = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_arg = i + 1 < argc;
    if ((a == "-p" || a == "--pid") && has_arg) {
      only = static_cast<pid_t>(std::atol(argv[++i]));
      if (only <= 0) {
        std::fprintf(stderr, "esock-stat: -p wants a process id, got '%s'\n", argv[i]);
        return 2;
      }
    } else if (a == "-j" || a == "--json") {
      json = true;
    } else if ((a == "-w" || a == "--watch") && has_arg) {
      watch = std::atof(argv[++i]);
      if (watch <= 0) {
        std::fprintf(stderr, "esock-stat: -w wants seconds > 0, got '%s'\n", argv[i]);
        return 2;
      }
    } else if (a == "-V" || a == "--version") {
      std::printf("esock-stat (esock) %s\n", ESOCK_VERSION_STRING);
      return 0;
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else {
      std::fprintf(stderr, "esock-stat: unknown argument '%s'\n", a.c_str());
      usage(stderr);
      return 2;
    }
  }
  for (;;) {
    const std::vector<Snapshot> all = collect(only);
    if (only != 0 && all.empty()) {
      std::fprintf(stderr,
                   "esock-stat: no esock statistics for pid %d (not running, not using esock's "
                   "DDPMODE sockets yet, or another user's)\n",
                   only);
      return 1;
    }
    if (watch > 0 && !json) std::printf("\033[H\033[2J");  // clear the terminal each round
    if (json) {
      print_json(all);
    } else {
      print_text(all);
    }
    std::fflush(stdout);
    if (watch <= 0) return 0;
    std::this_thread::sleep_for(std::chrono::duration<double>(watch));
  }
}
