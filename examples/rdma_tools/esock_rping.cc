// esock_rping: rdma-core's rping (librdmacm/examples/rping.c) protocol over esock, in both
// roles, so esock can be checked against `rping` on Linux siw or an RNIC.
//
//   esock_rping -s [-a ADDR] [-p PORT] [-C N] [-S SIZE] [-v] [-V] [connection options]
//   esock_rping -c -a ADDR [-p PORT] [-C N] [-S SIZE] [-v] [-V] [connection options]
//
// One ping, as rping does it (all adverts are Sends of {be64 addr, be32 rkey, be32 size}):
//   client: fills its source buffer with "rdma-ping-<n>: " and the letters A..z rotating,
//           advertises it;                         server: RDMA Reads it, Sends a go-ahead;
//   client: advertises its sink buffer;            server: RDMA Writes the string (with its
//                                                          NUL) into it, Sends a go-ahead;
//   client: with -V, compares sink and source.
// The server ends when the client disconnects (rping's DISCONNECTED), exit status 0.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/endian.h"
#include "tool_common.h"

using namespace esock;

namespace {

constexpr std::size_t info_len = 16;  // struct rping_rdma_info
constexpr int max_size = 64 * 1024 - 1;

struct Args {
  bool server = false, client = false, verbose = false, validate = false;
  std::string addr;
  std::uint16_t port = 7174;  // rping's default
  int count = 1;
  int size = 64;
  tools::ConnArgs conn = tools::default_conn_args();
};

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: esock_rping -s [-a ADDR] [-p PORT] [-C N] [-S SIZE] [-v] [-V] [opts]\n"
               "       esock_rping -c -a ADDR [-p PORT] [-C N] [-S SIZE] [-v] [-V] [opts]\n%s",
               tools::conn_usage());
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
    if (o == "-s")
      a.server = true;
    else if (o == "-c")
      a.client = true;
    else if (o == "-v")
      a.verbose = true;
    else if (o == "-V")
      a.validate = true;
    else if (o == "-a")
      a.addr = value();
    else if (o == "-p")
      a.port = static_cast<std::uint16_t>(std::atoi(value()));
    else if (o == "-C")
      a.count = std::atoi(value());
    else if (o == "-S")
      a.size = std::atoi(value());
    else if (!tools::parse_conn_arg(i, argc, argv, a.conn))
      usage();
  }
  if (a.server == a.client) usage();
  if (a.client && a.addr.empty()) usage();
  if (a.server && a.addr.empty()) a.addr = "0.0.0.0";
  // rping: at least room for "rdma-ping-<INT_MAX>: " and its NUL; below 64 KiB.
  if (a.size < 24 || a.size > max_size) {
    std::fprintf(stderr, "invalid size %d (valid range is 24 to %d)\n", a.size, max_size);
    std::exit(2);
  }
  if (a.count < 1) {
    std::fprintf(stderr, "-C must be at least 1 (esock_rping does not ping forever)\n");
    std::exit(2);
  }
  return a;
}

// One side's registered memory: the advert buffers and the RDMA buffers.
struct Buffers {
  std::uint8_t recv_info[info_len] = {};
  std::uint8_t send_info[info_len] = {};
  std::vector<std::uint8_t> rdma;   // client: sink; server: where Reads land
  std::vector<std::uint8_t> start;  // client only: the source the server Reads
  ddp::stag_t recv_key = 0, send_key = 0, rdma_key = 0, start_key = 0;

  Buffers(rnic::Context& ctx, std::size_t size, bool client) : rdma(size, 0) {
    const std::uint32_t rw =
        ddp::access_local_write | ddp::access_remote_read | ddp::access_remote_write;
    recv_key = ctx.reg_mr(recv_info, info_len, ddp::access_local_write);
    send_key = ctx.reg_mr(send_info, info_len, 0);
    rdma_key = ctx.reg_mr(rdma.data(), rdma.size(), rw);
    if (client) {
      start.assign(size, 0);
      start_key = ctx.reg_mr(start.data(), start.size(), rw);
    }
  }
  ddp::Sge recv_sge() { return {recv_info, info_len, recv_key}; }
  ddp::Sge send_sge() { return {send_info, info_len, send_key}; }
  void format_send(const std::vector<std::uint8_t>& buf, ddp::stag_t key) {
    store_be64(send_info, reinterpret_cast<std::uintptr_t>(buf.data()));
    store_be32(send_info + 8, key);
    store_be32(send_info + 12, static_cast<std::uint32_t>(buf.size()));
  }
};

// rping_test_client's pattern: "rdma-ping-<n>: " then letters from `start`, 'A'..'z'
// rotating, and a NUL in the last octet.
void fill_ping(std::vector<std::uint8_t>& b, int ping, int start) {
  const int cc = std::snprintf(reinterpret_cast<char*>(b.data()), b.size(), "rdma-ping-%d: ", ping);
  int c = start;
  for (std::size_t i = static_cast<std::size_t>(cc); i < b.size(); ++i) {
    b[i] = static_cast<std::uint8_t>(c);
    if (++c > 122) c = 65;
  }
  b.back() = 0;
}

int run_client(tools::Transport& tr, const Args& a) {
  std::string why;
  auto ep = tools::connect(tr, a.addr, a.port, a.conn, 0, &why);
  if (!ep) {
    std::fprintf(stderr, "esock_rping: connect error: %s\n", why.c_str());
    return 1;
  }
  tools::print_negotiated("esock_rping", "initiator", *ep);
  Buffers b(tr.ctx(), static_cast<std::size_t>(a.size), true);
  const int t = a.conn.timeout_ms;
  int start = 65;
  for (int ping = 0; ping < a.count; ++ping) {
    fill_ping(b.start, ping, start);
    if (++start > 122) start = 65;
    ddp::Sge r = b.recv_sge(), s = b.send_sge();
    b.format_send(b.start, b.start_key);
    // The go-ahead may come right after the server's Read: post before advertising.
    if (ep->post_recv(1, {&r, 1}) != 0 || ep->post_send(1, {&s, 1}) != 0 ||
        !tools::wait_send_ok(*ep, "send source advert", t) ||
        !tools::wait_recv_ok(*ep, "recv go-ahead after read", t))
      return 1;
    b.format_send(b.rdma, b.rdma_key);
    if (ep->post_recv(2, {&r, 1}) != 0 || ep->post_send(2, {&s, 1}) != 0 ||
        !tools::wait_send_ok(*ep, "send sink advert", t) ||
        !tools::wait_recv_ok(*ep, "recv go-ahead after write", t))
      return 1;
    if (a.validate && b.start != b.rdma) {
      std::fprintf(stderr, "data mismatch!\n");
      return 1;
    }
    if (a.verbose) std::printf("ping data: %s\n", reinterpret_cast<const char*>(b.rdma.data()));
  }
  std::fflush(stdout);
  ep->close(2000);
  return 0;
}

int run_server(tools::Transport& tr, const Args& a) {
  std::string why;
  if (!tr.listen(a.addr, a.port, &why)) {
    std::fprintf(stderr, "esock_rping: listen: %s\n", why.c_str());
    return 1;
  }
  std::printf("esock_rping: listening on %s\n", tr.describe().c_str());
  std::fflush(stdout);
  auto ep = tools::accept(tr, a.conn, &why);
  if (!ep) {
    std::fprintf(stderr, "esock_rping: accept error: %s\n", why.c_str());
    return 1;
  }
  tools::print_negotiated("esock_rping", "responder", *ep);
  Buffers b(tr.ctx(), max_size + 1, false);
  const int t = a.conn.timeout_ms;
  ddp::Sge r = b.recv_sge(), s = b.send_sge();
  ep->post_recv(1, {&r, 1});
  for (int ping = 0;; ++ping) {
    ddp::Completion c{};
    if (!ep->wait_recv(c, t)) {
      // rping_test_server: the client's disconnect ends the test successfully.
      if (!ep->alive() && ping > 0) break;
      std::fprintf(stderr, "esock_rping: no source advert (%s)\n", ep->error().c_str());
      return 1;
    }
    if (c.status != ddp::Status::success) {
      if (c.status == ddp::Status::flushed && ping > 0) break;  // the client went away
      std::fprintf(stderr, "esock_rping: recv: %s\n", tools::to_string(c.status));
      return 1;
    }
    if (c.byte_len != info_len) {
      std::fprintf(stderr, "Received bogus data, size %u\n", c.byte_len);
      return 1;
    }
    std::uint64_t addr = load_be64(b.recv_info);
    std::uint32_t rkey = load_be32(b.recv_info + 8), len = load_be32(b.recv_info + 12);
    if (len > b.rdma.size()) {
      std::fprintf(stderr, "esock_rping: advertised size %u too large\n", len);
      return 1;
    }
    ep->post_recv(2, {&r, 1});
    ddp::Sge sink{b.rdma.data(), len, b.rdma_key};
    if (ep->post_read(3, {&sink, 1}, rkey, addr) != 0 ||
        !tools::wait_send_ok(*ep, "RDMA Read of the client's source", t))
      return 1;
    b.rdma.back() = 0;
    if (a.verbose)
      std::printf("server ping data: %s\n", reinterpret_cast<const char*>(b.rdma.data()));
    if (ep->post_send(4, {&s, 1}) != 0 || !tools::wait_send_ok(*ep, "send go-ahead", t) ||
        !tools::wait_recv_ok(*ep, "recv sink advert", t, &c))
      return 1;
    addr = load_be64(b.recv_info);
    rkey = load_be32(b.recv_info + 8);
    ep->post_recv(1, {&r, 1});
    const auto n =
        static_cast<std::uint32_t>(std::strlen(reinterpret_cast<const char*>(b.rdma.data())) + 1);
    ddp::Sge src{b.rdma.data(), n, b.rdma_key};
    if (ep->post_write(5, {&src, 1}, rkey, addr) != 0 ||
        !tools::wait_send_ok(*ep, "RDMA Write to the client's sink", t) ||
        ep->post_send(6, {&s, 1}) != 0 || !tools::wait_last_send_ok(*ep, "send go-ahead", t))
      return 1;
  }
  std::fflush(stdout);
  ep->close(2000);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  std::string why;
  auto tr = tools::Transport::create(a.conn, &why);
  if (!tr) {
    std::fprintf(stderr, "esock_rping: %s\n", why.c_str());
    return 1;
  }
  return a.client ? run_client(*tr, a) : run_server(*tr, a);
}
