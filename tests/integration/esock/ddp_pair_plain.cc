// A DDPMODE client/server pair built WITHOUT esock: it only uses the constants of the
// public header (SOL_ESOCK, ESOCK_DDPMODE) with ordinary setsockopt/getsockopt, so it
// needs esockrun (LD_PRELOAD) to run at all (the kernel rejects SOL_ESOCK).
//   ddp_pair_plain server [ADDR]         binds ADDR (default 127.0.0.1; with the dpdk provider
//                                        the stack's own address: it has no loopback), prints
//                                        "port N", serves one connection: echo until EOF
//   ddp_pair_plain client N [HOST]       sends 64 messages (1 B .. 2 MiB) to HOST (default
//                                        127.0.0.1; with the dpdk provider the server's DPDK
//                                        address), verifies every echo
// Each side checks getsockopt(SOL_ESOCK, ESOCK_DDPMODE) == 1 on its connected socket and
// prints "peer A.B.C.D:P", the address the connection really runs between.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "esock/esock.h"

namespace {

int die(const char* what) {
  std::fprintf(stderr, "%s: %s\n", what, std::strerror(errno));
  return 1;
}

bool ddp_on(int fd) {
  int on = 0;
  socklen_t l = sizeof on;
  return ::getsockopt(fd, SOL_ESOCK, ESOCK_DDPMODE, &on, &l) == 0 && on == 1;
}

bool io_all(int fd, std::uint8_t* p, std::size_t n, bool wr) {
  while (n > 0) {
    const ssize_t r = wr ? ::write(fd, p, n) : ::read(fd, p, n);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

std::uint8_t pat(std::uint64_t off) {
  return static_cast<std::uint8_t>(off * 167u + (off >> 9));
}

void print_peer(const char* who, int fd) {
  sockaddr_in a{};
  socklen_t l = sizeof a;
  ::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &l);
  char ip[INET_ADDRSTRLEN] = "?";
  ::inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
  std::printf("%s: peer %s:%d\n", who, ip, ntohs(a.sin_port));
}

int server(const char* addr) {
  const int l = ::socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  if (::setsockopt(l, SOL_ESOCK, ESOCK_DDPMODE, &one, sizeof one) != 0) return die("setsockopt");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  if (::inet_pton(AF_INET, addr, &a.sin_addr) != 1) return die("bad address");
  socklen_t al = sizeof a;
  if (::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(l, 1) != 0)
    return die("listen");
  ::getsockname(l, reinterpret_cast<sockaddr*>(&a), &al);
  std::printf("port %d\n", ntohs(a.sin_port));
  std::fflush(stdout);
  const int c = ::accept(l, nullptr, nullptr);
  if (c < 0) return die("accept");
  if (!ddp_on(c)) return die("accepted socket not in DDPMODE");
  print_peer("server", c);
  std::vector<std::uint8_t> buf(1 << 20);
  std::uint64_t total = 0;
  for (;;) {
    const ssize_t r = ::read(c, buf.data(), buf.size());
    if (r < 0) return die("read");
    if (r == 0) break;
    if (!io_all(c, buf.data(), static_cast<std::size_t>(r), true)) return die("write");
    total += static_cast<std::uint64_t>(r);
  }
  std::printf("server: echoed %llu octets in DDPMODE\n", static_cast<unsigned long long>(total));
  ::close(c);
  ::close(l);
  return 0;
}

int client(int port, const char* host) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  if (::setsockopt(fd, SOL_ESOCK, ESOCK_DDPMODE, &one, sizeof one) != 0) return die("setsockopt");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  if (::inet_pton(AF_INET, host, &a.sin_addr) != 1) return die("host");
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return die("connect");
  if (!ddp_on(fd)) return die("connected socket not in DDPMODE");
  print_peer("client", fd);
  std::uint64_t off = 0;
  std::size_t len = 1;
  for (int i = 0; i < 64; ++i) {
    std::vector<std::uint8_t> out(len), in(len);
    for (std::size_t k = 0; k < len; ++k) out[k] = pat(off + k);
    if (!io_all(fd, out.data(), len, true) || !io_all(fd, in.data(), len, false))
      return die("echo");
    if (in != out) {
      std::fprintf(stderr, "message %d differs\n", i);
      return 1;
    }
    off += len;
    len = (len * 3 + 7) % (2u << 20) + 1;
  }
  std::printf("client: %llu octets echoed and verified in DDPMODE\n",
              static_cast<unsigned long long>(off));
  ::close(fd);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if ((argc == 2 || argc == 3) && std::strcmp(argv[1], "server") == 0)
    return server(argc == 3 ? argv[2] : "127.0.0.1");
  if ((argc == 3 || argc == 4) && std::strcmp(argv[1], "client") == 0)
    return client(std::atoi(argv[2]), argc == 4 ? argv[3] : "127.0.0.1");
  std::fprintf(stderr, "usage: %s server [ADDR] | client PORT [HOST]\n", argv[0]);
  return 2;
}
