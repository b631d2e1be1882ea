// esock_tcp: bulk transfers, echo and RST paths over lib/tcp on one DPDK virtual device,
// for interop tests against the Linux kernel's TCP (net_tap into a network namespace) and
// between two esock processes (net_memif). Prints digests, throughput and the TCB's view.
//
//   esock_tcp --vdev net_tap0,iface=etap0 --ip 10.88.0.2/24 listen 7471 --recv
//   esock_tcp --vdev net_memif0,role=client,socket=/tmp/m.sock,socket-abstract=no,bsize=9216
//             --ip 10.89.0.2/24 --core 1 connect 10.89.0.1 7471 --send 64m --recv
#include <sodium.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>

#include "options.h"
#include "report.h"
#include "tcp/runtime/runtime.h"
#include "transfer.h"

namespace esock::tcp::tool {
namespace {

Duration seconds(double s) {
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s));
}

RuntimeConfig runtime_config(const Options& o) {
  RuntimeConfig rc;
  rc.vdev = o.vdev;
  rc.core = o.core;
  rc.file_prefix = o.file_prefix;
  rc.mtu = o.mtu;
  rc.stack.iface.ip = o.ip;
  rc.stack.iface.prefix_len = o.prefix_len;
  rc.stack.iface.gateway = o.gateway;
  if (o.loss > 0 || o.reorder > 0) {
    // The same damage in both directions, as a lossy wire would do it.
    FaultConfig f;
    f.seed = o.seed;
    for (FaultSpec* s : {&f.tx, &f.rx}) {
      s->loss = o.loss;
      s->reorder = o.reorder;
      s->reorder_frames = 3;
    }
    rc.faults = f;
  }
  rc.pcap_path = o.pcap;
  rc.pcap_snaplen = o.pcap_snaplen;
  rc.idle.sleep_us = o.idle_sleep_us;
  rc.link_timeout = seconds(o.link_timeout_s);
  return rc;
}

// Opens the connection (active or passive); nullptr after printing why not.
Connection* open_connection(const Options& o, Runtime& rt) {
  Stack& st = rt.stack();
  int err = 0;
  Instant deadline = rt.now() + seconds(o.connect_timeout_s);
  if (o.listen) {
    Listener* l = st.listen(o.port, 16, &err);
    if (!l) {
      std::fprintf(stderr, "esock_tcp: listen on port %u: %s\n", o.port, std::strerror(err));
      return nullptr;
    }
    std::printf("esock_tcp: listening on %s:%u\n", o.ip.to_string().c_str(), o.port);
    std::fflush(stdout);
    Connection* c = nullptr;
    // A listener waits as long as the whole run may take, not just a connect's time.
    rt.run_until_deadline([&] { return (c = st.accept(l)); }, rt.now() + seconds(o.timeout_s));
    st.close_listener(l);  // one connection per run; later SYNs get RST
    if (!c) std::fprintf(stderr, "esock_tcp: no connection arrived on port %u\n", o.port);
    return c;
  }
  Connection* c = st.connect(o.peer, o.port, &err);
  if (!c) {
    std::fprintf(stderr, "esock_tcp: connect to %s:%u: %s\n", o.peer.to_string().c_str(), o.port,
                 std::strerror(err));
    return nullptr;
  }
  rt.run_until_deadline([&] { return c->established() || c->state() == TcpState::closed; },
                        deadline);
  if (c->established() || c->state() == TcpState::time_wait) return c;
  int e = c->error() != 0 ? c->error() : ETIMEDOUT;
  std::fprintf(stderr, "esock_tcp: connect to %s:%u: %s (%s)\n", o.peer.to_string().c_str(), o.port,
               std::strerror(e), e == ECONNREFUSED ? "ECONNREFUSED" : "no answer");
  st.abort(c);
  return nullptr;
}

int run(const Options& o) {
  std::string error;
  std::unique_ptr<Runtime> rt = Runtime::create(runtime_config(o), &error);
  if (!rt) {
    std::fprintf(stderr, "esock_tcp: %s\n", error.c_str());
    return 1;
  }
  // Scripts wait for this line: the port is configured (net_tap has set the kernel side's
  // MAC to ours by now, see tests/interop/tcp/tcp_kernel_suite.sh).
  std::printf("esock_tcp: port up mac=%s ip=%s/%u\n", rt->device().mac().to_string().c_str(),
              o.ip.to_string().c_str(), o.prefix_len);
  std::fflush(stdout);
  Connection* c = open_connection(o, *rt);
  if (!c) return 1;
  const FourTuple& t = c->tuple();
  std::printf("esock_tcp: connected %s:%u <-> %s:%u\n", t.local_ip.to_string().c_str(),
              t.local_port, t.remote_ip.to_string().c_str(), t.remote_port);
  std::fflush(stdout);

  Transfer xfer(o, rt->stack(), c, rt->now());
  bool finished =
      rt->run_until_deadline([&] { return xfer.step(rt->now()), xfer.end() != End::running; },
                             rt->now() + seconds(o.timeout_s));
  if (!finished) {
    std::fprintf(stderr, "esock_tcp: timed out after %.1f s\n", o.timeout_s);
    print_report(o, xfer, *rt);
    rt->stack().abort(c);
    return 1;
  }
  print_report(o, xfer, *rt);
  if (Connection* left = xfer.connection()) rt->stack().close(left);
  // Keep answering for a while: our last ACK may be lost and the peer's FIN retransmitted
  // (TIME-WAIT's job, RFC 9293 3.6), and an aborted connection's RST may be lost too.
  rt->run_until_deadline([] { return false; }, rt->now() + seconds(o.linger_s));
  return exit_status(o, xfer);
}

}  // namespace
}  // namespace esock::tcp::tool

int main(int argc, char** argv) {
  using namespace esock::tcp::tool;
  int code = 0;
  std::optional<Options> o = parse_options(argc, argv, &code);
  if (!o) return code;
  if (sodium_init() < 0) {
    std::fprintf(stderr, "esock_tcp: libsodium failed to initialise\n");
    return 1;
  }
  return run(*o);
}
