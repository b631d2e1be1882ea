// The peer of dpdk_fd_test: a DDPMODE server linked with libesock and configured by the
// environment for the dpdk provider (memif role=server). It prints "port N msgport M" on
// stdout once it listens on both. On M (ESOCK_MSGMODE) it echoes every message as one
// message until an empty message or EOF. On N it serves every connection in its own
// thread, doing what the connection's first line asks:
//   echo            echo until EOF, then close
//   echo-after MS   sleep MS milliseconds (a late reader), then echo until EOF
//   send N          write N octets of pattern(N, 7) (ddp_helpers.h), then close
//   hold            read and discard until EOF (never writes), then close
//   reset           write "last words", read one octet, then close with SO_LINGER 0 (RST)
//   names           write "LOCAL_IP:PORT PEER_IP:PORT\n" (getsockname/getpeername), then
//                   discard until EOF
//   connect-back P  connect in DDPMODE to the client's address, port P; write "back\n" on
//                   that connection and echo there until EOF; the first one: discard until EOF
// It exits 0 when its stdin reaches EOF and every connection has ended (1 if any command
// failed, 2 if connections are still open 20 s later).
#include <arpa/inet.h>
#include <poll.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "ddp_helpers.h"

using namespace esock_test;

namespace {

std::atomic<int> active{0};
std::atomic<bool> failed{false};

void fail(const char* what) {
  std::fprintf(stderr, "dpdk_peer: %s: %s\n", what, std::strerror(errno));
  failed = true;
}

std::string text(const sockaddr_in& a) {
  char ip[INET_ADDRSTRLEN] = "?";
  ::inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(a.sin_port));
}

void discard_until_eof(int fd) {
  std::uint8_t b[65536];
  ssize_t r;
  while ((r = ::read(fd, b, sizeof b)) > 0) {
  }
  if (r < 0) fail("read (discard)");
}

void echo_until_eof(int fd) {
  std::vector<std::uint8_t> b(2 << 20);
  for (;;) {
    const ssize_t r = ::read(fd, b.data(), b.size());
    if (r < 0) fail("read (echo)");
    if (r <= 0) return;
    if (!write_all(fd, b.data(), static_cast<std::size_t>(r))) return fail("write (echo)");
  }
}

// MSGMODE: each read returns one message (the buffer above holds the largest the tests
// send), and a MSGMODE write sends all of it as one message or fails, so the echo keeps
// every boundary.
void echo_messages(int fd) {
  echo_until_eof(fd);
  ::close(fd);
  --active;
}

void connect_back(int fd, std::uint16_t port) {
  sockaddr_in a{};
  socklen_t l = sizeof a;
  ::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &l);
  a.sin_port = htons(port);
  const int b = ddp_socket();
  if (::connect(b, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(b);
    return fail("connect-back");
  }
  if (!write_all(b, reinterpret_cast<const std::uint8_t*>("back\n"), 5)) fail("write (back)");
  echo_until_eof(b);
  ::close(b);
  discard_until_eof(fd);
}

void serve(int fd) {
  std::string cmd;
  char c;
  while (cmd.size() < 100 && ::read(fd, &c, 1) == 1 && c != '\n') cmd += c;
  if (cmd == "echo") {
    echo_until_eof(fd);
  } else if (cmd.rfind("send ", 0) == 0) {
    const auto v = pattern(std::strtoul(cmd.c_str() + 5, nullptr, 10), 7);
    if (!write_all(fd, v.data(), v.size())) fail("write (send)");
  } else if (cmd == "reset") {
    // "last words", then, once the client sends an octet, an abortive close (RST).
    linger lg{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    if (!write_all(fd, reinterpret_cast<const std::uint8_t*>("last words"), 10)) fail("write");
    char b;
    if (::read(fd, &b, 1) != 1) fail("read (reset)");
  } else if (cmd.rfind("echo-after ", 0) == 0) {
    // A reader that comes late (AZ-SDP's copy-on-write tests): the writer's sources wait.
    std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(cmd.c_str() + 11)));
    echo_until_eof(fd);
  } else if (cmd == "hold") {
    discard_until_eof(fd);
  } else if (cmd == "names") {
    sockaddr_in me{}, peer{};
    socklen_t l = sizeof me;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&me), &l);
    l = sizeof peer;
    ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &l);
    const std::string s = text(me) + " " + text(peer) + "\n";
    if (!write_all(fd, reinterpret_cast<const std::uint8_t*>(s.data()), s.size()))
      fail("write (names)");
    discard_until_eof(fd);
  } else if (cmd.rfind("connect-back ", 0) == 0) {
    connect_back(fd, static_cast<std::uint16_t>(std::atoi(cmd.c_str() + 13)));
  } else {
    std::fprintf(stderr, "dpdk_peer: unknown command '%s'\n", cmd.c_str());
    failed = true;
  }
  ::close(fd);
  --active;
}

void accept_loop(int l, void (*handler)(int)) {
  for (;;) {
    const int c = ::accept(l, nullptr, nullptr);
    if (c < 0) {
      if (errno != EINTR && errno != ECONNABORTED) return;
      continue;
    }
    ++active;
    std::thread(handler, c).detach();
  }
}

}  // namespace

int main() {
  std::uint16_t port = 0, msgport = 0;
  const int l = ddp_listener(&port, false, INADDR_ANY);
  const int m = ddp_listener(&msgport, true, INADDR_ANY);
  if (l < 0 || m < 0) {
    fail("listen");
    return 1;
  }
  std::printf("port %d msgport %d\n", port, msgport);
  std::fflush(stdout);
  std::thread(accept_loop, l, serve).detach();
  std::thread(accept_loop, m, echo_messages).detach();
  char b[64];
  while (::read(0, b, sizeof b) > 0) {
  }
  // The client closed its end of our stdin: it is done. Wait (bounded) for its connections'
  // ends to arrive, so the exit status says whether every command went well.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (active > 0 && std::chrono::steady_clock::now() < deadline) ::poll(nullptr, 0, 5);
  if (active > 0) {
    std::fprintf(stderr, "dpdk_peer: %d connections still open at the end\n", active.load());
    return 2;
  }
  return failed ? 1 : 0;
}
