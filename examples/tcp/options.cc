#include "options.h"

#include "cli_parse.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace esock::tcp::tool {
namespace {

using tools::cli::parse_cidr;
using tools::cli::parse_double;
using tools::cli::parse_port;
using tools::cli::parse_u64;

void usage(std::FILE* f) {
  std::fputs(
      "usage: esock_tcp --vdev DEVARGS --ip A.B.C.D/N [--gw A.B.C.D] [options]\n"
      "                 (listen PORT | connect A.B.C.D PORT)\n"
      "transfer:\n"
      "  --send N          send N bytes (suffixes k, m, g: powers of 1024), then FIN\n"
      "  --recv            receive until the peer's FIN (with --send: both at once)\n"
      "  --echo            send back what arrives, FIN after the peer's FIN\n"
      "  --pattern P       prng (seeded splitmix64 stream, default) or counter\n"
      "  --abort-after N   reset the connection (RST) once N bytes were sent or received\n"
      "  --expect-reset    succeed only when the peer resets the connection\n"
      "faults and capture:\n"
      "  --loss P --reorder P   probability per frame, both directions (0..1)\n"
      "  --seed S          seeds the fault injector and the prng pattern (default 1)\n"
      "  --pcap FILE       capture what the stack sends and receives\n"
      "  --pcap-snaplen N  bytes kept per captured frame (default: whole frames)\n"
      "runtime:\n"
      "  --core N          DPDK lcore to poll on (default 0)\n"
      "  --file-prefix P   EAL runtime directory name (default: unique)\n"
      "  --mtu N           port MTU (default: the port's)\n"
      "  --idle-sleep-us N sleep this long when idle (0: busy poll; default 50)\n"
      "  --timeout S --connect-timeout S --link-timeout S --linger S\n"
      "Exit status 0 only when the transfer completed and the stream ended cleanly (or with\n"
      "the RST that --abort-after / --expect-reset asked for).\n",
      f);
}

}  // namespace

std::optional<Options> parse_options(int argc, char** argv, int* exit_code) {
  Options o;
  *exit_code = 2;
  bool have_ip = false, have_mode = false;
  auto fail = [&](const std::string& msg) -> std::optional<Options> {
    std::fprintf(stderr, "esock_tcp: %s\n", msg.c_str());
    usage(stderr);
    return std::nullopt;
  };
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    auto bad = [&](const char* v) {
      return fail("bad value for " + std::string(a) + ": " + (v ? v : "(missing)"));
    };
    std::uint64_t n = 0;
    if (a == "-h" || a == "--help") {
      usage(stdout);
      *exit_code = 0;
      return std::nullopt;
    } else if (a == "--vdev") {
      const char* v = value();
      if (!v || !*v) return bad(v);
      o.vdev = v;
    } else if (a == "--ip") {
      const char* v = value();
      if (!v || !parse_cidr(v, &o.ip, &o.prefix_len)) return bad(v);
      have_ip = true;
    } else if (a == "--gw") {
      const char* v = value();
      if (!v || !Ipv4Addr::parse(v, &o.gateway)) return bad(v);
    } else if (a == "--core" || a == "--mtu" || a == "--pcap-snaplen" || a == "--idle-sleep-us") {
      const char* v = value();
      if (!v || !parse_u64(v, &n, false) || n > 65535 * 16) return bad(v);
      if (a == "--core") o.core = static_cast<unsigned>(n);
      if (a == "--mtu") {
        if (n < 576 || n > 9000) return bad(v);
        o.mtu = static_cast<std::uint16_t>(n);
      }
      if (a == "--pcap-snaplen") o.pcap_snaplen = static_cast<std::uint32_t>(n);
      if (a == "--idle-sleep-us") o.idle_sleep_us = static_cast<std::uint32_t>(n);
    } else if (a == "--file-prefix" || a == "--pcap") {
      const char* v = value();
      if (!v || !*v) return bad(v);
      (a == "--pcap" ? o.pcap : o.file_prefix) = v;
    } else if (a == "--send" || a == "--abort-after") {
      const char* v = value();
      if (!v || !parse_u64(v, &n, true)) return bad(v);
      (a == "--send" ? o.send : o.abort_after) = n;
    } else if (a == "--seed") {
      const char* v = value();
      if (!v || !parse_u64(v, &o.seed, false)) return bad(v);
    } else if (a == "--recv") {
      o.recv = true;
    } else if (a == "--echo") {
      o.echo = true;
    } else if (a == "--expect-reset") {
      o.expect_reset = true;
    } else if (a == "--pattern") {
      const char* v = value();
      if (v && std::strcmp(v, "prng") == 0)
        o.pattern = Pattern::prng;
      else if (v && std::strcmp(v, "counter") == 0)
        o.pattern = Pattern::counter;
      else
        return bad(v);
    } else if (a == "--loss" || a == "--reorder") {
      const char* v = value();
      if (!v || !parse_double(v, a == "--loss" ? &o.loss : &o.reorder, 0, 1)) return bad(v);
    } else if (a == "--timeout" || a == "--connect-timeout" || a == "--link-timeout" ||
               a == "--linger") {
      const char* v = value();
      double* d = a == "--timeout"           ? &o.timeout_s
                  : a == "--connect-timeout" ? &o.connect_timeout_s
                  : a == "--link-timeout"    ? &o.link_timeout_s
                                             : &o.linger_s;
      if (!v || !parse_double(v, d, 0, 86400)) return bad(v);
    } else if (a == "listen" && !have_mode) {
      const char* v = value();
      if (!v || !parse_port(v, &o.port)) return bad(v);
      o.listen = have_mode = true;
    } else if (a == "connect" && !have_mode) {
      const char* ip = value();
      if (!ip || !Ipv4Addr::parse(ip, &o.peer)) return bad(ip);
      const char* v = value();
      if (!v || !parse_port(v, &o.port)) return bad(v);
      have_mode = true;
    } else {
      return fail("unknown argument: " + std::string(a));
    }
  }
  if (o.vdev.empty()) return fail("--vdev is required");
  if (!have_ip) return fail("--ip is required");
  if (!have_mode) return fail("listen PORT or connect IP PORT is required");
  if (o.echo && o.send) return fail("--echo and --send exclude each other");
  if (!o.send && !o.recv && !o.echo && !o.expect_reset)
    return fail("nothing to do: give --send N, --recv, --echo or --expect-reset");
  *exit_code = 0;
  return o;
}

}  // namespace esock::tcp::tool
