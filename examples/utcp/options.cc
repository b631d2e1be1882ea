#include "options.h"

#include "cli_parse.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace esock::utcp::tool {

const char* to_string(Op o) {
  switch (o) {
    case Op::send:
      return "send";
    case Op::write:
      return "write";
    case Op::read:
      return "read";
  }
  return "?";
}

const char* to_string(Mode m) {
  return m == Mode::bw ? "bw" : "lat";
}

namespace {

using tools::cli::parse_double;
using tools::cli::parse_port;
using tools::cli::parse_u64;

void usage(std::FILE* f) {
  std::fputs(
      "usage: esock_iwarp --vdev VDEV --ip A.B.C.D/24 [--core N] [--file-prefix P] [--mtu N]\n"
      "                   (--listen PORT | --connect A.B.C.D:PORT)\n"
      "                   --op send|write|read --mode bw|lat --size BYTES\n"
      "                   (--iters N | --bytes TOTAL) [--depth N]\n"
      "                   [--markers on|off] [--crc on|off] [--placement on|off]\n"
      "                   [--loss P] [--reorder P] [--seed S] [--verify]\n"
      "                   [--idle-sleep-us N] [--busy] [--timeout SECONDS] [--pcap FILE]\n"
      "iWARP (RDMAP/DDP/MPA) over esock's own TCP on one DPDK port. The client drives; the\n"
      "server answers and takes op/mode/size/iters/depth from the client's first message.\n"
      "  bw:  --depth outstanding work requests, one direction\n"
      "  lat: ping-pong (send: Send both ways; write: Write + 4-octet Send doorbell both\n"
      "       ways; read: one Read at a time); rtt_* is the full round trip\n"
      "  --loss/--reorder P: percent of frames, both directions of this process's port\n"
      "  --verify: seeded pattern, every octet checked at the end (exit 1 if not equal)\n"
      "  sizes take suffixes k, m, g (powers of 1024)\n"
      "Prints one line 'RESULT key=value ...'; exit 0 only when the run completed (and\n"
      "verified, with --verify).\n",
      f);
}

bool parse_on_off(std::string_view s, bool* out) {
  if (s == "on") return *out = true, true;
  if (s == "off") return *out = false, true;
  return false;
}

}  // namespace

std::optional<Options> parse_options(int argc, char** argv, int* exit_code) {
  Options o;
  *exit_code = 2;
  bool have_ip = false, have_role = false, have_op = false, have_mode = false;
  std::optional<std::uint64_t> bytes;
  auto fail = [&](const std::string& msg) -> std::optional<Options> {
    std::fprintf(stderr, "esock_iwarp: %s\n", msg.c_str());
    usage(stderr);
    return std::nullopt;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    auto bad = [&](const char* v) {
      return fail("bad value for " + std::string(a) + ": " + (v ? v : "(missing)"));
    };
    std::uint64_t n = 0;
    if (a == "-h" || a == "--help") {
      usage(stdout);
      *exit_code = 0;
      return std::nullopt;
    }
    if (a == "--verify" || a == "--busy") {
      (a == "--verify" ? o.verify : o.busy) = true;
      continue;
    }
    const char* v = value();
    if (v == nullptr) return bad(v);
    const std::string_view s = v;
    if (a == "--vdev") {
      if (s.empty()) return bad(v);
      o.vdev = v;
    } else if (a == "--ip") {
      if (!tools::cli::parse_cidr(s, &o.ip, &o.prefix_len, 24)) return bad(v);
      have_ip = true;
    } else if (a == "--core" || a == "--mtu" || a == "--idle-sleep-us") {
      if (!parse_u64(s, &n, false) || n > 1000000) return bad(v);
      if (a == "--core") o.core = static_cast<unsigned>(n);
      if (a == "--idle-sleep-us") o.idle_sleep_us = static_cast<std::uint32_t>(n);
      if (a == "--mtu") {
        if (n < 576 || n > 65000) return bad(v);
        o.mtu = static_cast<std::uint16_t>(n);
      }
    } else if (a == "--file-prefix" || a == "--pcap") {
      if (s.empty()) return bad(v);
      (a == "--pcap" ? o.pcap : o.file_prefix) = v;
    } else if (a == "--listen") {
      if (have_role || !parse_port(s, &o.port)) return bad(v);
      o.listen = have_role = true;
    } else if (a == "--connect") {
      const auto colon = s.rfind(':');
      if (have_role || colon == std::string_view::npos ||
          !tcp::Ipv4Addr::parse(std::string(s.substr(0, colon)), &o.peer) ||
          !parse_port(s.substr(colon + 1), &o.port))
        return bad(v);
      have_role = true;
    } else if (a == "--op") {
      if (s == "send")
        o.op = Op::send;
      else if (s == "write")
        o.op = Op::write;
      else if (s == "read")
        o.op = Op::read;
      else
        return bad(v);
      have_op = true;
    } else if (a == "--mode") {
      if (s == "bw")
        o.mode = Mode::bw;
      else if (s == "lat")
        o.mode = Mode::lat;
      else
        return bad(v);
      have_mode = true;
    } else if (a == "--size") {
      // RDMAP messages are at most 2^32-1 octets (RFC 5040 section 4.4); 1 GiB is plenty.
      if (!parse_u64(s, &n, true) || n == 0 || n > (1u << 30)) return bad(v);
      o.size = static_cast<std::uint32_t>(n);
    } else if (a == "--iters") {
      if (!parse_u64(s, &o.iters, true) || o.iters == 0) return bad(v);
    } else if (a == "--bytes") {
      if (!parse_u64(s, &n, true) || n == 0) return bad(v);
      bytes = n;
    } else if (a == "--depth") {
      if (!parse_u64(s, &n, false) || n == 0 || n > 1024) return bad(v);
      o.depth = static_cast<std::uint32_t>(n);
    } else if (a == "--markers" || a == "--crc" || a == "--placement") {
      bool* b = a == "--markers" ? &o.markers : a == "--crc" ? &o.crc : &o.placement;
      if (!parse_on_off(s, b)) return bad(v);
    } else if (a == "--loss" || a == "--reorder") {
      if (!parse_double(s, a == "--loss" ? &o.loss_pct : &o.reorder_pct, 0, 100)) return bad(v);
    } else if (a == "--seed") {
      if (!parse_u64(s, &o.seed, false)) return bad(v);
    } else if (a == "--timeout") {
      if (!parse_double(s, &o.timeout_s, 0.1, 86400)) return bad(v);
    } else {
      return fail("unknown argument: " + std::string(a));
    }
  }
  if (o.vdev.empty()) return fail("--vdev is required");
  if (!have_ip) return fail("--ip is required");
  if (!have_role) return fail("--listen PORT or --connect A.B.C.D:PORT is required");
  if (bytes && o.iters) return fail("--iters and --bytes exclude each other");
  if (!o.listen) {
    // The client drives: it needs the whole workload. The server learns it from the client.
    if (!have_op || !have_mode || o.size == 0 || (!bytes && !o.iters))
      return fail("the client needs --op, --mode, --size and --iters or --bytes");
  }
  if (bytes && o.size) o.iters = (*bytes + o.size - 1) / o.size;
  *exit_code = 0;
  return o;
}

}  // namespace esock::utcp::tool
