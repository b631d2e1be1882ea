#include "perftest_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "tool_common.h"

namespace esock::tools {

using Clock = std::chrono::steady_clock;

namespace {

constexpr std::uint32_t cycle_buffer = 4096;  // perftest's page-size cycle buffer

double usec_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

// perftest's Send BW credits are RDMA Writes of the receiver's count as a raw uint32 in the
// receiver's native order; perftest runs on little-endian hosts (x86, arm64) in practice.
std::uint32_t load_le32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}
void store_le32(std::uint8_t* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

// Progress with a stall deadline: fails when nothing completes for timeout_ms.
class Watchdog {
 public:
  Watchdog(Conn& ep, int timeout_ms, const char* what)
      : ep_(ep), timeout_(timeout_ms), what_(what), last_(Clock::now()) {}
  void kick() { last_ = Clock::now(); }
  bool idle() {
    if (!ep_.progress(1)) {
      std::fprintf(stderr, "%s: connection lost (%s)\n", what_, ep_.error().c_str());
      return false;
    }
    if (Clock::now() - last_ > std::chrono::milliseconds(timeout_)) {
      std::fprintf(stderr, "%s: no progress for %d ms\n", what_, timeout_);
      return false;
    }
    return true;
  }

 private:
  Conn& ep_;
  int timeout_;
  const char* what_;
  Clock::time_point last_;
};

bool completions_ok(std::span<const ddp::Completion> cs, const char* what, Conn& ep) {
  for (const auto& c : cs) {
    if (c.status != ddp::Status::success) {
      std::fprintf(stderr, "%s: completion with status %s (%s)\n", what, to_string(c.status),
                   ep.error().c_str());
      return false;
    }
  }
  return true;
}

}  // namespace

const char* to_string(Verb v) {
  return v == Verb::send ? "send" : v == Verb::write ? "write" : "read";
}

Resources::Resources(rnic::Context& ctx, const TestParams& p)
    : half_(2 * std::max<std::size_t>(p.size, cycle_buffer)) {
  buf_.assign(2 * half_, 0);
  key_ = ctx.reg_mr(buf_.data(), buf_.size(),
                    ddp::access_local_write | ddp::access_remote_read | ddp::access_remote_write);
  ctrl_key_ =
      ctx.reg_mr(ctrl_.data(), ctrl_.size(), ddp::access_local_write | ddp::access_remote_write);
}

PingpongDest Resources::my_dest(const TestParams& p) const {
  PingpongDest d;
  d.qpn = 1;  // iWARP has no QP numbers on the wire; perftest only prints it
  d.psn = 0;
  d.out_reads = 128;
  d.gid_index = 0xffffffff;              // -1: no GID in use
  if (p.verb == Verb::send && !p.lat) {  // ctx_alloc_credit: the credit word is the target
    d.rkey = ctrl_key_;
    d.vaddr = reinterpret_cast<std::uintptr_t>(ctrl_.data() + 4);
  } else {
    d.rkey = key_;
    d.vaddr = reinterpret_cast<std::uintptr_t>(buf_.data() + half_);
  }
  return d;
}

bool post_initial_recvs(Conn& ep, Resources& r, const TestParams& p) {
  ddp::Sge s{r.target(), p.size, r.key()};
  for (std::uint32_t i = 0; i < p.rx_depth; ++i)
    if (ep.post_recv(i, {&s, 1}) != 0) {
      std::fprintf(stderr, "post_recv %u of %u failed\n", i, p.rx_depth);
      return false;
    }
  return true;
}

bool run_bw_client(Conn& ep, Resources& r, const TestParams& p, const PingpongDest& rem,
                   BwReport* out) {
  Watchdog wd(ep, p.timeout_ms, "bw client");
  std::uint64_t posted = 0, done = 0;
  std::array<ddp::Completion, 16> cs;
  ddp::Sge s{r.local(), p.size, r.key()};
  const auto t0 = Clock::now();
  while (done < p.iters) {
    while (posted < p.iters && posted - done < p.tx_depth) {
      if (p.verb == Verb::send) {  // run_iter_bw's credit window (iWARP send_rcredit)
        const std::uint32_t swindow =
            static_cast<std::uint32_t>(posted + 1) - load_le32(r.ctrl() + 4);
        if (swindow >= p.rx_depth) break;
      }
      int rc = p.verb == Verb::send    ? ep.post_send(posted, {&s, 1})
               : p.verb == Verb::write ? ep.post_write(posted, {&s, 1}, rem.rkey, rem.vaddr)
                                       : ep.post_read(posted, {&s, 1}, rem.rkey, rem.vaddr);
      if (rc != 0) {
        std::fprintf(stderr, "post %s failed: %s\n", to_string(p.verb), std::strerror(rc));
        return false;
      }
      ++posted;
    }
    const std::size_t n = ep.poll_send_cq(cs);
    if (!completions_ok({cs.data(), n}, "bw client", ep)) return false;
    done += n;
    if (n > 0)
      wd.kick();
    else if (!wd.idle())
      return false;
  }
  const double secs = usec_between(t0, Clock::now()) / 1e6;
  const double mb = static_cast<double>(p.size) * static_cast<double>(p.iters) / 1048576.0;
  *out = {p.size, p.iters, mb / secs, mb / secs, static_cast<double>(p.iters) / secs / 1e6};
  return true;
}

bool run_bw_server_send(Conn& ep, Resources& r, const TestParams& p, const PingpongDest& rem,
                        BwReport* out) {
  Watchdog wd(ep, p.timeout_ms, "send bw server");
  std::uint64_t rcnt = 0, posted = p.rx_depth;
  const std::uint32_t credit_cnt = std::max<std::uint32_t>(1, p.rx_depth / 3);
  std::array<ddp::Completion, 16> cs;
  ddp::Sge s{r.target(), p.size, r.key()};
  ddp::Sge credit{r.ctrl(), 4, r.ctrl_key()};
  Clock::time_point t0{};
  while (rcnt < p.iters) {
    const std::size_t n = ep.poll_recv_cq(cs);
    if (!completions_ok({cs.data(), n}, "send bw server", ep)) return false;
    if (n == 0) {
      if (!wd.idle()) return false;
      continue;
    }
    wd.kick();
    if (rcnt == 0) t0 = Clock::now();
    for (std::size_t i = 0; i < n; ++i) {
      ++rcnt;
      if (posted + 1 <= p.iters) {
        if (ep.post_recv(posted, {&s, 1}) != 0) return false;
        ++posted;
      }
      // run_iter_bw_server: every rx_depth/3 receives, tell the sender how many arrived.
      if ((rcnt % p.rx_depth) % credit_cnt == 0) {
        store_le32(r.ctrl(), static_cast<std::uint32_t>(rcnt));
        if (ep.post_write(rcnt, {&credit, 1}, rem.rkey, rem.vaddr) != 0 ||
            !wait_send_ok(ep, "credit write", p.timeout_ms))
          return false;
      }
    }
  }
  const double secs = usec_between(t0, Clock::now()) / 1e6;
  const double mb = static_cast<double>(p.size) * static_cast<double>(p.iters) / 1048576.0;
  *out = {p.size, p.iters, mb / secs, mb / secs, static_cast<double>(p.iters) / secs / 1e6};
  return true;
}

namespace {

// run_iter_lat_write: each side writes its counter into the last octet of the message and
// waits for the peer's counter to appear in its own target buffer.
bool lat_write(Conn& ep, Resources& r, const TestParams& p, const PingpongDest& rem,
               std::vector<Clock::time_point>& posted) {
  Watchdog wd(ep, p.timeout_ms, "write lat");
  std::uint8_t* post_buf = r.local() + p.size - 1;
  const volatile std::uint8_t* poll_buf = r.target() + p.size - 1;
  ddp::Sge s{r.local(), p.size, r.key()};
  std::uint64_t scnt = 0, rcnt = 0, ccnt = 0;
  while (scnt < p.iters || ccnt < p.iters || rcnt < p.iters) {
    if (rcnt < p.iters && !(scnt < 1 && !p.client)) {
      ++rcnt;
      while (*poll_buf != static_cast<std::uint8_t>(rcnt))
        if (!wd.idle()) return false;
      wd.kick();
    }
    if (scnt < p.iters) {
      posted.push_back(Clock::now());
      *post_buf = static_cast<std::uint8_t>(++scnt);
      if (ep.post_write(scnt, {&s, 1}, rem.rkey, rem.vaddr) != 0) return false;
    }
    if (ccnt < p.iters) {
      if (!wait_send_ok(ep, "write lat completion", p.timeout_ms)) return false;
      ++ccnt;
    }
  }
  return true;
}

// run_iter_lat_send: ping-pong of Sends, the client first; receives are re-posted while
// more messages are due.
bool lat_send(Conn& ep, Resources& r, const TestParams& p, std::vector<Clock::time_point>& posted) {
  ddp::Sge s{r.local(), p.size, r.key()}, rs{r.target(), p.size, r.key()};
  std::uint64_t scnt = 0, rcnt = 0;
  while (scnt < p.iters || rcnt < p.iters) {
    if (rcnt < p.iters && !(scnt < 1 && p.client)) {
      if (!wait_recv_ok(ep, "send lat receive", p.timeout_ms)) return false;
      ++rcnt;
      if (rcnt + p.rx_depth <= p.iters && ep.post_recv(rcnt, {&rs, 1}) != 0) return false;
    }
    if (scnt < p.iters) {
      posted.push_back(Clock::now());
      ++scnt;
      if (ep.post_send(scnt, {&s, 1}) != 0 || !wait_send_ok(ep, "send lat send", p.timeout_ms))
        return false;
    }
  }
  return true;
}

// run_iter_lat: one RDMA Read at a time from the server's buffer (the server is passive).
bool lat_read(Conn& ep, Resources& r, const TestParams& p, const PingpongDest& rem,
              std::vector<Clock::time_point>& posted) {
  ddp::Sge s{r.local(), p.size, r.key()};
  for (std::uint64_t i = 0; i < p.iters; ++i) {
    posted.push_back(Clock::now());
    if (ep.post_read(i, {&s, 1}, rem.rkey, rem.vaddr) != 0 ||
        !wait_send_ok(ep, "read lat", p.timeout_ms))
      return false;
  }
  posted.push_back(Clock::now());
  return true;
}

}  // namespace

bool run_lat(Conn& ep, Resources& r, const TestParams& p, const PingpongDest& rem,
             std::vector<double>* usec) {
  std::vector<Clock::time_point> posted;
  posted.reserve(p.iters + 1);
  bool ok = p.verb == Verb::write  ? lat_write(ep, r, p, rem, posted)
            : p.verb == Verb::send ? lat_send(ep, r, p, posted)
                                   : lat_read(ep, r, p, rem, posted);
  if (!ok) return false;
  // perftest: the gap between consecutive posts is one round trip; Write and Send report
  // half of it (one way), Read the whole of it.
  const double quotient = p.verb == Verb::read ? 1.0 : 2.0;
  for (std::size_t i = 1; i < posted.size(); ++i)
    usec->push_back(usec_between(posted[i - 1], posted[i]) / quotient);
  return true;
}

const char* result_line() {
  return "---------------------------------------------------------------------------------------"
         "\n";
}

void print_bw_header() {
  std::printf(
      "%s #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   "
      "MsgRate[Mpps]\n",
      result_line());
}

void print_bw_row(const BwReport& r) {
  std::printf(" %-7llu    %-10llu       %-7.2f            %-7.2f\t\t   %-7.6f\n",
              static_cast<unsigned long long>(r.size), static_cast<unsigned long long>(r.iters),
              r.bw_peak, r.bw_avg, r.msg_rate);
}

void print_lat_header() {
  std::printf(
      "%s #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    "
      "t_avg[usec]    t_stdev[usec]   99%% percentile[usec]   99.9%% percentile[usec] \n",
      result_line());
}

void print_lat_row(const TestParams& p, std::vector<double> v) {
  if (v.empty()) return;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  const double avg = sum / static_cast<double>(v.size());
  double var = 0;
  for (double x : v) var += (x - avg) * (x - avg);
  auto pct = [&](double q) {
    const auto i = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1));
    return v[i];
  };
  std::printf(
      " %-7u %llu          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f"
      "\t\t%-7.2f \t\t%-7.2f\n",
      p.size, static_cast<unsigned long long>(p.iters), v.front(), v.back(), pct(0.5), avg,
      std::sqrt(var / static_cast<double>(v.size())), pct(0.99), pct(0.999));
}

}  // namespace esock::tools
