// fd semantics of DDPMODE sockets over the dpdk provider (docs/sockets.md), mirroring
// tests/integration/esock/ddp_fd_test.cc (the ksock versions): this process is the memif
// client at 10.99.0.2, dpdk_peer the server at 10.99.0.1 (peer_env.h). No sleeps: waits are
// on readiness or bounded polling loops.
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

#include "ddp_helpers.h"
#include "peer_env.h"

using namespace esock_test;
using esock_dpdk_test::PeerEnv;
using esock_dpdk_test::wait_for;

namespace {

// Writes v from a second thread while this one reads the echo (neither side's reader has to
// run first), and compares.
::testing::AssertionResult echo(int fd, const std::vector<std::uint8_t>& v) {
  bool wrote = false;
  std::thread w([&] { wrote = write_all(fd, v.data(), v.size()); });
  std::vector<std::uint8_t> in(v.size());
  const bool got = read_all(fd, in.data(), in.size());
  w.join();
  if (!wrote || !got) return ::testing::AssertionFailure() << "echo I/O: " << std::strerror(errno);
  if (in != v) return ::testing::AssertionFailure() << v.size() << " octets came back different";
  return ::testing::AssertionSuccess();
}

std::string name_of(const sockaddr_in& a) {
  char ip[INET_ADDRSTRLEN] = "?";
  ::inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(a.sin_port));
}

// The stack's own descriptors (DPDK's EAL and interrupt thread, the memif driver: its
// memory, queue eventfds, epoll, timer) live in esock's private range, clear of the small
// numbers an application expects (process/private_fds.h: `wrk -c1` sized its event loop
// by them and lost its one connection). Runs first: later tests make epolls of their own.
TEST(DpdkFd, TheStacksOwnDescriptorsStayOutOfTheApplicationsNumbers) {
  const int fd = PeerEnv::open("echo");  // the stack is up, the memif link connected
  ASSERT_GE(fd, 0) << std::strerror(errno);
  rlimit rl{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &rl), 0);
  const long base = rl.rlim_cur > 256 ? std::min<long>(rl.rlim_cur / 2, 1 << 15) : 64;
  int stack_fds = 0;
  std::string low;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::string what = std::filesystem::read_symlink(e.path(), ec).string();
    const bool stacks = what.starts_with("/memfd:") || what == "anon_inode:[eventfd]" ||
                        what == "anon_inode:[eventpoll]" || what == "anon_inode:[timerfd]";
    if (!stacks) continue;
    ++stack_fds;
    if (std::stol(e.path().filename().string()) < base)
      low += e.path().filename().string() + " " + what + "; ";
  }
  // The check looked at something: DPDK's memory, epoll, timer... (another provider, as
  // tests/interop/rdmacm runs this suite, has its own few.)
  if (!PeerEnv::external()) {
    EXPECT_GE(stack_fds, 4);
  }
  EXPECT_EQ(low, "") << "below " << base;
  ::close(fd);
}

TEST(DpdkFd, EchoOfManySizesIsVerified) {
  const int fd = PeerEnv::open("echo");
  ASSERT_GE(fd, 0) << std::strerror(errno);
  EXPECT_EQ(esock_is_ddp(fd), 1);
  std::uint32_t seed = 1;
  for (std::size_t n : {1u, 2u, 3u, 7u, 100u, 1000u, 1459u, 4095u, 4096u, 4097u, 65535u, 65536u,
                        65537u, 100000u, 1u << 20, (1u << 20) + 3, 3u << 20, 4u << 20})
    ASSERT_TRUE(echo(fd, pattern(n, seed++))) << n << " octets";
  ::close(fd);
}

TEST(DpdkFd, ConcurrentConnectionsKeepTheirStreamsApart) {
  constexpr int kConns = 4;
  std::atomic<int> ok{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < kConns; ++i)
    ts.emplace_back([&, i] {
      const int fd = PeerEnv::open("echo");
      if (fd < 0) return;
      bool good = true;
      for (int k = 0; k < 8 && good; ++k)
        good = echo(fd, pattern(std::size_t(1000) << k, std::uint32_t(100 * i + k)));
      ::close(fd);
      if (good) ++ok;
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(ok, kConns);
}

TEST(DpdkFd, NonBlockingReadFailsWithEagainThenSucceeds) {
  const int fd = PeerEnv::open("echo");
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
  char b[16];
  EXPECT_EQ(::read(fd, b, sizeof b), -1);
  EXPECT_EQ(errno, EAGAIN);
  ASSERT_EQ(::fcntl(fd, F_SETFL, 0), 0);
  EXPECT_EQ(::recv(fd, b, sizeof b, MSG_DONTWAIT), -1);  // the per-call flag too
  EXPECT_EQ(errno, EAGAIN);
  ASSERT_EQ(::write(fd, "hello", 5), 5);
  ASSERT_TRUE(wait_for(fd, POLLIN));
  ASSERT_EQ(::recv(fd, b, sizeof b, MSG_DONTWAIT), 5);
  EXPECT_EQ(std::memcmp(b, "hello", 5), 0);
  ::close(fd);
}

TEST(DpdkFd, EpollMixesDdpAndKernelSockets) {
  const int fd = PeerEnv::open("echo");
  ASSERT_GE(fd, 0);
  int kp[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, kp), 0);
  // A plain TCP connection on loopback stays on the kernel in the same process.
  const int kl = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t al = sizeof a;
  ASSERT_EQ(::bind(kl, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(kl, 1), 0);
  ASSERT_EQ(::getsockname(kl, reinterpret_cast<sockaddr*>(&a), &al), 0);
  const int kc = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(::connect(kc, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  const int ks = ::accept(kl, nullptr, nullptr);
  ASSERT_GE(ks, 0);
  EXPECT_EQ(esock_is_ddp(ks), 0);

  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  for (int f : {fd, kp[1], ks}) {
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.fd = f;
    ASSERT_EQ(::epoll_ctl(ep, EPOLL_CTL_ADD, f, &e), 0);
  }
  epoll_event out[4];
  EXPECT_EQ(::epoll_wait(ep, out, 4, 0), 0);
  char b[8];
  ASSERT_EQ(::write(kp[0], "k", 1), 1);
  ASSERT_EQ(::epoll_wait(ep, out, 4, 10000), 1);
  EXPECT_EQ(out[0].data.fd, kp[1]);
  ASSERT_EQ(::read(kp[1], b, 8), 1);
  ASSERT_EQ(::write(kc, "tcp", 3), 3);
  ASSERT_EQ(::epoll_wait(ep, out, 4, 10000), 1);
  EXPECT_EQ(out[0].data.fd, ks);
  ASSERT_EQ(::read(ks, b, 8), 3);
  ASSERT_EQ(::write(fd, "ddp", 3), 3);  // echoed by the peer over DPDK
  ASSERT_EQ(::epoll_wait(ep, out, 4, 10000), 1);
  EXPECT_EQ(out[0].data.fd, fd);
  ASSERT_EQ(::read(fd, b, 8), 3);
  EXPECT_EQ(::epoll_wait(ep, out, 4, 0), 0);  // consumed: nothing readable
  // Edge-triggered: one event per arrival.
  epoll_event e{};
  e.events = EPOLLIN | EPOLLET;
  e.data.fd = fd;
  ASSERT_EQ(::epoll_ctl(ep, EPOLL_CTL_MOD, fd, &e), 0);
  ASSERT_EQ(::write(fd, "x", 1), 1);
  ASSERT_EQ(::epoll_wait(ep, out, 4, 10000), 1);
  EXPECT_EQ(::epoll_wait(ep, out, 4, 0), 0);
  ASSERT_EQ(::read(fd, b, 8), 1);
  for (int f : {ep, kp[0], kp[1], kl, kc, ks, fd}) ::close(f);
}

TEST(DpdkFd, DupAndDup2ShareTheConnection) {
  const int fd = PeerEnv::open("echo");
  ASSERT_GE(fd, 0);
  const int d = ::dup(fd);
  ASSERT_GE(d, 0);
  EXPECT_EQ(esock_is_ddp(d), 1);
  ASSERT_EQ(::close(fd), 0);  // the connection stays: d still names it
  char b[16];
  ASSERT_EQ(::write(d, "via dup", 7), 7);
  ASSERT_TRUE(read_all(d, reinterpret_cast<std::uint8_t*>(b), 7));
  EXPECT_EQ(std::memcmp(b, "via dup", 7), 0);
  const int target = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(::dup2(d, target), target);
  EXPECT_EQ(esock_is_ddp(target), 1);
  ASSERT_EQ(::close(d), 0);
  ASSERT_TRUE(echo(target, pattern(300000, 3)));
  ASSERT_EQ(::close(target), 0);  // the last number: the peer sees EOF and ends
}

TEST(DpdkFd, NamesAreTheDpdkAddresses) {
  const int fd = PeerEnv::open("names");
  ASSERT_GE(fd, 0);
  sockaddr_in me{}, peer{};
  socklen_t l = sizeof me;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&me), &l), 0);
  EXPECT_EQ(l, sizeof me);
  l = sizeof peer;
  ASSERT_EQ(::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &l), 0);
  EXPECT_EQ(me.sin_family, AF_INET);
  EXPECT_EQ(peer.sin_family, AF_INET);
  const std::string mine = name_of(me), theirs = name_of(peer);
  EXPECT_EQ(mine.rfind(std::string(PeerEnv::own_ip()) + ":", 0), 0u) << mine;
  EXPECT_EQ(theirs, std::string(PeerEnv::peer_ip()) + ":" + std::to_string(PeerEnv::port()));
  EXPECT_NE(me.sin_port, 0);
  // The peer's view of the same connection is the mirror image.
  std::string line;
  char c;
  while (line.size() < 64 && ::read(fd, &c, 1) == 1 && c != '\n') line += c;
  EXPECT_EQ(line, theirs + " " + mine);
  // A short buffer is truncated, the full length is reported.
  sockaddr_in small{};
  l = 4;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&small), &l), 0);
  EXPECT_EQ(l, sizeof small);
  ::close(fd);
}

}  // namespace
