// esock_perftest: perftest's ib_{send,write,read}_{bw,lat} run with -R (rdma_cm), over
// esock, in both roles, so esock can be measured against perftest on Linux siw or an RNIC.
//
//   esock_perftest -t write --bw [-p 18515] [-n ITERS] [-s SIZE] [--bind ADDR]   # server
//   esock_perftest -t write --bw SERVER [-p 18515] [-n ITERS] [-s SIZE]          # client
//
// Wire protocol (linux-rdma/perftest, src/perftest_communication.c): the client opens an
// iWARP connection on the port for perftest's own messages (versions, page and cache line
// size, MTU, then 56-octet pingpong_dest handshakes carrying rkey and vaddr), then a second
// one on the same port that carries the test. Handshake counts per test follow write_bw.c,
// send_bw.c, read_bw.c, write_lat.c, send_lat.c and read_lat.c; a missing or extra one
// would deadlock against the real tool, so each is named below. Accepted and ignored for
// command-line compatibility: -R, -d DEV, -F, -x IDX.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "perftest_comm.h"
#include "perftest_run.h"
#include "tool_common.h"

using namespace esock;
using namespace esock::tools;

namespace {

struct Args {
  TestParams p;
  std::string server;  // empty: we are the server
  std::string bind = "0.0.0.0";
  std::uint16_t port = 18515;  // perftest's DEF_PORT
  bool verb_set = false, mode_set = false;
  std::uint64_t iters = 0;
  std::uint32_t size = 0;
  ConnArgs conn = default_conn_args();
};

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: esock_perftest -t send|write|read --bw|--lat [SERVER] [-p PORT] [-n N]\n"
               "                      [-s SIZE] [--bind ADDR] [connection options]\n%s",
               conn_usage());
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string o = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage();
      return argv[++i];
    };
    if (o == "-t") {
      const std::string v = value();
      a.verb_set = true;
      if (v == "send")
        a.p.verb = Verb::send;
      else if (v == "write")
        a.p.verb = Verb::write;
      else if (v == "read")
        a.p.verb = Verb::read;
      else
        usage();
    } else if (o == "--bw" || o == "--lat") {
      a.p.lat = o == "--lat";
      a.mode_set = true;
    } else if (o == "-p") {
      a.port = static_cast<std::uint16_t>(std::atoi(value()));
    } else if (o == "-n") {
      a.iters = std::strtoull(value(), nullptr, 10);
    } else if (o == "-s") {
      a.size = static_cast<std::uint32_t>(std::strtoul(value(), nullptr, 10));
    } else if (o == "--bind") {
      a.bind = value();
    } else if (o == "-R" || o == "-F") {
    } else if (o == "-d" || o == "-x") {
      value();
    } else if (parse_conn_arg(i, argc, argv, a.conn)) {
    } else if (!o.empty() && o[0] != '-' && a.server.empty()) {
      a.server = o;
    } else {
      usage();
    }
  }
  if (!a.verb_set || !a.mode_set) usage();
  TestParams& p = a.p;
  p.client = !a.server.empty();
  p.timeout_ms = a.conn.timeout_ms;
  // perftest_parameters.c defaults and force_dependencies().
  p.iters = a.iters ? a.iters : (p.lat ? 1000 : 5000);
  p.size = a.size ? a.size : (p.lat ? 2 : 65536);
  p.tx_depth = static_cast<std::uint32_t>(std::min<std::uint64_t>(p.lat ? 1 : 128, p.iters));
  p.rx_depth = static_cast<std::uint32_t>(std::min<std::uint64_t>(512, p.iters));
  if (p.verb == Verb::send && !p.lat && p.rx_depth % 2 == 1) ++p.rx_depth;
  if (p.size == 0 || p.size > (1u << 23)) usage();
  return a;
}

const char* test_name(const TestParams& p) {
  return p.verb == Verb::send ? "Send" : p.verb == Verb::write ? "RDMA_Write" : "RDMA_Read";
}

void print_info(const Args& a, Conn& data) {
  const TestParams& p = a.p;
  const auto& n = data.negotiated();
  std::printf("%s                    %s %s Test (esock, %s transport)\n", result_line(),
              test_name(p), p.lat ? "Latency" : "BW", a.conn.transport.c_str());
  std::printf(" Connection type : RC\t\tMPA revision   : %u\n", n.revision);
  std::printf(" CRC32c          : %s\t\tMarkers        : %s\n", n.crc ? "ON" : "OFF",
              n.markers_tx || n.markers_rx ? "ON" : "OFF");
  std::printf(" Peer-to-peer    : %s\t\tRTR            : %s\n", n.p2p ? "ON" : "OFF",
              mpa::to_string(n.rtr));
  std::printf(" TX depth        : %u\n", p.tx_depth);
  if (p.verb == Verb::send) std::printf(" RX depth        : %u\n", p.rx_depth);
  if (p.verb == Verb::read) std::printf(" Outstand reads  : %u\n", n.ord);
  std::printf(" rdma_cm QPs\t : ON\n Data ex. method : rdma_cm\n");
}

void print_dest(const char* side, const PingpongDest& d, Verb v) {
  std::printf(" %s address: LID %#04x QPN %#06x PSN %#06x", side, d.lid, d.qpn, d.psn);
  if (v == Verb::read) std::printf(" OUT %#04x", d.out_reads);
  if (v != Verb::send)
    std::printf(" RKey %#08x VAddr %#016llx", d.rkey, static_cast<unsigned long long>(d.vaddr));
  std::printf("\n");
}

int fail(const char* what) {
  std::fprintf(stderr, "esock_perftest: %s\n", what);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  const TestParams& p = a.p;
  std::string why;
  // Declared first, destroyed last: connections go before the transport that carries them.
  auto tr = Transport::create(a.conn, &why);
  if (!tr) return fail(why.c_str());
  rnic::Context& ctx = tr->ctx();
  std::unique_ptr<Conn> comm_ep, data;
  if (!p.client) {
    if (!tr->listen(a.bind, a.port, &why)) return fail(("listen: " + why).c_str());
    std::printf(
        "\n************************************\n* Waiting for client to connect... "
        "*\n************************************\n");
    std::fflush(stdout);
    comm_ep = tools::accept(*tr, a.conn, &why);
  } else {
    comm_ep = tools::connect(*tr, a.server, a.port, a.conn, 50, &why);
  }
  if (!comm_ep) return fail(("perftest channel: " + why).c_str());
  print_negotiated("esock_perftest", p.client ? "initiator (channel)" : "responder (channel)",
                   *comm_ep);
  CommChannel comm(ctx, *comm_ep, p.client, p.timeout_ms);
  std::string peer_version;
  if (!comm.prelude(&peer_version)) return fail("version/system data exchange failed");
  // create_rdma_cm_connection: a handshake before and after the test connection.
  PingpongDest zero, rem;
  if (!comm.hand_shake(zero, nullptr)) return fail("handshake before the test connection");
  if (p.client)
    data = tools::connect(*tr, a.server, a.port, a.conn, 20, &why);  // the server re-listens
  else
    data = tools::accept(*tr, a.conn, &why);
  if (!data) return fail(("test connection: " + why).c_str());
  print_negotiated("esock_perftest", p.client ? "initiator (test)" : "responder (test)", *data);
  if (!comm.hand_shake(zero, nullptr)) return fail("handshake after the test connection");

  comm.also_progress(data.get());
  Resources res(ctx, p);
  const PingpongDest my = res.my_dest(p);
  print_info(a, *data);
  std::printf(" peer perftest version %s\n", peer_version.c_str());
  auto hs = [&](const char* what, bool last = false) {
    if (comm.hand_shake(my, &rem, last)) return true;
    std::fprintf(stderr, "esock_perftest: handshake failed: %s\n", what);
    return false;
  };
  // Exchange of the local data, then of the remote data (printed), as every test does.
  if (!hs("local dest")) return 1;
  // *_lat.c and send_bw.c shake hands twice here (send_bw.c after setting up credits).
  if ((p.lat || p.verb == Verb::send) && !hs("second local dest")) return 1;
  print_dest("local", my, p.verb);
  if (!hs("remote dest")) return 1;
  print_dest("remote", rem, p.verb);
  // write/read tests: "An additional handshake is required after moving qp to RTR."
  if (p.verb != Verb::send && !hs("after RTR")) return 1;

  int rc = 0;
  if (!p.lat) {
    BwReport mine, theirs;
    print_bw_header();
    if (p.verb == Verb::send) {
      if (!p.client && !post_initial_recvs(*data, res, p)) return 1;
      if (!hs("receives posted")) return 1;
      const bool ok = p.client ? run_bw_client(*data, res, p, rem, &mine)
                               : run_bw_server_send(*data, res, p, rem, &mine);
      if (!ok) return fail("test failed");
      print_bw_row(mine);
      std::printf("%s", result_line());
    } else {
      if (p.client && !run_bw_client(*data, res, p, rem, &mine)) return fail("test failed");
      if (!hs("test done")) return 1;
      if (!comm.xchg_bw_reports(mine, &theirs)) return fail("report exchange failed");
      print_bw_row(p.client ? mine : theirs);  // the server prints the client's numbers
      std::printf("%s", result_line());
    }
    if (!hs("close", true)) rc = 1;  // ctx_close_connection
  } else {
    std::vector<double> usec;
    if (p.verb == Verb::send) {
      if (!post_initial_recvs(*data, res, p) || !hs("receives posted")) return 1;
    }
    if (p.verb == Verb::read && !p.client) {
      if (!hs("close", true)) return 1;  // read_lat.c: only the client posts Reads
    } else {
      print_lat_header();
      if (!run_lat(*data, res, p, rem, &usec)) return fail("test failed");
      print_lat_row(p, usec);
      std::printf("%s", result_line());
      if (p.verb != Verb::write && !hs("close", true)) rc = 1;  // write_lat.c has no close
    }
  }
  std::fflush(stdout);
  // Let the peer disconnect first: a perftest side that has just posted its last message
  // sees a flush error instead of its completion when our FIN arrives before the
  // completion is reported (write_lat ends without a closing handshake).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while ((data->alive() || comm_ep->alive()) && std::chrono::steady_clock::now() < deadline) {
    if (data->alive()) data->progress(1);
    if (comm_ep->alive()) comm_ep->progress(1);
  }
  data->close(2000);
  comm_ep->close(2000);
  return rc;
}
