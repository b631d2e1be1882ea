// Two lib/tcp stacks joined by an in-memory link with seeded fault injectors on both ends,
// a manual clock, and an iWARP endpoint (esock::utcp) on each side of one connection.
// Everything is deterministic: (seed, fault spec, steps) names one run.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "esock/utcp/endpoint.h"
#include "tcp/dev/fault_injector.h"
#include "tcp/dev/mem_link.h"
#include "tcp/stack/stack.h"

namespace esock::utcp::test {

using namespace std::chrono_literals;

inline const tcp::Ipv4Addr ip_a = tcp::Ipv4Addr::from_octets(10, 9, 0, 1);
inline const tcp::Ipv4Addr ip_b = tcp::Ipv4Addr::from_octets(10, 9, 0, 2);

inline std::uint8_t pattern(std::uint64_t i, std::uint32_t salt) {
  const std::uint64_t x = (i + salt) * 0x9e3779b97f4a7c15ull;
  return static_cast<std::uint8_t>(x >> 56);
}

struct PairConfig {
  tcp::FaultConfig faults_a, faults_b;  // a: the initiator's device, b: the responder's
  Options opts;                         // both sides (initiator flag is set per side)
  tcp::TcpConfig tcp;
};

class UtcpPair {
 public:
  explicit UtcpPair(PairConfig pc) : cfg_(std::move(pc)) {
    tcp::MemLinkConfig lc;
    lc.rx_queue = 1 << 14;
    lc.tx_queue = 1 << 14;
    link_ = std::make_unique<tcp::MemLink>(lc);
    fa = std::make_unique<tcp::FaultInjector>(link_->a(), clock, cfg_.faults_a);
    fb = std::make_unique<tcp::FaultInjector>(link_->b(), clock, cfg_.faults_b);
    tcp::StackConfig ca;
    ca.iface.ip = ip_a;
    ca.isn_key = tcp::IsnGenerator::Key{1};
    ca.tcp = cfg_.tcp;
    tcp::StackConfig cb = ca;
    cb.iface.ip = ip_b;
    cb.isn_key = tcp::IsnGenerator::Key{2};
    a = std::make_unique<tcp::Stack>(*fa, ca, clock.now());
    b = std::make_unique<tcp::Stack>(*fb, cb, clock.now());
  }

  // TCP connect, accept, MPA negotiation. False if either side failed.
  bool connect(std::uint16_t port = 4791) {
    int err = 0;
    tcp::Listener* l = b->listen(port, 4, &err);
    if (l == nullptr) return false;
    ea = Endpoint::connect(*a, ctx_a, ip_b, port, cfg_.opts, &err);
    if (!ea) return false;
    const bool ok = run_until([&] {
      if (!eb) {
        tcp::Connection* c = b->accept(l);
        if (c) eb = Endpoint::accept(*b, c, ctx_b, cfg_.opts);
      }
      return eb && ea->state() != Endpoint::State::negotiating &&
             ea->state() != Endpoint::State::connecting &&
             eb->state() != Endpoint::State::negotiating &&
             eb->state() != Endpoint::State::connecting;
    });
    return ok && ea->state() == Endpoint::State::established &&
           eb->state() == Endpoint::State::established;
  }

  // One round: both stacks, then both endpoints, then 20 us of simulated time.
  void step() {
    a->poll(clock.now());
    if (ea) ea->progress();
    b->poll(clock.now());
    if (eb) eb->progress();
    clock.advance(20us);
  }
  template <class F>
  bool run_until(F done, Duration limit = 120s) {
    const Instant end = clock.now() + limit;
    while (clock.now() < end) {
      if (done()) return true;
      step();
    }
    return done();
  }

  // Registered buffers, with the pattern of `salt` (or zeros).
  struct Region {
    std::vector<std::uint8_t> mem;
    ddp::stag_t stag = 0;
    ddp::Sge sge(std::size_t off, std::size_t len) const {
      return ddp::Sge{const_cast<std::uint8_t*>(mem.data()) + off, static_cast<std::uint32_t>(len),
                      stag};
    }
    std::uint64_t to(std::size_t off = 0) const {
      return reinterpret_cast<std::uint64_t>(mem.data()) + off;
    }
  };
  static Region region(rnic::Context& ctx, std::size_t len, std::uint32_t salt, bool fill) {
    Region r;
    r.mem.assign(len, 0);
    if (fill)
      for (std::size_t i = 0; i < len; ++i) r.mem[i] = pattern(i, salt);
    r.stag =
        ctx.reg_mr(r.mem.data(), len,
                   ddp::access_local_write | ddp::access_remote_read | ddp::access_remote_write);
    return r;
  }

  // The responder's TCP engine, for the out-of-order counters.
  const tcp::TcbStats& tcp_stats_b() const { return eb->tcp_connection()->tcb().stats(); }
  const tcp::TcbStats& tcp_stats_a() const { return ea->tcp_connection()->tcb().stats(); }

  // Declaration order = reverse destruction order: endpoints go before their stacks, the
  // stacks before their devices, the devices before the link and the clock.
  PairConfig cfg_;
  ManualClock clock;
  rnic::Context ctx_a, ctx_b;
  std::unique_ptr<tcp::MemLink> link_;
  std::unique_ptr<tcp::FaultInjector> fa, fb;
  std::unique_ptr<tcp::Stack> a, b;
  std::unique_ptr<Endpoint> ea, eb;
};

}  // namespace esock::utcp::test
