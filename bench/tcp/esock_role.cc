// esock roles: lib/tcp's Runtime (EAL + one net_memif port + Stack + poll loop) as the
// memif server (10.0.0.1, TCP listener) or the memif client (10.0.0.2, TCP connect).
#include <unistd.h>

#include <cstdio>

#include "roles.h"
#include "tcp/runtime/runtime.h"

namespace esock::bench {
namespace {

using namespace esock::tcp;

constexpr std::uint16_t kTcpPort = 5001;
const Ipv4Addr kServerIp = Ipv4Addr::from_octets(10, 0, 0, 1);
const Ipv4Addr kClientIp = Ipv4Addr::from_octets(10, 0, 0, 2);

// The workload link over one Connection. Every wait goes through Runtime::run_until, so the
// poll loop is exactly the runtime's: pure busy polling when idle.sleep_us == 0, else its
// spin-then-sleep back-off.
class EsockLink {
 public:
  EsockLink(Runtime& rt, Connection* c, Duration timeout) : rt_(rt), c_(c), timeout_(timeout) {}

  bool send_all(const std::uint8_t* p, std::size_t n) {
    std::size_t sent = 0;
    rt_.run_until(
        [&] {
          if (dead()) return true;
          sent += c_->send(bytes_view(p + sent, n - sent));
          return sent == n;
        },
        timeout_);
    // Tcb::send queues frames in the interface; the device gets them on the next poll.
    rt_.poll_once();
    return check(sent == n, "send");
  }

  bool recv_all(std::uint8_t* p, std::size_t n) {
    std::size_t got = 0;
    rt_.run_until(
        [&] {
          got += c_->recv(mut_bytes(p + got, n - got));
          return got == n || dead() || c_->peer_closed();
        },
        timeout_);
    return check(got == n, "recv");
  }

 private:
  bool dead() const { return c_->state() == TcpState::closed; }
  bool check(bool ok, const char* what) const {
    if (!ok) {
      std::fprintf(stderr, "esock: %s failed: state %s, error %d\n", what, to_string(c_->state()),
                   c_->error());
    }
    return ok;
  }

  Runtime& rt_;
  Connection* c_;
  Duration timeout_;
};

std::unique_ptr<Runtime> make_runtime(const RoleOptions& o, bool server) {
  RuntimeConfig rc;
  // memif frames must fit bsize (MACHINE-NOTES.md); the port's MTU stays 1500.
  rc.vdev = std::string("net_memif0,role=") + (server ? "server" : "client") +
            ",socket=" + o.socket + ",socket-abstract=no,bsize=2048";
  rc.core = o.core;
  rc.file_prefix = o.file_prefix;
  rc.stack.iface.ip = server ? kServerIp : kClientIp;
  rc.stack.iface.prefix_len = 24;
  // Link up is not rings ready: the first ARP request may vanish; retry it quickly.
  rc.stack.iface.arp_retry = 100ms;
  rc.stack.tcp.nodelay = true;  // as TCP_NODELAY on the kernel side
  rc.idle.sleep_us = o.busy_poll ? 0 : IdleBackoffConfig{}.sleep_us;
  if (o.spin_polls) rc.idle.spin_polls = o.spin_polls;
  rc.link_timeout = std::chrono::seconds(o.timeout_s);
  std::string err;
  auto rt = Runtime::create(rc, &err);
  if (!rt) std::fprintf(stderr, "esock %s: %s\n", server ? "server" : "client", err.c_str());
  return rt;
}

void print_stats(const char* who, Connection* c, Runtime& rt) {
  const TcbStats& s = c->tcb().stats();
  const InterfaceStats& i = rt.stack().iface().stats();
  const TcbInfo t = c->tcb().info();
  std::fprintf(
      stderr,
      "esock %s: segs_out=%llu segs_in=%llu retransmits=%llu rto=%llu "
      "fast_recoveries=%llu ooo=%llu tx_device_full=%llu rx_dropped=%llu cwnd=%u snd_wnd=%u "
      "smss=%u srtt_us=%lld rto_ms=%lld\n",
      who, static_cast<unsigned long long>(s.segs_out), static_cast<unsigned long long>(s.segs_in),
      static_cast<unsigned long long>(s.retransmits),
      static_cast<unsigned long long>(s.rto_expirations),
      static_cast<unsigned long long>(s.fast_recoveries),
      static_cast<unsigned long long>(s.ooo_segments),
      static_cast<unsigned long long>(i.tx_device_full),
      static_cast<unsigned long long>(i.rx_dropped), t.cwnd, t.snd_wnd, unsigned{t.smss},
      static_cast<long long>(t.srtt.count() / 1000),
      static_cast<long long>(t.rto.count() / 1'000'000));
  // Stack-wide TCP input drops by reason (drop_reason.h).
  std::fprintf(stderr, "esock %s: tcp drops: %s\n", who,
               to_string(rt.stack().stats().drops).c_str());
}

}  // namespace

int esock_server(const RoleOptions& o) {
  auto rt = make_runtime(o, true);
  if (!rt) return 1;
  Stack& st = rt->stack();
  int err = 0;
  Listener* l = st.listen(kTcpPort, 4, &err);
  if (!l) {
    std::fprintf(stderr, "esock server: listen: errno %d\n", err);
    return 1;
  }
  Connection* c = nullptr;
  // The client may abort and retry its first connects (link up is not ready); the first
  // one that completes is ours.
  rt->run_until([&] { return (c = st.accept(l)) != nullptr; }, std::chrono::seconds(o.timeout_s));
  if (!c) {
    std::fprintf(stderr, "esock server: no connection\n");
    return 1;
  }
  EsockLink link(*rt, c, std::chrono::seconds(o.timeout_s));
  const bool ok = serve(link);
  rt->poll_once();
  print_stats("server", c, *rt);
  // memif: the side that stops polling closes first, the other must not be polling then
  // (MACHINE-NOTES.md). The client closes ~100 ms after our last frame; we stay off the
  // rings until it has.
  ::usleep(500'000);
  return ok ? 0 : 1;
}

int esock_client(const RoleOptions& o) {
  auto rt = make_runtime(o, false);
  if (!rt) return 1;
  Stack& st = rt->stack();
  Connection* c = nullptr;
  for (int attempt = 0; attempt < 50 && !c; ++attempt) {
    int err = 0;
    Connection* t = st.connect(kServerIp, kTcpPort, &err);
    if (!t) {
      std::fprintf(stderr, "esock client: connect: errno %d\n", err);
      return 1;
    }
    rt->run_until([&] { return t->established() || t->state() == TcpState::closed; }, 300ms);
    if (t->established()) {
      c = t;
    } else {
      st.abort(t);
    }
  }
  if (!c) {
    std::fprintf(stderr, "esock client: no connection after 50 attempts\n");
    return 1;
  }
  EsockLink link(*rt, c, std::chrono::seconds(o.timeout_s));
  const bool ok = run_client(link, o.plan);
  print_stats("client", c, *rt);
  ::usleep(100'000);  // the server stops polling first (see esock_server)
  return ok ? 0 : 1;
}

}  // namespace esock::bench
