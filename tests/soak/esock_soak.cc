// The soak (issue 20): iWARP connections opened and closed without pause for a given wall
// time, every message verified, over a damaged link, with memory sampled, to show that
// nothing accumulates: heap, process RSS, DPDK mbufs in use, TCBs and STags.
//
// Two lib/tcp stacks in this process on two DPDK net_ring ports wired back to back (real
// mempools and mbufs, --no-huge), each behind a FaultInjector (loss, duplication,
// reordering, corruption that TCP's checksum catches, and a rarer corruption with the
// checksums recomputed, which only MPA's CRC32c catches: that connection ends with a
// Terminate). Time is a manual clock moved 20 us per round, so a run is reproducible from
// its seed. `slots` connections live at once; each connects (TCP + MPA), the client posts
// Sends of random sizes (1 octet to 64 KiB, a pattern of (connection, message)) and an
// RDMA Write, the server verifies every octet it receives and answers with an RDMA Read of
// the written range it verifies as well, then both close and their regions are
// deregistered; a fresh connection takes the slot.
//
//   esock_soak [--seconds N] [--slots N] [--seed N] [--csv FILE]
//
// Prints one line per sample (every second) and a summary; --csv writes the samples for
// tests/soak/plot.py. Exit 1 when an octet arrived wrong, a connection stalled (no
// progress for 120 s of simulated time), or once every connection has closed and TIME-WAIT
// is over something is left: TCBs, STags, mbufs in use beyond the start, or more than
// 1 MiB of heap beyond what the process held before the soak began. While it runs, the
// heap follows the connections in TIME-WAIT (2 MSL = 60 s of simulated time after each
// close, about 4 KiB each), so it levels off once the run is past that.
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "esock/utcp/endpoint.h"
#include "tcp/dev/fault_injector.h"
#include "tcp/dpdk/dpdk_device.h"
#include "tcp/dpdk/eal.h"
#include "tcp/stack/stack.h"

using namespace esock;
using namespace std::chrono_literals;

namespace {

const tcp::Ipv4Addr ip_a = tcp::Ipv4Addr::from_octets(10, 77, 0, 1);
const tcp::Ipv4Addr ip_b = tcp::Ipv4Addr::from_octets(10, 77, 0, 2);
constexpr std::uint16_t port = 4791;
constexpr std::size_t max_msg = 64 * 1024;
constexpr std::size_t recvs = 4;              // receives the server keeps posted
constexpr std::size_t write_len = 96 * 1024;  // the RDMA Write, read back

std::uint8_t pattern(std::uint64_t conn, std::uint64_t msg, std::size_t i) {
  const std::uint64_t x = (conn * 1000003 + msg * 7919 + i) * 0x9e3779b97f4a7c15ull;
  return static_cast<std::uint8_t>(x >> 56);
}

struct Args {
  double seconds = 60;
  std::size_t slots = 8;
  std::uint64_t seed = 1;
  std::string csv;
};

struct Totals {
  std::uint64_t opened = 0, completed = 0, failed_crc_or_proto = 0, failed_other = 0;
  std::uint64_t messages = 0, octets = 0, wrong = 0, stalled = 0;
};

// A registered buffer, deregistered when it goes.
struct Region {
  Region(rnic::Context& c, std::size_t len, std::uint32_t access) : ctx(c), mem(len) {
    stag = ctx.reg_mr(mem.data(), len, access);
  }
  ~Region() {
    if (stag != 0) ctx.dereg_mr(stag);
  }
  ddp::Sge sge(std::size_t len) { return {mem.data(), static_cast<std::uint32_t>(len), stag}; }
  rnic::Context& ctx;
  std::vector<std::uint8_t> mem;
  ddp::stag_t stag = 0;
};

// One connection's life, both ends.
struct Slot {
  enum class Phase { idle, connecting, running, reading, closing };
  Phase phase = Phase::idle;
  std::uint64_t id = 0;
  std::unique_ptr<utcp::Endpoint> client, server;
  std::vector<std::unique_ptr<Region>> tx, rx;
  std::unique_ptr<Region> target, readback, written;
  std::vector<std::size_t> sizes;  // per message
  std::size_t sent = 0, sends_done = 0, received = 0;
  bool write_done = false;
  Instant last_progress;
};

class Soak {
 public:
  Soak(tcp::Device& da, tcp::Device& db, const Args& a) : args_(a), rng_(a.seed) {
    tcp::FaultConfig fa, fb;
    fa.seed = a.seed * 2 + 1;
    fb.seed = a.seed * 2 + 2;
    for (tcp::FaultSpec* s : {&fa.tx, &fb.tx}) {
      s->loss = 0.01;
      s->duplicate = 0.005;
      s->reorder = 0.01;
      s->reorder_frames = 3;
      s->corrupt = 0.002;  // TCP's checksum catches it: a loss
    }
    fb.rx.corrupt = 0.00002;  // checksums recomputed: only MPA's CRC catches it
    fb.rx.corrupt_keeps_checksum = true;
    fb.rx.corrupt_payload_only = true;  // not the TCP options: see FaultSpec
    inj_a_ = std::make_unique<tcp::FaultInjector>(da, clock_, fa);
    inj_b_ = std::make_unique<tcp::FaultInjector>(db, clock_, fb);
    tcp::StackConfig ca;
    ca.iface.ip = ip_a;
    ca.iface.prefix_len = 24;
    ca.isn_key = tcp::IsnGenerator::Key{static_cast<std::uint8_t>(a.seed), 1};
    tcp::StackConfig cb = ca;
    cb.iface.ip = ip_b;
    cb.isn_key = tcp::IsnGenerator::Key{static_cast<std::uint8_t>(a.seed), 2};
    sa_ = std::make_unique<tcp::Stack>(*inj_a_, ca, clock_.now());
    sb_ = std::make_unique<tcp::Stack>(*inj_b_, cb, clock_.now());
    int err = 0;
    listener_ = sb_->listen(port, 256, &err);
    slots_.resize(a.slots);
  }
  ~Soak() { slots_.clear(); }

  // One round: both stacks and every endpoint, then `step` of simulated time.
  void round(Duration step = 20us) {
    sa_->poll(clock_.now());
    sb_->poll(clock_.now());
    while (tcp::Connection* c = sb_->accept(listener_)) accepted_.push_back(c);
    for (Slot& s : slots_) drive(s);
    clock_.advance(step);
  }
  // Stops opening connections and runs until every slot is idle and TIME-WAIT is over.
  bool drain() {
    draining_ = true;
    const Instant end = clock_.now() + 600s;
    bool idle = false;
    while (clock_.now() < end) {
      round(idle ? 10ms : 20us);  // only TIME-WAIT left: let its 2 MSL pass quickly
      idle = true;
      for (const Slot& s : slots_) idle = idle && s.phase == Slot::Phase::idle;
      if (idle && sa_->connection_count() == 0 && sb_->connection_count() == 0) return true;
    }
    return false;
  }

  const Totals& totals() const { return t_; }
  std::size_t tcbs() const { return sa_->connection_count() + sb_->connection_count(); }
  std::size_t stags() { return ctx_a_.stags().live_regions() + ctx_b_.stags().live_regions(); }
  double sim_seconds() const { return static_cast<double>(clock_.now().ns) / 1e9; }
  const tcp::FaultInjector& inj_a() const { return *inj_a_; }
  const tcp::FaultInjector& inj_b() const { return *inj_b_; }

 private:
  void drive(Slot& s) {
    if (s.client) s.client->progress();
    if (s.server) s.server->progress();
    switch (s.phase) {
      case Slot::Phase::idle:
        if (!draining_) open(s);
        return;
      case Slot::Phase::connecting:
        connecting(s);
        break;
      case Slot::Phase::running:
      case Slot::Phase::reading:
        running(s);
        break;
      case Slot::Phase::closing:
        closing(s);
        break;
    }
    if (s.phase != Slot::Phase::idle && clock_.now() - s.last_progress > 120s) {
      std::fprintf(stderr, "connection %" PRIu64 " stalled in phase %d (client %d, server %d)\n",
                   s.id, static_cast<int>(s.phase),
                   s.client ? static_cast<int>(s.client->state()) : -1,
                   s.server ? static_cast<int>(s.server->state()) : -1);
      ++t_.stalled;
      describe(s);
      finish(s, false);
    }
  }

  // What a stalled connection was doing, for the report.
  void describe(Slot& s) {
    std::fprintf(stderr,
                 "  messages %zu: sent %zu, send completions %zu, received %zu; write done %d\n",
                 s.sizes.size(), s.sent, s.sends_done, s.received, s.write_done);
    for (utcp::Endpoint* e : {s.client.get(), s.server.get()}) {
      if (e == nullptr) continue;
      const tcp::TcbInfo i = e->tcp_connection()->tcb().info();
      const rnic::EngineStats& st = e->stats();
      std::fprintf(stderr,
                   "  %s: tcp %s una %u nxt %u max %u snd_wnd %u rcv_nxt %u rcv_wnd %u cwnd %u "
                   "unsent %zu rto %lld ms; fpdus tx %llu rx %llu placed early %llu pending %zu "
                   "qp tx pending %d\n",
                   e == s.client.get() ? "client" : "server", tcp::to_string(i.state), i.snd_una,
                   i.snd_nxt, i.snd_max, i.snd_wnd, i.rcv_nxt, i.rcv_wnd, i.cwnd,
                   e->tcp_connection()->tcb().unsent(),
                   static_cast<long long>(i.rto.count() / 1000000),
                   static_cast<unsigned long long>(st.fpdus_tx),
                   static_cast<unsigned long long>(st.fpdus_rx),
                   static_cast<unsigned long long>(st.fpdus_placed_early), e->placed_pending(),
                   e->engine().tx_pending());
      const tcp::TcbStats& ts = e->tcp_connection()->tcb().stats();
      std::fprintf(
          stderr,
          "    segs in %llu out %llu, retransmits %llu, rtos %llu, dup acks in %llu, "
          "ooo %llu placed by user %llu, challenge acks %llu; drops: %s\n",
          static_cast<unsigned long long>(ts.segs_in), static_cast<unsigned long long>(ts.segs_out),
          static_cast<unsigned long long>(ts.retransmits),
          static_cast<unsigned long long>(ts.rto_expirations),
          static_cast<unsigned long long>(ts.dup_acks_in),
          static_cast<unsigned long long>(ts.ooo_segments),
          static_cast<unsigned long long>(ts.ooo_placed_by_user),
          static_cast<unsigned long long>(ts.challenge_acks), tcp::to_string(ts.drops).c_str());
    }
  }

  void open(Slot& s) {
    s = Slot{};
    s.id = ++t_.opened;
    s.last_progress = clock_.now();
    int err = 0;
    utcp::Options o;
    s.client = utcp::Endpoint::connect(*sa_, ctx_a_, ip_b, port, o, &err);
    if (!s.client) {
      ++t_.failed_other;
      return;
    }
    std::uniform_int_distribution<std::size_t> count(1, 24), small(1, 2048), big(1, max_msg);
    const std::size_t n = count(rng_);
    for (std::size_t i = 0; i < n; ++i) s.sizes.push_back(i % 3 == 0 ? big(rng_) : small(rng_));
    s.phase = Slot::Phase::connecting;
  }

  void connecting(Slot& s) {
    if (!s.server) {
      // The accepted connection whose peer port is this client's.
      const std::uint16_t want = s.client->tcp_connection()->tcb().tuple().local_port;
      for (auto it = accepted_.begin(); it != accepted_.end(); ++it) {
        if ((*it)->tcb().tuple().remote_port != want) continue;
        s.server = utcp::Endpoint::accept(*sb_, *it, ctx_b_, utcp::Options{});
        s.server->hold_input(true);
        accepted_.erase(it);
        break;
      }
    }
    using St = utcp::Endpoint::State;
    if (s.client->state() == St::failed || (s.server && s.server->state() == St::failed))
      return finish(s, false);
    if (!s.server || s.client->state() != St::established || s.server->state() != St::established)
      return;
    for (std::size_t i = 0; i < recvs; ++i) {
      s.rx.push_back(std::make_unique<Region>(ctx_b_, max_msg, ddp::access_local_write));
      const ddp::Sge g = s.rx.back()->sge(max_msg);
      s.server->post_recv(i, {&g, 1});
    }
    s.target = std::make_unique<Region>(
        ctx_b_, write_len,
        ddp::access_local_write | ddp::access_remote_write | ddp::access_remote_read);
    s.server->hold_input(false);
    s.written = std::make_unique<Region>(ctx_a_, write_len, 0);
    for (std::size_t i = 0; i < write_len; ++i) s.written->mem[i] = pattern(s.id, 999, i);
    s.readback = std::make_unique<Region>(ctx_a_, write_len, ddp::access_local_write);
    for (std::size_t m = 0; m < s.sizes.size(); ++m) {
      s.tx.push_back(std::make_unique<Region>(ctx_a_, s.sizes[m], 0));
      for (std::size_t i = 0; i < s.sizes[m]; ++i) s.tx.back()->mem[i] = pattern(s.id, m, i);
    }
    s.phase = Slot::Phase::running;
    s.last_progress = clock_.now();
  }

  void running(Slot& s) {
    using St = utcp::Endpoint::State;
    if (s.client->state() != St::established || s.server->state() != St::established)
      return finish(s, false);
    // Sends, at most `recvs` ahead of what the server has taken (no receive, no Send).
    while (s.sent < s.sizes.size() && s.sent < s.received + recvs) {
      const ddp::Sge g = s.tx[s.sent]->sge(s.sizes[s.sent]);
      if (s.client->post_send(s.sent, {&g, 1}) != 0) break;
      ++s.sent;
    }
    ddp::Completion c[16];
    for (std::size_t n = s.server->poll_recv_cq(c); n > 0; n = s.server->poll_recv_cq(c)) {
      for (std::size_t k = 0; k < n; ++k) {
        if (c[k].status != ddp::Status::success) return finish(s, false);
        const std::size_t m = s.received++;
        Region& r = *s.rx[c[k].wr_id];
        bool ok = c[k].byte_len == s.sizes[m];
        for (std::size_t i = 0; ok && i < s.sizes[m]; ++i) ok = r.mem[i] == pattern(s.id, m, i);
        if (!ok) {
          std::fprintf(stderr, "connection %" PRIu64 " message %zu arrived wrong\n", s.id, m);
          ++t_.wrong;
        }
        ++t_.messages;
        t_.octets += s.sizes[m];
        const ddp::Sge g = r.sge(max_msg);
        s.server->post_recv(c[k].wr_id, {&g, 1});
        s.last_progress = clock_.now();
      }
    }
    for (std::size_t n = s.client->poll_send_cq(c); n > 0; n = s.client->poll_send_cq(c)) {
      for (std::size_t k = 0; k < n; ++k) {
        if (c[k].status != ddp::Status::success) return finish(s, false);
        if (c[k].opcode == ddp::Opcode::send) ++s.sends_done;
        if (c[k].opcode == ddp::Opcode::write) s.write_done = true;
        if (c[k].opcode == ddp::Opcode::read) {
          bool ok = std::memcmp(s.readback->mem.data(), s.written->mem.data(), write_len) == 0;
          ok = ok && std::memcmp(s.target->mem.data(), s.written->mem.data(), write_len) == 0;
          if (!ok) {
            std::fprintf(stderr, "connection %" PRIu64 " RDMA Write/Read arrived wrong\n", s.id);
            ++t_.wrong;
          }
          t_.octets += 2 * write_len;
          s.client->close();
          s.server->close();
          s.phase = Slot::Phase::closing;
          s.last_progress = clock_.now();
          return;
        }
        s.last_progress = clock_.now();
      }
    }
    if (s.phase == Slot::Phase::running && s.received == s.sizes.size() &&
        s.sends_done == s.sizes.size()) {
      // Then an RDMA Write into the server's region, and a Read of it back (which RDMAP
      // orders after the Write: RFC 5040 section 5.5).
      const ddp::Sge w = s.written->sge(write_len);
      const auto to = reinterpret_cast<std::uint64_t>(s.target->mem.data());
      const ddp::Sge r = s.readback->sge(write_len);
      if (s.client->post_write(100, {&w, 1}, s.target->stag, to) == 0 &&
          s.client->post_read(101, {&r, 1}, s.target->stag, to) == 0)
        s.phase = Slot::Phase::reading;
    }
  }

  void closing(Slot& s) {
    using St = utcp::Endpoint::State;
    const auto over = [](St st) { return st == St::closed || st == St::failed; };
    if (over(s.client->state()) && over(s.server->state())) finish(s, true);
  }

  void finish(Slot& s, bool ok) {
    if (ok) {
      ++t_.completed;
    } else {
      const std::string& why = s.client && s.client->state() == utcp::Endpoint::State::failed
                                   ? s.client->error()
                                   : (s.server ? s.server->error() : std::string());
      const bool expected = why.find("CRC") != std::string::npos ||
                            why.find("Terminate") != std::string::npos ||
                            why.find("MPA") != std::string::npos;
      ++(expected ? t_.failed_crc_or_proto : t_.failed_other);
      if (!expected && t_.failed_other <= 5)
        std::fprintf(stderr, "connection %" PRIu64 " failed: %s\n", s.id,
                     why.empty() ? "(no reason)" : why.c_str());
    }
    // Endpoints first (they release TCP, resetting what is still open), then the regions.
    s.client.reset();
    s.server.reset();
    s = Slot{};
  }

  Args args_;
  std::mt19937_64 rng_;
  ManualClock clock_;
  rnic::Context ctx_a_, ctx_b_;
  std::unique_ptr<tcp::FaultInjector> inj_a_, inj_b_;
  std::unique_ptr<tcp::Stack> sa_, sb_;
  tcp::Listener* listener_ = nullptr;
  std::vector<tcp::Connection*> accepted_;
  std::vector<Slot> slots_;
  Totals t_;
  bool draining_ = false;
};

std::size_t rss_kib() {
  std::ifstream f("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  f >> pages >> resident;
  return resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)) / 1024;
}

std::size_t heap_kib() {
  return mallinfo2().uordblks / 1024;
}

bool parse(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) return false;
    const char* v = argv[++i];
    if (k == "--seconds")
      a->seconds = std::stod(v);
    else if (k == "--slots")
      a->slots = std::stoul(v);
    else if (k == "--seed")
      a->seed = std::stoull(v);
    else if (k == "--csv")
      a->csv = v;
    else
      return false;
  }
  return a->slots > 0 && a->seconds > 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!parse(argc, argv, &args)) {
    std::fprintf(stderr, "usage: esock_soak [--seconds N] [--slots N] [--seed N] [--csv FILE]\n");
    return 2;
  }
  std::string err;
  tcp::dpdk::EalOptions eo;
  auto eal = tcp::dpdk::Eal::init(eo, &err);
  if (!eal) {
    std::fprintf(stderr, "esock_soak: DPDK: %s\n", err.c_str());
    return 1;
  }
  tcp::dpdk::RingPair rp;
  if (!tcp::dpdk::make_ring_pair("soak", 4096, &rp, &err)) {
    std::fprintf(stderr, "esock_soak: %s\n", err.c_str());
    return 1;
  }
  tcp::dpdk::DpdkDeviceConfig ca, cb;
  ca.mac = tcp::MacAddr{{0x02, 0, 0, 0x77, 0, 1}};
  cb.mac = tcp::MacAddr{{0x02, 0, 0, 0x77, 0, 2}};
  auto da = tcp::dpdk::DpdkDevice::open(static_cast<std::uint16_t>(rp.a), ca, &err);
  auto db = da ? tcp::dpdk::DpdkDevice::open(static_cast<std::uint16_t>(rp.b), cb, &err) : nullptr;
  if (!da || !db) {
    std::fprintf(stderr, "esock_soak: %s\n", err.c_str());
    return 1;
  }
  const auto mbufs_in_use = [&] {
    return (da->pool_size() - da->pool_available()) + (db->pool_size() - db->pool_available());
  };
  const std::size_t mbufs_start = mbufs_in_use();

  std::FILE* csv = args.csv.empty() ? nullptr : std::fopen(args.csv.c_str(), "w");
  if (csv)
    std::fprintf(csv,
                 "wall_s,sim_s,opened,completed,failed,messages,octets,heap_kib,rss_kib,"
                 "mbufs_in_use,tcbs,stags\n");
  std::size_t heap_peak = 0;
  bool ok = true;
  const std::size_t heap_start = heap_kib();
  {
    Soak soak(*da, *db, args);
    const auto t0 = std::chrono::steady_clock::now();
    const auto wall = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    double next_sample = 0;
    const auto sample = [&] {
      const Totals& t = soak.totals();
      const std::size_t heap = heap_kib();
      heap_peak = std::max(heap_peak, heap);
      std::printf("%6.1f s  sim %7.1f s  conns %6" PRIu64 " done %6" PRIu64 " failed %4" PRIu64
                  "  msgs %8" PRIu64
                  "  heap %6zu KiB  rss %6zu KiB  mbufs %5u  tcbs %3zu  "
                  "stags %4zu\n",
                  wall(), soak.sim_seconds(), t.opened, t.completed,
                  t.failed_crc_or_proto + t.failed_other, t.messages, heap, rss_kib(),
                  mbufs_in_use(), soak.tcbs(), soak.stags());
      std::fflush(stdout);
      if (csv)
        std::fprintf(csv,
                     "%.2f,%.2f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
                     ",%zu,%zu,%u,%zu,%zu\n",
                     wall(), soak.sim_seconds(), t.opened, t.completed,
                     t.failed_crc_or_proto + t.failed_other, t.messages, t.octets, heap, rss_kib(),
                     mbufs_in_use(), soak.tcbs(), soak.stags());
    };
    while (wall() < args.seconds) {
      for (int i = 0; i < 256; ++i) soak.round();
      if (wall() >= next_sample) {
        sample();
        next_sample += 1.0;
      }
    }
    const bool drained = soak.drain();
    sample();
    const Totals& t = soak.totals();
    const std::size_t heap_end = heap_kib();
    const auto& ta = soak.inj_a().tx_counters();
    const auto& tb = soak.inj_b().tx_counters();
    const auto& rb = soak.inj_b().rx_counters();
    std::printf("\nsummary: %.0f s wall, %.0f s simulated, seed %" PRIu64
                ", %zu slots\n"
                "connections: %" PRIu64 " opened, %" PRIu64 " completed, %" PRIu64
                " ended by MPA/DDP (CRC, Terminate), %" PRIu64 " other failures, %" PRIu64
                " stalled\n"
                "data: %" PRIu64 " messages and %" PRIu64 " octets verified, %" PRIu64
                " wrong\n"
                "faults: lost %" PRIu64 ", duplicated %" PRIu64 ", reordered %" PRIu64
                ", corrupted %" PRIu64 " (TCP checksum) + %" PRIu64
                " (checksum kept: MPA CRC)\n"
                "after drain: tcbs %zu, stags %zu, mbufs in use %u (start %zu), heap %zu KiB "
                "(start %zu KiB), peak %zu KiB\n",
                wall(), soak.sim_seconds(), args.seed, args.slots, t.opened, t.completed,
                t.failed_crc_or_proto, t.failed_other, t.stalled, t.messages, t.octets, t.wrong,
                ta.lost + tb.lost, ta.duplicated + tb.duplicated, ta.reordered + tb.reordered,
                ta.corrupted + tb.corrupted, rb.corrupted, soak.tcbs(), soak.stags(),
                mbufs_in_use(), mbufs_start, heap_end, heap_start, heap_peak);
    const auto check = [&](bool c, const char* what) {
      if (!c) std::printf("FAIL: %s\n", what);
      ok = ok && c;
    };
    check(t.wrong == 0, "an octet arrived wrong");
    check(t.stalled == 0, "a connection stalled");
    check(drained && soak.tcbs() == 0, "TCBs left after every connection closed");
    check(soak.stags() == 0, "STags left after every region was deregistered");
    check(mbufs_in_use() <= mbufs_start, "mbufs in use beyond the start");
    check(heap_end <= heap_start + 1024, "heap grew by more than 1 MiB");
    check(t.completed > 0, "no connection completed");
  }
  if (csv) std::fclose(csv);
  db.reset();
  da.reset();
  std::printf("%s\n", ok ? "soak: ok" : "soak: FAILED");
  return ok ? 0 : 1;
}
