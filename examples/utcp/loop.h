// esock_iwarp's poll loop: one round = Stack::poll, Endpoint::progress, then the workload's
// own step (poll the CQs, post work requests), with the idle back-off of lib/tcp/dev (two
// busy-polling processes share this machine's two cores) unless --busy.
//
// It also measures hole fills in this (receiving) process, as the tool's contract defines
// them: a round that starts with TCP holding out-of-order data or placed ranges
// (!reassembly().empty()) and ends, after poll + progress + CQ polling, with it empty is one
// hole fill; its latency is that round's duration, i.e. how long completing what waited
// behind the hole took once the missing segment arrived (with early placement only the
// bookkeeping is left; without it, TCP hands over every buffered octet to be deframed and
// copied). hole_open is the whole time a hole existed: from the first round that saw it to
// the end of the filling round (mostly the sender's loss recovery).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "esock/utcp/endpoint.h"
#include "tcp/dev/idle_backoff.h"
#include "tcp/runtime/runtime.h"

namespace esock::utcp::tool {

struct Percentiles {
  std::size_t count = 0;
  double p50 = 0, p99 = 0, max = 0;
};

// Nearest-rank percentiles of `v` (sorted in place), in the unit of the samples.
inline Percentiles percentiles(std::vector<double>& v) {
  Percentiles p;
  p.count = v.size();
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  auto rank = [&](double q) {
    std::size_t r = static_cast<std::size_t>(q * static_cast<double>(v.size()) + 0.999999);
    return v[std::clamp<std::size_t>(r, 1, v.size()) - 1];
  };
  p.p50 = rank(0.50);
  p.p99 = rank(0.99);
  p.max = v.back();
  return p;
}

inline double micros(Duration d) {
  return static_cast<double>(d.count()) / 1e3;
}

class Loop {
 public:
  Loop(tcp::Runtime& rt, bool busy, std::uint32_t idle_sleep_us)
      : rt_(rt), backoff_(tcp::IdleBackoffConfig{1024, busy ? 0u : idle_sleep_us}) {
    fill_us_.reserve(1 << 16);
    open_us_.reserve(1 << 16);
  }

  void set_endpoint(Endpoint* ep) { ep_ = ep; }
  Instant now() const { return rt_.now(); }

  // Rounds until done() (true) or the deadline (false). work(now) polls the CQs and posts;
  // it returns true when it did anything.
  template <class Work, class Done>
  bool run(Work work, Done done, Instant deadline) {
    while (!done()) {
      const Instant t0 = rt_.now();
      if (t0 >= deadline) return done();
      const bool hole = has_hole();
      if (hole && !hole_since_) hole_since_ = t0;
      bool did = rt_.stack().poll(t0);
      if (ep_ != nullptr) did |= ep_->progress();
      did |= work(t0);
      if (hole && !has_hole()) {
        const Instant t1 = rt_.now();
        fill_us_.push_back(micros(t1 - t0));
        open_us_.push_back(micros(t1 - *hole_since_));
        hole_since_.reset();
      }
      backoff_.poll_done(did);
    }
    return true;
  }
  // Rounds with no workload, for a while (answering the peer: ACKs, FIN, retransmissions).
  void linger(Duration d) {
    run([](Instant) { return false; }, [] { return false; }, now() + d);
  }

  std::vector<double>& fill_us() { return fill_us_; }
  std::vector<double>& open_us() { return open_us_; }

 private:
  bool has_hole() {
    if (ep_ == nullptr) return false;
    tcp::Connection* c = ep_->tcp_connection();
    return c != nullptr && !c->tcb().reassembly().empty();
  }

  tcp::Runtime& rt_;
  tcp::IdleBackoff backoff_;
  Endpoint* ep_ = nullptr;
  std::optional<Instant> hole_since_;
  std::vector<double> fill_us_, open_us_;
};

}  // namespace esock::utcp::tool
