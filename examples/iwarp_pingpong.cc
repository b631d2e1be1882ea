// iwarp_pingpong: an iWARP server and client over the kernel-socket transport.
//
//   terminal 1:  iwarp_pingpong server --port 7174
//   terminal 2:  iwarp_pingpong client 127.0.0.1 --port 7174
//
// The client sends first (MPA's responder waits for the initiator's first FPDU), the server
// answers with an advertisement of a registered buffer (STag, TO, length). Then:
//   1. Send/Receive ping-pong for several sizes, round-trip times reported as p50/p99;
//   2. RDMA Write bandwidth into the server's buffer, a window of writes in flight;
//   3. RDMA Read bandwidth from it, and a byte-for-byte check of what was written;
//   4. a "bye" Send, and an orderly close.
// Options choose the MPA revision, markers, CRC and peer-to-peer mode (RFC 6581 RTR).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/endian.h"
#include "esock/ksock/endpoint.h"

using esock::ddp::Completion;
using esock::ddp::Sge;
using esock::ksock::Context;
using esock::ksock::Endpoint;
using esock::ksock::Options;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
  bool server = false;
  std::string host = "127.0.0.1";
  std::uint16_t port = 7174;
  Options opts;
  int iters = 1000;
  std::vector<std::size_t> sizes = {64, 1024, 4096, 65536};
  std::size_t region = 4 << 20;    // the server's RDMA buffer
  std::size_t bw_chunk = 1 << 20;  // bytes per RDMA Write/Read
  std::size_t bw_total = 256 << 20;
  int window = 8;
  bool once = true;  // server: exit after one client
};

constexpr std::size_t max_msg = 65536;
constexpr int recv_ring = 16;
constexpr int timeout_ms = 10000;

[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "iwarp_pingpong: %s\n", msg.c_str());
  std::exit(1);
}

void usage() {
  std::fprintf(stderr,
               "usage: iwarp_pingpong server [--bind ADDR] [--port N] [--forever] [options]\n"
               "       iwarp_pingpong client HOST [--port N] [options]\n"
               "options: --mpa-rev 1|2  --markers  --no-crc  --p2p  --rtr send|write|read\n"
               "         --iters N  --sizes 64,1024,...  --bw-chunk BYTES  --bw-total BYTES\n"
               "         --window N\n");
  std::exit(2);
}

std::size_t parse_size(const char* s) {
  char* end = nullptr;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (end == s) usage();
  if (*end == 'k' || *end == 'K') v <<= 10;
  if (*end == 'm' || *end == 'M') v <<= 20;
  return static_cast<std::size_t>(v);
}

Args parse(int argc, char** argv) {
  Args a;
  if (argc < 2) usage();
  std::string role = argv[1];
  int i = 2;
  if (role == "server") {
    a.server = true;
    a.host = "0.0.0.0";
  } else if (role == "client" && argc >= 3) {
    a.host = argv[2];
    i = 3;
  } else {
    usage();
  }
  a.opts.mpa.markers = esock::mpa::Policy::allow;
  a.opts.mpa.crc = esock::mpa::Policy::require;
  for (; i < argc; ++i) {
    std::string o = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) usage();
      return argv[++i];
    };
    if (o == "--port")
      a.port = static_cast<std::uint16_t>(std::atoi(next()));
    else if (o == "--bind")
      a.host = next();
    else if (o == "--forever")
      a.once = false;
    else if (o == "--mpa-rev")
      a.opts.mpa.revision = static_cast<std::uint8_t>(std::atoi(next()));
    else if (o == "--markers")
      a.opts.mpa.markers = esock::mpa::Policy::require;
    else if (o == "--no-crc")
      a.opts.mpa.crc = esock::mpa::Policy::allow;
    else if (o == "--p2p")
      a.opts.mpa.p2p = true;
    else if (o == "--rtr") {
      std::string t = next();
      a.opts.mpa.rtr_send = t == "send";
      a.opts.mpa.rtr_write = t == "write";
      a.opts.mpa.rtr_read = t == "read";
    } else if (o == "--iters")
      a.iters = std::atoi(next());
    else if (o == "--sizes") {
      a.sizes.clear();
      std::string list = next();
      for (std::size_t p = 0; p < list.size();) {
        std::size_t q = list.find(',', p);
        if (q == std::string::npos) q = list.size();
        a.sizes.push_back(parse_size(list.substr(p, q - p).c_str()));
        p = q + 1;
      }
    } else if (o == "--bw-chunk")
      a.bw_chunk = parse_size(next());
    else if (o == "--bw-total")
      a.bw_total = parse_size(next());
    else if (o == "--window")
      a.window = std::atoi(next());
    else
      usage();
  }
  for (std::size_t s : a.sizes)
    if (s < 1 || s > max_msg) die("ping-pong sizes must be 1.." + std::to_string(max_msg));
  if (a.bw_chunk == 0 || a.bw_chunk > a.region)
    die("--bw-chunk must be 1.." + std::to_string(a.region));
  return a;
}

void print_negotiated(const char* who, Endpoint& ep) {
  const auto& n = ep.negotiated();
  std::printf("%s: MPA revision %u, markers tx %s / rx %s, CRC32c %s, IRD %u ORD %u, RTR %s\n", who,
              n.revision, n.markers_tx ? "on" : "off", n.markers_rx ? "on" : "off",
              n.crc ? "on" : "off", n.ird, n.ord, esock::mpa::to_string(n.rtr));
}

void print_stats(const char* who, Endpoint& ep) {
  const auto& s = ep.connection().stats();
  std::printf("%s: FPDUs sent %llu, received %llu\n", who,
              static_cast<unsigned long long>(s.fpdus_tx),
              static_cast<unsigned long long>(s.fpdus_rx));
}

// Why a connection stopped: the transport's error and any Terminate sent or received.
std::string describe(Endpoint& ep) {
  std::string s;
  if (!ep.error().empty()) s += " (" + ep.error() + ")";
  if (auto t = ep.connection().qp().terminate_cause()) {
    s += " Terminate " +
         std::string(ep.connection().qp().terminate_received() ? "received" : "sent") + ": layer " +
         std::to_string(t->layer) + " type " + std::to_string(t->type) + " code " +
         std::to_string(t->code);
  }
  return s;
}

Completion wait_ok(Endpoint& ep, bool send_queue, const char* what) {
  Completion c{};
  bool got = send_queue ? ep.wait_send(c, timeout_ms) : ep.wait_recv(c, timeout_ms);
  if (!got) die(std::string("no completion for ") + what + describe(ep));
  if (c.status != esock::ddp::Status::success)
    die(std::string(what) + " failed with status " + std::to_string(static_cast<int>(c.status)));
  return c;
}

// Registered memory for messages: a ring of receive slots and one send slot.
struct Buffers {
  Buffers(Context& ctx)
      : rx(recv_ring * max_msg),
        tx(max_msg),
        rx_key(ctx.reg_mr(rx.data(), rx.size(), esock::ddp::access_local_write)),
        tx_key(ctx.reg_mr(tx.data(), tx.size(), 0)) {
    if (!rx_key || !tx_key) die("memory registration failed");
  }
  std::uint8_t* slot(std::uint64_t i) { return rx.data() + i * max_msg; }
  void post(Endpoint& ep, std::uint64_t i) {
    Sge s{slot(i), static_cast<std::uint32_t>(max_msg), rx_key};
    if (ep.post_recv(i, {&s, 1}) != 0) die("post_recv failed");
  }
  void send(Endpoint& ep, std::size_t len, std::uint64_t wr_id) {
    Sge s{tx.data(), static_cast<std::uint32_t>(len), tx_key};
    if (int rc = ep.post_send(wr_id, {&s, 1}); rc != 0)
      die("post_send: " + std::string(std::strerror(rc)));
  }
  std::vector<std::uint8_t> rx, tx;
  esock::ddp::stag_t rx_key, tx_key;
};

int run_server(const Args& a) {
  std::string why;
  auto listener = esock::ksock::Listener::listen(a.host, a.port, &why);
  if (!listener) die(why);
  std::printf("server: listening on %s:%u\n", a.host.c_str(), listener->port());
  std::fflush(stdout);
  Context ctx;
  Buffers buf(ctx);
  std::vector<std::uint8_t> region(a.region);
  const auto rkey = ctx.reg_mr(region.data(), region.size(),
                               esock::ddp::access_local_write | esock::ddp::access_remote_write |
                                   esock::ddp::access_remote_read);
  do {
    Options opts = a.opts;
    opts.timeout_ms = 600000;  // wait long for a client to connect
    auto ep = listener->accept(ctx, opts, &why);
    if (!ep) {
      std::fprintf(stderr, "server: connection failed: %s\n", why.c_str());
      if (a.once) return 1;
      continue;
    }
    print_negotiated("server", *ep);
    for (int i = 0; i < recv_ring; ++i) buf.post(*ep, static_cast<std::uint64_t>(i));
    std::uint64_t sends = 0;
    for (bool done = false; !done;) {
      Completion c{};
      if (!ep->wait_recv(c, 600000)) die("server: connection lost" + describe(*ep));
      if (c.status != esock::ddp::Status::success)
        die("server: receive failed, status " + std::to_string(static_cast<int>(c.status)) +
            describe(*ep));
      const std::uint8_t* m = buf.slot(c.wr_id);
      switch (c.byte_len ? m[0] : 0) {
        case 'H':  // hello: advertise the RDMA region
          buf.tx[0] = 'A';
          esock::store_be32(&buf.tx[4], rkey);
          esock::store_be64(&buf.tx[8], reinterpret_cast<std::uint64_t>(region.data()));
          esock::store_be64(&buf.tx[16], region.size());
          buf.send(*ep, 24, sends++);
          break;
        case 'P':  // ping: echo the same number of octets
          std::memcpy(buf.tx.data(), m, c.byte_len);
          buf.send(*ep, c.byte_len, sends++);
          break;
        case 'B':
          done = true;
          break;
        default:
          die("server: unexpected message");
      }
      buf.post(*ep, c.wr_id);
      Completion sc{};
      while (ep->poll_send_cq({&sc, 1}) == 1) {
        if (sc.status != esock::ddp::Status::success) die("server: send failed");
      }
    }
    print_stats("server", *ep);
    ep->close();
    std::printf("server: client done, connection closed\n");
    std::fflush(stdout);
  } while (!a.once);
  return 0;
}

double mbps(std::size_t bytes, Clock::duration d) {
  return static_cast<double>(bytes) * 8 / 1e6 / std::chrono::duration<double>(d).count();
}

int run_client(const Args& a) {
  Context ctx;
  Buffers buf(ctx);
  std::string why;
  auto ep = Endpoint::connect(ctx, a.host, a.port, a.opts, &why);
  if (!ep) die(why);
  print_negotiated("client", *ep);
  for (int i = 0; i < recv_ring; ++i) buf.post(*ep, static_cast<std::uint64_t>(i));

  // Hello -> advertisement of the server's region.
  buf.tx[0] = 'H';
  buf.send(*ep, 1, 0);
  wait_ok(*ep, true, "hello");
  Completion adv = wait_ok(*ep, false, "advertisement");
  const std::uint8_t* m = buf.slot(adv.wr_id);
  if (adv.byte_len != 24 || m[0] != 'A') die("bad advertisement");
  const auto rkey = esock::load_be32(m + 4);
  const auto rto = esock::load_be64(m + 8);
  const auto rlen = esock::load_be64(m + 16);
  buf.post(*ep, adv.wr_id);
  std::printf("client: server region STag 0x%08x TO 0x%llx length %llu\n", rkey,
              static_cast<unsigned long long>(rto), static_cast<unsigned long long>(rlen));

  // 1. Send/Receive ping-pong.
  std::printf("\nping-pong (Send/Receive), %d round trips each\n", a.iters);
  std::printf("%10s %12s %12s\n", "size", "RTT p50 us", "RTT p99 us");
  for (std::size_t size : a.sizes) {
    std::vector<double> rtt;
    rtt.reserve(static_cast<std::size_t>(a.iters));
    for (int i = 0; i < a.iters; ++i) {
      buf.tx[0] = 'P';
      const auto t0 = Clock::now();
      buf.send(*ep, size, 1);
      Completion r = wait_ok(*ep, false, "pong");
      rtt.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      if (r.byte_len != size) die("pong has the wrong size");
      buf.post(*ep, r.wr_id);
      wait_ok(*ep, true, "ping");
    }
    std::sort(rtt.begin(), rtt.end());
    std::printf("%10zu %12.1f %12.1f\n", size, rtt[rtt.size() / 2], rtt[rtt.size() * 99 / 100]);
  }

  // 2. RDMA Write bandwidth, then 3. RDMA Read bandwidth and verification.
  const std::size_t region = std::min<std::size_t>(a.region, rlen);
  std::vector<std::uint8_t> src(region), back(region);
  for (std::size_t i = 0; i < region; ++i) src[i] = static_cast<std::uint8_t>(i * 131 + (i >> 12));
  const auto src_key = ctx.reg_mr(src.data(), src.size(), 0);
  const auto back_key = ctx.reg_mr(back.data(), back.size(), esock::ddp::access_local_write);
  const std::size_t chunks_per_region = region / a.bw_chunk;
  auto bandwidth = [&](bool write) {
    const std::size_t n = std::max<std::size_t>(1, a.bw_total / a.bw_chunk);
    std::size_t posted = 0, done = 0;
    const auto t0 = Clock::now();
    while (done < n) {
      while (posted < n && posted - done < static_cast<std::size_t>(a.window)) {
        const std::size_t off = (posted % chunks_per_region) * a.bw_chunk;
        int rc;
        if (write) {
          Sge s{src.data() + off, static_cast<std::uint32_t>(a.bw_chunk), src_key};
          rc = ep->post_write(posted, {&s, 1}, rkey, rto + off);
        } else {
          Sge s{back.data() + off, static_cast<std::uint32_t>(a.bw_chunk), back_key};
          rc = ep->post_read(posted, {&s, 1}, rkey, rto + off);
        }
        if (rc != 0) die("post failed: " + std::string(std::strerror(rc)) + describe(*ep));
        ++posted;
      }
      wait_ok(*ep, true, write ? "RDMA Write" : "RDMA Read");
      ++done;
    }
    return mbps(n * a.bw_chunk, Clock::now() - t0);
  };
  std::printf("\n%-12s %10s %10s %14s\n", "operation", "chunk", "window", "Mbit/s");
  std::printf("%-12s %10zu %10d %14.0f\n", "RDMA Write", a.bw_chunk, a.window, bandwidth(true));
  std::printf("%-12s %10zu %10d %14.0f\n", "RDMA Read", a.bw_chunk, a.window, bandwidth(false));
  // Bytes the writes covered (and the reads brought back): the region, or less for a short run.
  const std::size_t chunks = std::max<std::size_t>(1, a.bw_total / a.bw_chunk);
  const std::size_t covered = std::min(chunks, chunks_per_region) * a.bw_chunk;
  const bool same = std::memcmp(src.data(), back.data(), covered) == 0;
  std::printf("\nverify: %zu bytes written by RDMA Write and read back by RDMA Read: %s\n", covered,
              same ? "identical" : "MISMATCH");

  buf.tx[0] = 'B';
  buf.send(*ep, 1, 2);
  wait_ok(*ep, true, "bye");
  print_stats("client", *ep);
  ep->close();
  std::printf("client: done\n");
  return same ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Args a = parse(argc, argv);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  return a.server ? run_server(a) : run_client(a);
}
