#include "tool_common.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace esock::tools {

ConnArgs default_conn_args() {
  ConnArgs a;
  a.mpa.revision = 2;
  a.mpa.crc = mpa::Policy::require;
  a.mpa.markers = mpa::Policy::allow;
  a.mpa.p2p = false;
  // perftest's read tests ask for max_qp_rd_atom (siw: 128) and the peer's reply decides
  // what both may use (RFC 6581 section 5); 128 keeps esock from being the narrower end.
  a.mpa.ird = a.mpa.ord = 128;
  a.qp.ird = a.qp.ord = 128;
  a.qp.sq_depth = a.qp.rq_depth = 1024;
  a.timeout_ms = 20000;
  return a;
}

const char* conn_usage() {
  return "connection: --transport ksock|dpdk  --mpa-rev 1|2  --rtr (peer-to-peer, RFC 6581)\n"
         "            --crc on|off  --markers off|require|prefer  --timeout MS\n"
         "            --first-fpdu-delay MS (initiator; stock siw 6.1 accept race)\n"
         "dpdk:       --vdev DEVARGS (e.g. net_af_packet0,iface=veth0,qdisc_bypass=1)\n"
         "            --ip A.B.C.D/NN (esock's own address on that port)  --core N\n"
         "            --file-prefix P (EAL runtime directory name; default unique)\n";
}

namespace {
[[noreturn]] void bad(const char* opt, const char* v) {
  std::fprintf(stderr, "bad value for %s: %s\n%s", opt, v, conn_usage());
  std::exit(2);
}
}  // namespace

bool parse_conn_arg(int& i, int argc, char** argv, ConnArgs& a) {
  const std::string o = argv[i];
  auto value = [&]() -> const char* {
    if (i + 1 >= argc) bad(o.c_str(), "(missing)");
    return argv[++i];
  };
  if (o == "--transport") {
    a.transport = value();
    if (a.transport != "ksock" && a.transport != "dpdk") bad("--transport", a.transport.c_str());
  } else if (o == "--vdev") {
    a.vdev = value();
  } else if (o == "--ip") {
    a.ip = value();
  } else if (o == "--core") {
    const char* v = value();
    char* end = nullptr;
    const unsigned long n = std::strtoul(v, &end, 10);
    if (end == v || *end != '\0' || n > 1023) bad("--core", v);
    a.core = static_cast<unsigned>(n);
  } else if (o == "--file-prefix") {
    a.file_prefix = value();
  } else if (o == "--mpa-rev") {
    const std::string v = value();
    if (v != "1" && v != "2") bad("--mpa-rev", v.c_str());
    a.mpa.revision = static_cast<std::uint8_t>(v[0] - '0');
  } else if (o == "--rtr") {
    a.mpa.p2p = true;
  } else if (o == "--crc") {
    const std::string v = value();
    if (v == "on")
      a.mpa.crc = mpa::Policy::require;
    else if (v == "off")
      a.mpa.crc = mpa::Policy::allow;  // C=0 in our frame; still on if the peer asks
    else
      bad("--crc", v.c_str());
  } else if (o == "--markers") {
    const std::string v = value();
    if (v == "off")
      a.markers = MarkerMode::off;
    else if (v == "require")
      a.markers = MarkerMode::require;
    else if (v == "prefer")
      a.markers = MarkerMode::prefer;
    else
      bad("--markers", v.c_str());
  } else if (o == "--first-fpdu-delay") {
    a.first_fpdu_delay_ms = std::atoi(value());
  } else if (o == "--timeout") {
    a.timeout_ms = std::atoi(value());
  } else {
    return false;
  }
  return true;
}

std::unique_ptr<Conn> connect(Transport& t, const std::string& host, std::uint16_t port,
                              const ConnArgs& a, int refused_retries, std::string* why) {
  mpa::Config cfg = a.mpa;
  cfg.markers = a.markers == MarkerMode::off ? mpa::Policy::allow : mpa::Policy::require;
  for (int attempt = 0;; ++attempt) {
    auto c = t.connect(host, port, cfg, why);
    if (c) {
      if (a.first_fpdu_delay_ms > 0) t.idle(a.first_fpdu_delay_ms);
      return c;
    }
    const bool refused = why->find("refused") != std::string::npos;
    if (refused && attempt < refused_retries) {
      t.idle(100);
      continue;
    }
    // RFC 5044 section 7.1: a responder that cannot send Markers rejects M=1 (siw does).
    const bool rejected = why->find("rejected") != std::string::npos;
    if (rejected && cfg.markers == mpa::Policy::require && a.markers == MarkerMode::prefer) {
      std::printf("MPA: markers refused by the peer (%s); connecting again without markers\n",
                  why->c_str());
      std::fflush(stdout);
      cfg.markers = mpa::Policy::allow;
      continue;
    }
    if (rejected && cfg.markers == mpa::Policy::require)
      *why += " (markers were required: the peer has none; use --markers prefer to fall back)";
    return nullptr;
  }
}

std::unique_ptr<Conn> accept(Transport& t, const ConnArgs& a, std::string* why) {
  mpa::Config cfg = a.mpa;
  cfg.markers = a.markers == MarkerMode::off ? mpa::Policy::allow : mpa::Policy::require;
  return t.accept(cfg, why);
}

void print_negotiated(const char* tool, const char* role, const Conn& c) {
  const mpa::Negotiated& n = c.negotiated();
  std::printf(
      "%s: MPA %s: revision %u, CRC %s, markers tx %s rx %s, IRD %u ORD %u, p2p %s, "
      "RTR %s\n",
      tool, role, n.revision, n.crc ? "on" : "off", n.markers_tx ? "on" : "off",
      n.markers_rx ? "on" : "off", n.ird, n.ord, n.p2p ? "yes" : "no", mpa::to_string(n.rtr));
  std::fflush(stdout);
}

const char* to_string(ddp::Status s) {
  switch (s) {
    case ddp::Status::success:
      return "success";
    case ddp::Status::local_length_error:
      return "local length error";
    case ddp::Status::local_protection_error:
      return "local protection error";
    case ddp::Status::local_qp_operation_error:
      return "local QP operation error";
    case ddp::Status::remote_access_error:
      return "remote access error";
    case ddp::Status::remote_operation_error:
      return "remote operation error";
    case ddp::Status::remote_invalid_request_error:
      return "remote invalid request error";
    case ddp::Status::flushed:
      return "flushed";
    case ddp::Status::general_error:
      return "general error";
  }
  return "?";
}

namespace {
bool check(Conn& ep, bool got, const ddp::Completion& c, const char* what) {
  if (!got) {
    std::fprintf(stderr, "%s: no completion (%s)\n", what,
                 ep.error().empty() ? "timeout" : ep.error().c_str());
    return false;
  }
  if (c.status != ddp::Status::success) {
    std::fprintf(stderr, "%s: completion status %s (%s)\n", what, to_string(c.status),
                 ep.error().c_str());
    return false;
  }
  return true;
}
}  // namespace

bool wait_send_ok(Conn& ep, const char* what, int timeout_ms) {
  ddp::Completion c{};
  return check(ep, ep.wait_send(c, timeout_ms), c, what);
}

bool flushed_by_peer_close(const Conn& c, const ddp::Completion& done) {
  return done.status == ddp::Status::flushed && !c.alive() && c.error().empty();
}

bool wait_last_send_ok(Conn& ep, const char* what, int timeout_ms) {
  ddp::Completion c{};
  const bool got = ep.wait_send(c, timeout_ms);
  if (got && flushed_by_peer_close(ep, c)) {
    std::fprintf(stderr, "%s: flushed by the peer's close that answered it (counted as sent)\n",
                 what);
    return true;
  }
  return check(ep, got, c, what);
}

bool wait_recv_ok(Conn& ep, const char* what, int timeout_ms, ddp::Completion* out) {
  ddp::Completion c{};
  const bool ok = check(ep, ep.wait_recv(c, timeout_ms), c, what);
  if (out) *out = c;
  return ok;
}

}  // namespace esock::tools
