// bench_memif_link: the "raw memif link" baseline of bench/utcp (README.md). Two processes,
// one net_memif port each, nothing above the PMD (no IP, no TCP, no checksums, no copies
// of ours while the clock runs): what any stack over this link can at best approach.
//
//   bench_memif_link --role server|client --socket PATH [--bsize N] [--rsize N] [--core N]
//                    [--prefix P] [--timeout S] MODE
//   MODE: lat --size S --iters N [--warmup N]
//         bw  --size S --seconds T
//
// Both processes get the same MODE; the client's HELLO carries it and the server refuses a
// different one. S is the Ethernet frame (14-octet header included, no FCS), 60..16384.
// lat: the client sends one frame and waits for the server's echo (MACs swapped); every
//      round trip is timed with the TSC on the client and the echo's payload is compared.
//      RESULT memif lat role=client size=S p50_us= p99_us= iters=N ... cpu_s=
// bw:  the client transmits bursts of 32 frames for T seconds, retrying what tx_burst did
//      not take, then an END frame; the server counts data frames from the first one to
//      END and answers with its counts. The server's line is the result (MB = 10^6 octets
//      of frames):
//      RESULT memif bw role=server size=S mbps= mpps= secs= ... cpu_s=
// cpu_s: getrusage (all threads of the process) over the measured interval.
// Both sides busy-poll during a test. Every wait is bounded by --timeout (default 10 s) and
// watches the link, so a vanished peer ends the run with a message, not a hang. Shutdown
// is ordered because memif 22.11 can crash a poller whose peer disconnects
// (MACHINE-NOTES.md): the server sends its END answer and stops polling, the client
// closes when it has the answer, then the server closes. A peer that vanishes mid-test
// can still fault this side inside memif; that fault is caught and reported (on_fault).
// The server unlinks its socket file, both remove their EAL runtime directory
// (tcp/dpdk/eal.h).
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csetjmp>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "tcp/dpdk/eal.h"

namespace {

constexpr std::uint16_t kEtherType = 0x88B5;  // IEEE 802 local experimental
constexpr std::uint32_t kMagic = 0x4B4E4C4D;  // "MLNK"
constexpr std::uint16_t kBurst = 32;
constexpr std::uint32_t kEth = 14;
constexpr std::uint32_t kMinFrame = 60;  // Ethernet's minimum without FCS
constexpr std::uint32_t kMaxFrame = 16384;
constexpr unsigned kPoolMbufs = 4095;  // rte_mempool's best size is 2^n - 1

enum class Kind : std::uint8_t { hello = 1, hello_ack, ping, data, end, end_ack };
enum class Mode : std::uint8_t { lat = 1, bw = 2 };

// Follows the Ethernet header, so it is unaligned: always memcpy'd. Host byte order: both
// ends run on this machine.
struct Hdr {
  std::uint32_t magic;
  Kind kind;
  Mode mode;
  std::uint8_t status;  // hello_ack: 0 ok, 1 the server was started for another test
  std::uint8_t pad;
  std::uint32_t size;  // the test's frame size
  std::uint32_t pad2;
  std::uint64_t seq;  // ping, data: sequence; end: frames sent; end_ack: frames received
  std::uint64_t arg;  // hello: iterations or seconds; end_ack: octets received
};
static_assert(sizeof(Hdr) == 32);

volatile std::sig_atomic_t g_stop = 0;
const char* g_role = "?";
// memif 22.11 can unmap the rings in its interrupt thread while this thread is inside a
// burst on them (MACHINE-NOTES.md): a fault then, with the link already marked down, is the
// peer going away and ends the test (main); any other fault stays a crash.
volatile std::sig_atomic_t g_fault_port = -1;
sigjmp_buf g_fault_jmp;

void on_fault(int sig) {
  rte_eth_link l{};
  if (g_fault_port >= 0 &&
      rte_eth_link_get_nowait(static_cast<std::uint16_t>(g_fault_port), &l) == 0 &&
      l.link_status == RTE_ETH_LINK_DOWN) {
    g_fault_port = -1;
    siglongjmp(g_fault_jmp, 1);
  }
  std::signal(sig, SIG_DFL);  // returning re-runs the access: the default action
}

struct Options {
  bool server = false;
  std::string socket;
  std::string prefix;
  unsigned bsize = 0;  // 0: max(2048, size + 128) rounded up to 1 KiB
  unsigned rsize = 10;
  unsigned core = 0;
  unsigned timeout_s = 10;
  Mode mode = Mode::lat;
  std::uint32_t size = 64;
  std::uint64_t iters = 1000;
  std::uint64_t warmup = ~0ull;  // default: ring slots + iters / 10
  unsigned seconds = 2;
};

double cpu_s() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

Hdr header_of(const rte_mbuf* m) {
  Hdr h{};
  if (m->data_len >= kEth + sizeof h)
    std::memcpy(&h, rte_pktmbuf_mtod_offset(m, const std::uint8_t*, kEth), sizeof h);
  return h;
}

// One memif port and its pool. Every wait goes through Wait, so none is unbounded.
struct Link {
  std::uint16_t port = 0;
  rte_mempool* pool = nullptr;
  std::uint64_t hz = 1;
  unsigned timeout_s = 10;
  std::uint8_t tmpl[kMaxFrame] = {};  // the test frame: Ethernet + Hdr + payload pattern
  const char* error = "none";         // the RESULT line's error=
  std::string why;                    // its explanation, printed once at exit

  bool up() const {
    rte_eth_link l{};
    return rte_eth_link_get_nowait(port, &l) == 0 && l.link_status == RTE_ETH_LINK_UP;
  }
  bool failed() const { return std::strcmp(error, "none") != 0; }
  bool fail(const char* code, const std::string& what) {
    error = code;
    why = what;
    return false;
  }
  rte_mbuf* frame(const Hdr& h, std::uint32_t len);
  bool tx_all(rte_mbuf** m, std::uint16_t n, const char* what);
  bool send(const Hdr& h, const char* what) {
    rte_mbuf* m = frame(h, kMinFrame);
    return m && tx_all(&m, 1, what);
  }
};

// A bounded wait inside a busy loop: call ok() on every empty poll, reset() on progress.
// Clock, link and signals are looked at every 256th empty poll (each costs more than one).
class Wait {
 public:
  Wait(Link& l, double seconds, const char* what) : l_(l), what_(what) {
    span_ = static_cast<std::uint64_t>(seconds * static_cast<double>(l.hz));
    reset();
  }
  void reset() {
    deadline_ = rte_rdtsc() + span_;
    n_ = 0;
  }
  bool ok() {
    if ((++n_ & 255) != 0) return true;
    char msg[256];
    if (g_stop) return l_.fail("interrupted", "interrupted by a signal");
    if (!l_.up()) {
      std::snprintf(msg, sizeof msg, "%s: the link went down (peer gone)", what_);
      return l_.fail("peer_gone", msg);
    }
    if (rte_rdtsc() > deadline_) {
      std::snprintf(msg, sizeof msg, "%s: nothing for %.1f s", what_,
                    static_cast<double>(span_) / static_cast<double>(l_.hz));
      return l_.fail("timeout", msg);
    }
    return true;
  }

 private:
  Link& l_;
  const char* what_;
  std::uint64_t span_ = 0, deadline_ = 0;
  unsigned n_ = 0;
};

rte_mbuf* Link::frame(const Hdr& h, std::uint32_t len) {
  rte_mbuf* m = rte_pktmbuf_alloc(pool);
  std::uint8_t* p =
      m ? reinterpret_cast<std::uint8_t*>(rte_pktmbuf_append(m, static_cast<std::uint16_t>(len)))
        : nullptr;
  if (!p) {
    rte_pktmbuf_free(m);
    fail("no_mbuf", "mbuf pool empty");
    return nullptr;
  }
  std::memcpy(p, tmpl, len);
  std::memcpy(p + kEth, &h, sizeof h);
  return m;
}

bool Link::tx_all(rte_mbuf** m, std::uint16_t n, const char* what) {
  Wait w(*this, timeout_s, what);
  std::uint16_t done = 0;
  while (done < n) {
    const std::uint16_t k =
        rte_eth_tx_burst(port, 0, m + done, static_cast<std::uint16_t>(n - done));
    done = static_cast<std::uint16_t>(done + k);
    if (k > 0) {
      w.reset();
    } else if (!w.ok()) {
      rte_pktmbuf_free_bulk(m + done, n - done);
      return false;
    }
  }
  return true;
}

// Receives until a frame of `kind` (and, for ping, sequence `seq`) arrives; others are
// dropped. Returns it (caller frees) or nullptr. `idle`: sleep 50 us after 64 empty polls
// (set-up phases only; the measured loops spin).
rte_mbuf* await(Link& l, Kind kind, std::uint64_t seq, double seconds, bool idle,
                const char* what) {
  Wait w(l, seconds, what);
  rte_mbuf* m[16];
  unsigned empty = 0;
  for (;;) {
    const std::uint16_t n = rte_eth_rx_burst(l.port, 0, m, 16);
    if (n == 0) {
      if (!w.ok()) return nullptr;
      if (idle && ++empty > 64) ::usleep(50);
      continue;
    }
    rte_mbuf* hit = nullptr;
    for (std::uint16_t i = 0; i < n; ++i) {
      const Hdr h = header_of(m[i]);
      if (!hit && h.magic == kMagic && h.kind == kind && (kind != Kind::ping || h.seq == seq)) {
        hit = m[i];
      } else {
        rte_pktmbuf_free(m[i]);
      }
    }
    if (hit) return hit;
  }
}

double pct_us(std::vector<std::uint64_t>& sorted, double p, std::uint64_t hz) {
  if (sorted.empty()) return -1;
  const auto i = static_cast<std::size_t>(p * static_cast<double>(sorted.size() - 1) + 0.5);
  return static_cast<double>(sorted[std::min(i, sorted.size() - 1)]) * 1e6 /
         static_cast<double>(hz);
}

// The test's parameters as the client announces them.
Hdr hello_of(const Options& o) {
  Hdr h{kMagic, Kind::hello, o.mode, 0, 0, o.size, 0, 0, 0};
  h.arg = o.mode == Mode::lat ? o.warmup + o.iters : o.seconds;
  return h;
}

bool client_hello(Link& l, const Options& o) {
  const Hdr hello = hello_of(o);
  // Link up is not rings ready on both ends: repeat the HELLO until it is answered.
  const std::uint64_t end = rte_rdtsc() + o.timeout_s * l.hz;
  while (rte_rdtsc() < end && !g_stop) {
    if (!l.send(hello, "HELLO")) return false;
    rte_mbuf* m = await(l, Kind::hello_ack, 0, 0.01, true, "HELLO");
    if (!m && std::strcmp(l.error, "timeout") != 0) return false;
    l.error = "none";  // a 10 ms timeout: send it again
    if (m) {
      const Hdr h = header_of(m);
      rte_pktmbuf_free(m);
      if (h.status != 0) return l.fail("mismatch", "the server was started for another test");
      return true;
    }
  }
  return l.fail(g_stop ? "interrupted" : "timeout", "no answer to HELLO (is a server there?)");
}

// END, then the server's counts. After this the client stops polling and closes.
bool client_end(Link& l, std::uint64_t sent, Hdr* ack) {
  Hdr end{kMagic, Kind::end, Mode::lat, 0, 0, 0, 0, sent, 0};
  if (!l.send(end, "END")) return false;
  rte_mbuf* m = await(l, Kind::end_ack, 0, l.timeout_s, false, "waiting for the server's counts");
  if (!m) return false;
  *ack = header_of(m);
  rte_pktmbuf_free(m);
  return true;
}

int run_client(Link& l, const Options& o) {
  if (!client_hello(l, o)) return 1;
  Hdr ack{};
  if (o.mode == Mode::lat) {
    std::vector<std::uint64_t> rtt;
    rtt.reserve(o.iters);
    std::uint64_t bad = 0;
    const double c0 = cpu_s();
    const std::uint64_t t_start = rte_rdtsc();
    for (std::uint64_t i = 0; i < o.warmup + o.iters; ++i) {
      Hdr h{kMagic, Kind::ping, o.mode, 0, 0, o.size, 0, i, 0};
      rte_mbuf* m = l.frame(h, o.size);
      if (!m) return 1;
      const std::uint64_t t0 = rte_rdtsc();
      if (!l.tx_all(&m, 1, "sending a ping")) return 1;
      rte_mbuf* e = await(l, Kind::ping, i, o.timeout_s, false, "waiting for the echo");
      const std::uint64_t t1 = rte_rdtsc();
      if (!e) return 1;
      // The echo must be the frame sent: length and payload (bsize bugs corrupt them).
      const auto* p = rte_pktmbuf_mtod(e, const std::uint8_t*);
      const std::uint32_t off = kEth + sizeof(Hdr);
      if (e->pkt_len != o.size || e->nb_segs != 1 ||
          std::memcmp(p + off, l.tmpl + off, o.size - off) != 0)
        ++bad;
      rte_pktmbuf_free(e);
      if (i >= o.warmup) rtt.push_back(t1 - t0);
    }
    const double secs = static_cast<double>(rte_rdtsc() - t_start) / static_cast<double>(l.hz);
    const double cpu = cpu_s() - c0;
    const bool ended = client_end(l, o.warmup + o.iters, &ack);
    std::sort(rtt.begin(), rtt.end());
    if (bad) l.fail("corrupt", "echoed frames differ from what was sent");
    std::printf(
        "RESULT memif lat role=client size=%u p50_us=%.2f p99_us=%.2f iters=%llu "
        "min_us=%.2f max_us=%.2f corrupt=%llu secs=%.4f cpu_s=%.3f error=%s\n",
        o.size, pct_us(rtt, 0.5, l.hz), pct_us(rtt, 0.99, l.hz),
        static_cast<unsigned long long>(o.iters), pct_us(rtt, 0, l.hz), pct_us(rtt, 1, l.hz),
        static_cast<unsigned long long>(bad), secs, cpu, l.error);
    return ended && bad == 0 ? 0 : 1;
  }
  // bw. The payload is the pool's (primed in main), written once as testpmd's txonly does:
  // each frame costs a header write here and memif's copies, nothing else of ours.
  rte_mbuf* m[kBurst];
  std::uint64_t sent = 0;
  const double c0 = cpu_s();
  const std::uint64_t t0 = rte_rdtsc(), end = t0 + o.seconds * l.hz;
  bool ok = true;
  while (ok && !g_stop && rte_rdtsc() < end) {
    if (rte_pktmbuf_alloc_bulk(l.pool, m, kBurst) != 0) {
      ok = l.fail("no_mbuf", "mbuf pool empty");
      break;
    }
    for (std::uint16_t i = 0; i < kBurst; ++i) {
      m[i]->data_len = static_cast<std::uint16_t>(o.size);
      m[i]->pkt_len = o.size;
      Hdr h{kMagic, Kind::data, o.mode, 0, 0, o.size, 0, sent + i, 0};
      auto* p = rte_pktmbuf_mtod(m[i], std::uint8_t*);
      std::memcpy(p, l.tmpl, kEth);
      std::memcpy(p + kEth, &h, sizeof h);
    }
    ok = l.tx_all(m, kBurst, "transmitting");
    if (ok) sent += kBurst;
  }
  const double secs = static_cast<double>(rte_rdtsc() - t0) / static_cast<double>(l.hz);
  const double cpu = cpu_s() - c0;
  if (g_stop) ok = l.fail("interrupted", "interrupted by a signal");
  ok = ok && client_end(l, sent, &ack);
  std::printf(
      "RESULT memif bw role=client size=%u frames_sent=%llu frames_received=%llu secs=%.4f "
      "tx_mbps=%.1f cpu_s=%.3f error=%s\n",
      o.size, static_cast<unsigned long long>(sent), static_cast<unsigned long long>(ack.seq), secs,
      secs > 0 ? static_cast<double>(sent) * o.size / secs / 1e6 : 0.0, cpu, l.error);
  return ok ? 0 : 1;
}

int run_server(Link& l, const Options& o) {
  rte_mbuf* m = await(l, Kind::hello, 0, o.timeout_s, true, "waiting for the client's HELLO");
  if (!m) return 1;
  const Hdr want = hello_of(o), got = header_of(m);
  rte_pktmbuf_free(m);
  Hdr answer{kMagic, Kind::hello_ack, o.mode, 0, 0, o.size, 0, 0, 0};
  if (got.mode != want.mode || got.size != want.size || got.arg != want.arg) {
    answer.status = 1;
    l.send(answer, "HELLO answer");
    l.fail("mismatch", std::string("the client asks for ") +
                           (got.mode == Mode::lat ? "lat" : "bw") +
                           " size=" + std::to_string(got.size) + " (" + std::to_string(got.arg) +
                           " iterations or seconds): not what this server was started for");
    return 1;
  }
  if (!l.send(answer, "HELLO answer")) return 1;

  std::uint64_t frames = 0, octets = 0, bad = 0, gaps = 0, next = 0, t_first = 0;
  double c_first = 0;
  bool done = false;
  rte_mbuf* in[64];
  rte_mbuf* out[64];
  rte_mbuf* drop[64];
  Wait w(l, o.timeout_s, o.mode == Mode::lat ? "waiting for pings" : "receiving");
  while (!done) {
    const std::uint16_t n = rte_eth_rx_burst(l.port, 0, in, 64);
    if (n == 0) {
      if (!w.ok()) break;
      continue;
    }
    w.reset();
    std::uint16_t n_out = 0, n_drop = 0;
    for (std::uint16_t i = 0; i < n; ++i) {
      const Hdr h = header_of(in[i]);
      if (h.magic != kMagic) {
        ++bad;
        drop[n_drop++] = in[i];
      } else if (h.kind == Kind::data || h.kind == Kind::ping) {
        if (frames++ == 0) {  // the measured interval starts here
          t_first = rte_rdtsc();
          c_first = cpu_s();
        }
        octets += in[i]->pkt_len;
        // Length and last 8 octets (one cache line more): a frame cut or mangled by memif's
        // chained descriptors shows here (MACHINE-NOTES.md).
        bad += in[i]->pkt_len != o.size || in[i]->nb_segs != 1 ||
               std::memcmp(rte_pktmbuf_mtod_offset(in[i], std::uint8_t*, o.size - 8),
                           l.tmpl + o.size - 8, 8) != 0;
        gaps += h.seq != next;
        next = h.seq + 1;
        if (h.kind == Kind::data) {
          drop[n_drop++] = in[i];
          continue;
        }
        std::uint8_t* e = rte_pktmbuf_mtod(in[i], std::uint8_t*);  // echo: swap the MACs
        std::uint8_t mac[6];
        std::memcpy(mac, e, 6);
        std::memcpy(e, e + 6, 6);
        std::memcpy(e + 6, mac, 6);
        out[n_out++] = in[i];
      } else {
        if (h.kind == Kind::end) done = true;
        if (h.kind == Kind::hello) l.send(answer, "HELLO answer");  // a repeated HELLO
        drop[n_drop++] = in[i];
      }
    }
    rte_pktmbuf_free_bulk(drop, n_drop);
    if (n_out && !l.tx_all(out, n_out, "echoing")) break;
  }
  const double secs =
      t_first ? static_cast<double>(rte_rdtsc() - t_first) / static_cast<double>(l.hz) : 0;
  const double cpu = t_first ? cpu_s() - c_first : 0;
  // The counts go back with END's answer; then this side stops polling for good.
  if (done)
    done =
        l.send(Hdr{kMagic, Kind::end_ack, o.mode, 0, 0, o.size, 0, frames, octets}, "END answer");
  if (o.mode == Mode::lat) {
    std::printf("RESULT memif lat role=server size=%u frames=%llu secs=%.4f cpu_s=%.3f error=%s\n",
                o.size, static_cast<unsigned long long>(frames), secs, cpu, l.error);
  } else {
    std::printf(
        "RESULT memif bw role=server size=%u mbps=%.1f mpps=%.3f secs=%.4f frames=%llu "
        "octets=%llu bad=%llu gaps=%llu cpu_s=%.3f error=%s\n",
        o.size, secs > 0 ? static_cast<double>(octets) / secs / 1e6 : 0.0,
        secs > 0 ? static_cast<double>(frames) / secs / 1e6 : 0.0, secs,
        static_cast<unsigned long long>(frames), static_cast<unsigned long long>(octets),
        static_cast<unsigned long long>(bad), static_cast<unsigned long long>(gaps), cpu, l.error);
  }
  return done && bad == 0 && gaps == 0 ? 0 : 1;
}

// A socket file left by a crashed server makes memif fail with "Address already in use".
// Remove it only when nobody accepts on it.
bool clear_stale_socket(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return true;
  if (!S_ISSOCK(st.st_mode)) {
    std::fprintf(stderr, "bench_memif_link server: %s exists and is not a socket\n", path.c_str());
    return false;
  }
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
  const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET, 0);
  const bool live = fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  if (fd >= 0) ::close(fd);
  if (live) {
    std::fprintf(stderr, "bench_memif_link server: a server already listens on %s\n", path.c_str());
    return false;
  }
  std::fprintf(stderr, "bench_memif_link server: removing stale socket %s\n", path.c_str());
  return ::unlink(path.c_str()) == 0;
}

bool wait_file(const std::string& path, unsigned timeout_s) {
  for (unsigned i = 0; i < timeout_s * 100 && !g_stop; ++i) {
    if (::access(path.c_str(), F_OK) == 0) return true;
    ::usleep(10'000);
  }
  return false;
}

bool start_port(Link& l, const Options& o) {
  const std::uint32_t room = RTE_PKTMBUF_HEADROOM + std::max<std::uint32_t>(o.size, 2048);
  l.pool = rte_pktmbuf_pool_create("memif_link", kPoolMbufs, 256, 0,
                                   static_cast<std::uint16_t>(room), SOCKET_ID_ANY);
  if (!l.pool) return l.fail("setup", "rte_pktmbuf_pool_create failed");
  rte_eth_conf conf{};
  std::uint16_t nrx = 1024, ntx = 1024;
  if (rte_eth_dev_configure(l.port, 1, 1, &conf) != 0 ||
      rte_eth_dev_adjust_nb_rx_tx_desc(l.port, &nrx, &ntx) != 0 ||
      rte_eth_rx_queue_setup(l.port, 0, nrx, SOCKET_ID_ANY, nullptr, l.pool) != 0 ||
      rte_eth_tx_queue_setup(l.port, 0, ntx, SOCKET_ID_ANY, nullptr) != 0 ||
      rte_eth_dev_start(l.port) != 0)
    return l.fail("setup", "port set-up failed");
  // The frame every test sends: to the peer's (unknown, unchecked) address, from ours.
  rte_ether_addr mac{};
  rte_eth_macaddr_get(l.port, &mac);
  const std::uint8_t dst[6] = {0x02, 0, 0, 0, 0, static_cast<std::uint8_t>(o.server ? 2 : 1)};
  std::memcpy(l.tmpl, dst, 6);
  std::memcpy(l.tmpl + 6, mac.addr_bytes, 6);
  l.tmpl[12] = kEtherType >> 8;
  l.tmpl[13] = kEtherType & 0xff;
  for (std::uint32_t i = kEth + sizeof(Hdr); i < kMaxFrame; ++i)
    l.tmpl[i] = static_cast<std::uint8_t>(i * 131 + 7);
  // Touch the pool's memory once (no page faults, no shared zero page in a test). The
  // client's mbufs get the test frame (see run_client's bw); the server's a filler, so a
  // frame memif did not copy completely does not pass the receiver's checks.
  std::vector<rte_mbuf*> all;
  for (rte_mbuf* m; (m = rte_pktmbuf_alloc(l.pool)) != nullptr;) {
    auto* p = rte_pktmbuf_mtod(m, std::uint8_t*);
    if (o.server) {
      std::memset(p, 0xA5, o.size);
    } else {
      std::memcpy(p, l.tmpl, o.size);
    }
    all.push_back(m);
  }
  for (rte_mbuf* m : all) rte_pktmbuf_free(m);

  for (unsigned ms = 0; !l.up(); ++ms) {
    if (g_stop) return l.fail("interrupted", "interrupted by a signal");
    if (ms >= o.timeout_s * 1000)
      return l.fail("timeout", "link not up within " + std::to_string(o.timeout_s) + " s on " +
                                   o.socket + (o.server ? " (no client?)" : " (no server?)"));
    ::usleep(1000);
  }
  return true;
}

std::uint32_t num(const char* v) {
  return static_cast<std::uint32_t>(std::strtoul(v, nullptr, 10));
}

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: bench_memif_link --role server|client --socket PATH [--bsize N] "
               "[--rsize N]\n"
               "                        [--core N] [--prefix P] [--timeout S] MODE\n"
               "  MODE: lat --size S --iters N [--warmup N] | bw --size S --seconds T\n"
               "  S: Ethernet frame octets, %u..%u\n",
               kMinFrame, kMaxFrame);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  bool role = false, mode = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "lat" || a == "bw") {
      o.mode = a == "lat" ? Mode::lat : Mode::bw;
      mode = true;
      continue;
    }
    if (i + 1 >= argc) usage();
    const char* v = argv[++i];
    if (a == "--role") {
      if (std::strcmp(v, "server") != 0 && std::strcmp(v, "client") != 0) usage();
      o.server = std::strcmp(v, "server") == 0;
      role = true;
    } else if (a == "--socket") {
      o.socket = v;
    } else if (a == "--prefix") {
      o.prefix = v;
    } else if (a == "--bsize") {
      o.bsize = num(v);
    } else if (a == "--rsize") {
      o.rsize = num(v);
    } else if (a == "--core") {
      o.core = num(v);
    } else if (a == "--timeout") {
      o.timeout_s = num(v);
    } else if (a == "--size") {
      o.size = num(v);
    } else if (a == "--iters") {
      o.iters = std::strtoull(v, nullptr, 10);
    } else if (a == "--warmup") {
      o.warmup = std::strtoull(v, nullptr, 10);
    } else if (a == "--seconds") {
      o.seconds = num(v);
    } else {
      usage();
    }
  }
  if (!role || !mode || o.socket.empty() || o.size < kMinFrame || o.size > kMaxFrame ||
      o.iters == 0 || o.seconds == 0 || o.timeout_s == 0)
    usage();
  // The first use of a memif ring slot page-faults (memfd pages): the warm-up passes every
  // slot once before the clock starts.
  if (o.warmup == ~0ull) o.warmup = (1ull << o.rsize) + o.iters / 10;
  // memif 22.11 corrupts frames longer than bsize (MACHINE-NOTES.md): one buffer per frame.
  if (o.bsize == 0) o.bsize = (std::max<std::uint32_t>(2048, o.size + 128) + 1023) / 1024 * 1024;
  if (o.bsize < o.size) {
    std::fprintf(stderr, "bench_memif_link: --bsize %u is below the frame size %u\n", o.bsize,
                 o.size);
    std::exit(2);
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  g_role = o.server ? "server" : "client";
  std::signal(SIGINT, [](int) { g_stop = 1; });
  std::signal(SIGTERM, [](int) { g_stop = 1; });
  std::signal(SIGSEGV, on_fault);
  std::signal(SIGBUS, on_fault);
  if (o.server && !clear_stale_socket(o.socket)) return 1;
  // A memif client whose socket is not there yet does not retry: wait for the server's.
  if (!o.server && !wait_file(o.socket, o.timeout_s)) {
    std::fprintf(stderr, "bench_memif_link client: no %s after %u s (no server?)\n",
                 o.socket.c_str(), o.timeout_s);
    return 1;
  }
  esock::tcp::dpdk::EalOptions eo;
  eo.core = o.core;
  eo.file_prefix = o.prefix.empty()
                       ? std::string("memif-link-") + g_role + "-" + std::to_string(::getpid())
                       : o.prefix;
  eo.vdevs.push_back(std::string("net_memif0,role=") + g_role + ",socket=" + o.socket +
                     ",socket-abstract=no,bsize=" + std::to_string(o.bsize) +
                     ",rsize=" + std::to_string(o.rsize));
  std::string err;
  auto eal = esock::tcp::dpdk::Eal::init(eo, &err);
  if (!eal) {
    std::fprintf(stderr, "bench_memif_link %s: %s\n", g_role, err.c_str());
    return 1;
  }
  auto l = std::make_unique<Link>();
  l->hz = rte_get_tsc_hz();
  l->timeout_s = o.timeout_s;
  const int port = esock::tcp::dpdk::Eal::find_port("net_memif0");
  int rc = 1;
  if (port < 0) {
    std::fprintf(stderr, "bench_memif_link %s: no net_memif0 port\n", g_role);
  } else {
    l->port = static_cast<std::uint16_t>(port);
    if (start_port(*l, o)) {
      g_fault_port = port;
      if (sigsetjmp(g_fault_jmp, 1) == 0) {
        rc = o.server ? run_server(*l, o) : run_client(*l, o);
        g_fault_port = -1;
      } else {
        // The peer vanished under a burst (on_fault). memif's interrupt thread may still be
        // tearing the port down: leave DPDK alone, clean up the files and go.
        std::fprintf(stderr,
                     "bench_memif_link %s: the peer disconnected while this side polled "
                     "(memif 22.11 unmaps the rings under a running burst)\n",
                     g_role);
        std::error_code ec;
        std::filesystem::remove_all(eal->runtime_dir(), ec);
        (void)eal.release();
        if (o.server) ::unlink(o.socket.c_str());
        return 1;
      }
    }
    std::fflush(stdout);
    if (l->failed()) std::fprintf(stderr, "bench_memif_link %s: %s\n", g_role, l->why.c_str());
    // The client closes first (it has the server's last frame); the server, no longer
    // polling, waits up to 1 s for that before closing its end.
    if (o.server)
      for (int i = 0; i < 1000 && l->up() && !g_stop; ++i) ::usleep(1000);
    // memif marks the link down first and then finishes the disconnect (closes, frees the
    // regions) in EAL's interrupt thread; closing the port before that is done frees the
    // same memory twice ("EAL: Error: Invalid memory").
    if (!l->up()) ::usleep(20'000);
    rte_eth_dev_stop(l->port);
    rte_eth_dev_close(l->port);
  }
  if (l->pool) rte_mempool_free(l->pool);
  eal.reset();  // rte_eal_cleanup and the runtime directory
  if (o.server) ::unlink(o.socket.c_str());
  return rc;
}
