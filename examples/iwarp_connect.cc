// iwarp_connect: establishes one iWARP connection and reports what MPA negotiated: the
// smallest check that a peer (another esock, Linux siw, an RNIC) accepts esock's MPA.
//
//   iwarp_connect connect HOST PORT [options]   # esock is the MPA initiator
//   iwarp_connect accept ADDR PORT [options]    # esock is the MPA responder
//
// After the exchange the initiator closes at once; the responder waits for the initiator's
// first FPDU (RFC 5044 section 7.1 makes the initiator speak first), reports it and closes.
// With --exchange N the initiator sends one N-octet Send and waits for one Send back; the
// responder answers the first Send with one of the same length (what rdma-core's
// rdma_client and rdma_server do).
// Options: --mpa-rev 1|2  --markers  --refuse-markers  --no-crc  --p2p  --rtr send|write|read
//          --ird N --ord N  --timeout MS
// Exit status: 0 when the connection was established (and, accepting, a first message came).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "esock/ksock/endpoint.h"

using namespace esock;

namespace {

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: iwarp_connect connect HOST PORT [options]\n"
               "       iwarp_connect accept ADDR PORT [options]\n"
               "options: --mpa-rev 1|2 --markers --refuse-markers --no-crc --p2p\n"
               "         --rtr send|write|read --ird N --ord N --timeout MS\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) usage();
  const std::string role = argv[1], host = argv[2];
  const auto port = static_cast<std::uint16_t>(std::atoi(argv[3]));
  if (role != "connect" && role != "accept") usage();
  ksock::Options o;
  std::size_t send_len = 0;
  o.mpa.crc = mpa::Policy::require;
  for (int i = 4; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) usage();
      return argv[++i];
    };
    if (a == "--mpa-rev")
      o.mpa.revision = static_cast<std::uint8_t>(std::atoi(next()));
    else if (a == "--markers")
      o.mpa.markers = mpa::Policy::require;
    else if (a == "--refuse-markers")
      o.mpa.markers = mpa::Policy::refuse;
    else if (a == "--no-crc")
      o.mpa.crc = mpa::Policy::allow;
    else if (a == "--p2p")
      o.mpa.p2p = true;
    else if (a == "--rtr") {
      const std::string t = next();
      o.mpa.rtr_send = t == "send";
      o.mpa.rtr_write = t == "write";
      o.mpa.rtr_read = t == "read";
    } else if (a == "--ird")
      o.mpa.ird = static_cast<std::uint16_t>(std::atoi(next()));
    else if (a == "--ord")
      o.mpa.ord = static_cast<std::uint16_t>(std::atoi(next()));
    else if (a == "--timeout")
      o.timeout_ms = std::atoi(next());
    else if (a == "--exchange")
      send_len = static_cast<std::size_t>(std::atoi(next()));
    else
      usage();
  }

  ksock::Context ctx;
  std::string why;
  std::unique_ptr<ksock::Listener> listener;
  std::unique_ptr<ksock::Endpoint> ep;
  if (role == "connect") {
    ep = ksock::Endpoint::connect(ctx, host, port, o, &why);
  } else {
    listener = ksock::Listener::listen(host, port, &why);
    if (listener) {
      std::printf("listening on %s:%u\n", host.c_str(), listener->port());
      std::fflush(stdout);
      ep = listener->accept(ctx, o, &why);
    }
  }
  if (!ep) {
    std::printf("MPA: not established: %s\n", why.c_str());
    return 1;
  }
  const mpa::Negotiated& n = ep->negotiated();
  std::printf(
      "MPA: established as %s: revision %u, CRC %s, markers tx %s rx %s, IRD %u ORD %u, "
      "p2p %s, RTR %s, peer private data %zu octets\n",
      role == "connect" ? "initiator" : "responder", n.revision, n.crc ? "on" : "off",
      n.markers_tx ? "on" : "off", n.markers_rx ? "on" : "off", n.ird, n.ord, n.p2p ? "yes" : "no",
      mpa::to_string(n.rtr), n.peer_private_data.size());

  int rc = 0;
  std::vector<std::uint8_t> rx(65536), tx(65536, 0x5a);
  const auto rx_key = ctx.reg_mr(rx.data(), rx.size(), ddp::access_local_write);
  const auto tx_key = ctx.reg_mr(tx.data(), tx.size(), 0);
  ddp::Sge rx_sge{rx.data(), static_cast<std::uint32_t>(rx.size()), rx_key};
  auto send = [&](std::size_t len) {
    ddp::Sge sge{tx.data(), static_cast<std::uint32_t>(len), tx_key};
    ddp::Completion c{};
    const bool ok = ep->post_send(1, {&sge, 1}) == 0 && ep->wait_send(c, o.timeout_ms) &&
                    c.status == ddp::Status::success;
    std::printf("sent one Send of %zu octets: %s\n", len, ok ? "ok" : ep->error().c_str());
    return ok;
  };
  auto receive = [&](std::uint32_t* len) {
    ddp::Completion c{};
    const bool ok = ep->wait_recv(c, o.timeout_ms) && c.status == ddp::Status::success;
    if (ok) *len = c.byte_len;
    std::printf("received one Send: %s (%u octets)\n", ok ? "ok" : "none", ok ? c.byte_len : 0);
    return ok;
  };
  ep->post_recv(1, {&rx_sge, 1});
  std::uint32_t got = 0;
  if (role == "connect" && send_len > 0) {
    rc = send(send_len) && receive(&got) ? 0 : 1;
  } else if (role == "accept") {
    rc = receive(&got) && (send_len == 0 || send(got)) ? 0 : 1;
  }
  std::printf("FPDUs sent %llu, received %llu\n",
              static_cast<unsigned long long>(ep->connection().stats().fpdus_tx),
              static_cast<unsigned long long>(ep->connection().stats().fpdus_rx));
  ep->close(200);
  return rc;
}
