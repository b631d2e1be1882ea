// Flows spread over the queues of one port, one lib/tcp stack per queue, each in its own
// thread (issue 18, "Every core"): two processes joined by a multi-queue net_memif link.
//
//   tcp_rss server|client --vdev DEVARGS --ip A.B.C.D [--peer A.B.C.D] --port P
//                         --conns K --bytes N [--queues Q] [--core C]
//
// Connection k of the client goes to stack k % Q, which opens it from an ephemeral port
// whose flow (flow_hash.h, the symmetric Toeplitz hash) queue k % Q carries; it sends an
// 8-octet header (k) and N octets of a pattern of k and the offset, then its FIN. The
// server's stack of the queue the SYN came in on accepts it, checks every octet, and
// answers with a 24-octet verdict (k, octets received, octets wrong) before closing. Each
// process prints one line per queue ("<role> queue q: conns C bytes B wrong W flows F")
// and exits 0 only when all K verdicts are right; a flow that arrived on the wrong queue
// (its hash names another) counts as wrong too.
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/steady_clock.h"
#include "tcp/dev/idle_backoff.h"
#include "tcp/dpdk/dpdk_device.h"
#include "tcp/dpdk/eal.h"
#include "tcp/dpdk/flow_hash.h"
#include "tcp/stack/stack.h"

namespace {

using namespace esock;
using namespace esock::tcp;
using namespace std::chrono_literals;

struct Options {
  bool server = false;
  std::string vdev;
  Ipv4Addr ip, peer;
  std::uint16_t port = 0;
  unsigned conns = 64, queues = 2, core = 0;
  std::uint64_t bytes = 1 << 20;
};

std::uint8_t pattern(std::uint64_t id, std::uint64_t off) {
  return static_cast<std::uint8_t>(id * 131 + off * 7 + (off >> 9));
}

void put64(std::uint8_t* p, std::uint64_t v) {
  std::memcpy(p, &v, 8);
}
std::uint64_t get64(const std::uint8_t* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

struct QueueResult {
  std::uint64_t conns = 0, bytes = 0, wrong = 0, misplaced = 0;
};

// One connection's side of the exchange, for either role.
struct Flow {
  Connection* c = nullptr;
  std::uint64_t id = 0;
  std::uint8_t head[8] = {};
  std::uint8_t verdict[24] = {};  // the client's: the server's answer
  std::size_t head_got = 0;
  std::uint64_t sent = 0, got = 0, wrong = 0;
  bool up = false, fin_sent = false, done = false;
};

std::atomic<unsigned> finished{0};  // connections whose verdict went out (server) or came
std::atomic<bool> failed{false};

void server_queue(Stack& st, unsigned q, const Options& o, QueueResult* r) {
  SteadyClock clock;
  IdleBackoff backoff;
  int err = 0;
  Listener* l = st.listen(o.port, 4096, &err);
  if (l == nullptr) {
    std::fprintf(stderr, "server queue %u: listen: %s\n", q, std::strerror(err));
    failed = true;
    return;
  }
  std::vector<std::unique_ptr<Flow>> flows;
  std::uint8_t buf[16384];
  while (finished.load() < o.conns && !failed.load()) {
    bool work = st.poll(clock.now());
    while (Connection* c = st.accept(l)) {
      auto f = std::make_unique<Flow>();
      f->c = c;
      c->set_nodelay(true);
      if (dpdk::flow_queue(c->tuple(), o.queues) != q) ++r->misplaced;
      flows.push_back(std::move(f));
      work = true;
    }
    for (auto& f : flows) {
      if (f->done) continue;
      for (std::size_t n; (n = f->c->recv(mut_bytes(buf, sizeof buf))) > 0;) {
        work = true;
        std::size_t i = 0;
        while (f->head_got < 8 && i < n) f->head[f->head_got++] = buf[i++];
        if (f->head_got == 8) f->id = get64(f->head);
        for (; i < n; ++i, ++f->got)
          if (buf[i] != pattern(f->id, f->got)) ++f->wrong;
      }
      if (f->c->peer_closed() && !f->fin_sent) {
        std::uint8_t v[24];
        put64(v, f->id);
        put64(v + 8, f->got);
        put64(v + 16, f->wrong);
        if (f->c->send_space() >= sizeof v && f->c->send(bytes_view(v, sizeof v)) == sizeof v) {
          st.close(f->c);
          f->fin_sent = f->done = true;
          ++r->conns;
          r->bytes += f->got;
          r->wrong += f->wrong;
          finished.fetch_add(1);
          work = true;
        }
      }
    }
    backoff.poll_done(work);
  }
  // The verdicts and FINs still have to leave: a short drain.
  const Instant end = clock.now() + 2s;
  while (clock.now() < end && st.unsettled() > 0) backoff.poll_done(st.poll(clock.now()));
}

void client_queue(Stack& st, unsigned q, const Options& o, QueueResult* r) {
  SteadyClock clock;
  IdleBackoff backoff;
  std::vector<std::unique_ptr<Flow>> flows;
  for (unsigned k = q; k < o.conns; k += o.queues) {
    auto f = std::make_unique<Flow>();
    f->id = k;
    flows.push_back(std::move(f));
  }
  std::uint8_t buf[16384];
  std::size_t opened = 0, done = 0;
  const Instant deadline = clock.now() + 120s;
  while (done < flows.size() && !failed.load()) {
    const Instant now = clock.now();
    if (now > deadline) {
      std::fprintf(stderr, "client queue %u: %zu of %zu done at the deadline\n", q, done,
                   flows.size());
      failed = true;
      return;
    }
    bool work = st.poll(now);
    // At most 32 connections in flight per queue.
    while (opened < flows.size() && opened - done < 32) {
      int err = 0;
      Flow& f = *flows[opened];
      f.c = st.connect(o.peer, o.port, &err);
      if (f.c == nullptr) {
        std::fprintf(stderr, "client queue %u: connect: %s\n", q, std::strerror(err));
        failed = true;
        return;
      }
      f.c->set_nodelay(true);
      if (dpdk::flow_queue(f.c->tuple(), o.queues) != q) ++r->misplaced;
      put64(f.head, f.id);
      ++opened;
      work = true;
    }
    for (std::size_t i = 0; i < opened; ++i) {
      Flow& f = *flows[i];
      if (f.done) continue;
      if (!f.up && !f.c->established()) continue;  // (then FIN-WAIT once ours is sent)
      f.up = true;
      const std::uint64_t total = 8 + o.bytes;
      while (f.sent < total && f.c->send_space() > 0) {
        std::size_t n = 0;
        for (; n < sizeof buf && f.sent + n < total; ++n) {
          const std::uint64_t off = f.sent + n;
          buf[n] = off < 8 ? f.head[off] : pattern(f.id, off - 8);
        }
        const std::size_t took = f.c->send(bytes_view(buf, n));
        if (took == 0) break;
        f.sent += took;
        work = true;
      }
      if (f.sent == total && !f.fin_sent) {
        f.c->shutdown_send();
        f.fin_sent = true;
      }
      std::uint8_t* v = f.verdict;
      while (f.got < sizeof f.verdict) {
        const std::size_t n = f.c->recv(mut_bytes(v + f.got, sizeof f.verdict - f.got));
        if (n == 0) break;
        f.got += n;
        work = true;
        if (f.got == sizeof f.verdict) {
          if (get64(v) != f.id || get64(v + 8) != o.bytes || get64(v + 16) != 0) ++r->wrong;
          r->bytes += get64(v + 8);
          ++r->conns;
          f.done = true;
          ++done;
          st.close(f.c);
          finished.fetch_add(1);
        }
      }
      if (!f.done && f.c->error() != 0) {
        std::fprintf(stderr, "client queue %u: connection %" PRIu64 ": %s\n", q, f.id,
                     std::strerror(f.c->error()));
        failed = true;
        return;
      }
    }
    backoff.poll_done(work);
  }
  const Instant end = clock.now() + 2s;
  while (clock.now() < end && st.unsettled() > 0) backoff.poll_done(st.poll(clock.now()));
}

bool parse(int argc, char** argv, Options* o) {
  if (argc < 2) return false;
  o->server = std::strcmp(argv[1], "server") == 0;
  if (!o->server && std::strcmp(argv[1], "client") != 0) return false;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--vdev")
      o->vdev = v;
    else if (k == "--ip") {
      if (!Ipv4Addr::parse(v, &o->ip)) return false;
    } else if (k == "--peer") {
      if (!Ipv4Addr::parse(v, &o->peer)) return false;
    } else if (k == "--port")
      o->port = static_cast<std::uint16_t>(std::stoul(v));
    else if (k == "--conns")
      o->conns = static_cast<unsigned>(std::stoul(v));
    else if (k == "--bytes")
      o->bytes = std::stoull(v);
    else if (k == "--queues")
      o->queues = static_cast<unsigned>(std::stoul(v));
    else if (k == "--core")
      o->core = static_cast<unsigned>(std::stoul(v));
    else
      return false;
  }
  return !o->vdev.empty() && o->port != 0 && o->queues >= 1 && (o->server || o->peer.v != 0);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, &o)) {
    std::fprintf(stderr,
                 "usage: tcp_rss server|client --vdev DEVARGS --ip A.B.C.D [--peer A.B.C.D] "
                 "--port P --conns K --bytes N [--queues Q] [--core C]\n");
    return 2;
  }
  const char* role = o.server ? "server" : "client";
  std::string err;
  dpdk::EalOptions eo;
  eo.core = o.core;
  eo.memory_mb = 512;
  auto eal = dpdk::Eal::init(eo, &err);
  if (!eal) {
    std::fprintf(stderr, "%s: EAL: %s\n", role, err.c_str());
    return 1;
  }
  const int port = eal->add_vdev(o.vdev, &err);
  if (port < 0) {
    std::fprintf(stderr, "%s: %s\n", role, err.c_str());
    return 1;
  }
  dpdk::DpdkDeviceConfig dc;
  dc.queues = static_cast<std::uint16_t>(o.queues);
  auto devs = dpdk::DpdkDevice::open_queues(static_cast<std::uint16_t>(port), dc, &err);
  if (devs.empty()) {
    std::fprintf(stderr, "%s: %s\n", role, err.c_str());
    return 1;
  }
  if (!devs[0]->wait_link_up(20s)) {
    std::fprintf(stderr, "%s: the link did not come up\n", role);
    return 1;
  }
  std::vector<std::unique_ptr<Stack>> stacks;
  SteadyClock clock;
  for (unsigned q = 0; q < o.queues; ++q) {
    StackConfig sc;
    sc.iface.ip = o.ip;
    sc.owns_flow = [q, n = o.queues](const FourTuple& t) { return dpdk::flow_queue(t, n) == q; };
    stacks.push_back(std::make_unique<Stack>(*devs[q], sc, clock.now()));
  }
  std::vector<QueueResult> results(o.queues);
  std::vector<std::thread> threads;
  const Instant t0 = clock.now();
  for (unsigned q = 0; q < o.queues; ++q)
    threads.emplace_back(
        [&, q] { (o.server ? server_queue : client_queue)(*stacks[q], q, o, &results[q]); });
  for (auto& t : threads) t.join();
  const double secs = static_cast<double>((clock.now() - t0).count()) / 1e9;
  std::uint64_t conns = 0, wrong = 0, moved = 0;
  for (unsigned q = 0; q < o.queues; ++q) {
    const QueueResult& r = results[q];
    const DeviceStats ds = devs[q]->stats();
    std::printf("%s queue %u: conns %" PRIu64 " bytes %" PRIu64 " wrong %" PRIu64
                " misplaced %" PRIu64 " rx_frames %" PRIu64 "\n",
                role, q, r.conns, r.bytes, r.wrong, r.misplaced, ds.rx_frames);
    conns += r.conns;
    wrong += r.wrong + r.misplaced;
    moved += r.bytes;
  }
  // (The server's time includes its wait for the client; the client's is the transfer.)
  std::printf("%s: %" PRIu64 " octets in %.3f s, %.0f MB/s over %u queue(s)\n", role, moved, secs,
              static_cast<double>(moved) / secs / 1e6, o.queues);
  stacks.clear();
  devs.clear();
  const bool ok = !failed.load() && conns == o.conns && wrong == 0;
  std::printf("%s: %s, %" PRIu64 " of %u connections\n", role, ok ? "ok" : "FAILED", conns,
              o.conns);
  return ok ? 0 : 1;
}
