#include "tool_common.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace esock::tools {

ConnArgs default_conn_args() {
  ConnArgs a;
  a.opts.mpa.revision = 2;
  a.opts.mpa.crc = mpa::Policy::require;
  a.opts.mpa.markers = mpa::Policy::allow;
  a.opts.mpa.p2p = false;
  // perftest's read tests ask for max_qp_rd_atom (siw: 128) and the peer's reply decides
  // what both may use (RFC 6581 section 5); 128 keeps esock from being the narrower end.
  a.opts.mpa.ird = a.opts.mpa.ord = 128;
  a.opts.qp.ird = a.opts.qp.ord = 128;
  a.opts.qp.sq_depth = a.opts.qp.rq_depth = 1024;
  a.opts.timeout_ms = 20000;
  return a;
}

const char* conn_usage() {
  return "connection: --transport ksock  --mpa-rev 1|2  --rtr (peer-to-peer, RFC 6581)\n"
         "            --crc on|off  --markers off|require|prefer  --timeout MS\n"
         "            --first-fpdu-delay MS (initiator; stock siw 6.1 accept race)\n";
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
    if (a.transport != "ksock") bad("--transport", a.transport.c_str());
  } else if (o == "--mpa-rev") {
    const std::string v = value();
    if (v != "1" && v != "2") bad("--mpa-rev", v.c_str());
    a.opts.mpa.revision = static_cast<std::uint8_t>(v[0] - '0');
  } else if (o == "--rtr") {
    a.opts.mpa.p2p = true;
  } else if (o == "--crc") {
    const std::string v = value();
    if (v == "on")
      a.opts.mpa.crc = mpa::Policy::require;
    else if (v == "off")
      a.opts.mpa.crc = mpa::Policy::allow;  // C=0 in our frame; still on if the peer asks
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
    a.opts.timeout_ms = std::atoi(value());
  } else {
    return false;
  }
  return true;
}

std::unique_ptr<ksock::Endpoint> connect(ksock::Context& ctx, const std::string& host,
                                         std::uint16_t port, const ConnArgs& a, int refused_retries,
                                         std::string* why) {
  ksock::Options o = a.opts;
  o.mpa.markers = a.markers == MarkerMode::off ? mpa::Policy::allow : mpa::Policy::require;
  for (int attempt = 0;; ++attempt) {
    auto ep = ksock::Endpoint::connect(ctx, host, port, o, why);
    if (ep) {
      if (a.first_fpdu_delay_ms > 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(a.first_fpdu_delay_ms));
      return ep;
    }
    const bool refused = why->find("refused") != std::string::npos;
    if (refused && attempt < refused_retries) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    // RFC 5044 section 7.1: a responder that cannot send Markers rejects M=1 (siw does).
    const bool rejected = why->find("rejected") != std::string::npos;
    if (rejected && o.mpa.markers == mpa::Policy::require && a.markers == MarkerMode::prefer) {
      std::printf("MPA: markers refused by the peer (%s); connecting again without markers\n",
                  why->c_str());
      std::fflush(stdout);
      o.mpa.markers = mpa::Policy::allow;
      continue;
    }
    if (rejected && o.mpa.markers == mpa::Policy::require)
      *why += " (markers were required: the peer has none; use --markers prefer to fall back)";
    return nullptr;
  }
}

std::unique_ptr<ksock::Endpoint> accept(ksock::Listener& l, ksock::Context& ctx, const ConnArgs& a,
                                        std::string* why) {
  ksock::Options o = a.opts;
  o.mpa.markers = a.markers == MarkerMode::off ? mpa::Policy::allow : mpa::Policy::require;
  return l.accept(ctx, o, why);
}

void print_negotiated(const char* tool, const char* role, const ksock::Endpoint& ep) {
  const mpa::Negotiated& n = ep.negotiated();
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
bool check(ksock::Endpoint& ep, bool got, const ddp::Completion& c, const char* what) {
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

bool wait_send_ok(ksock::Endpoint& ep, const char* what, int timeout_ms) {
  ddp::Completion c{};
  return check(ep, ep.wait_send(c, timeout_ms), c, what);
}

bool wait_recv_ok(ksock::Endpoint& ep, const char* what, int timeout_ms, ddp::Completion* out) {
  ddp::Completion c{};
  const bool ok = check(ep, ep.wait_recv(c, timeout_ms), c, what);
  if (out) *out = c;
  return ok;
}

}  // namespace esock::tools
