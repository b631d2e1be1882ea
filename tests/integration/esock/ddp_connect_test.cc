// connect(2) on DDPMODE sockets over kernel TCP (issue 14: "a non-blocking connect never
// blocks"): EINPROGRESS at once, the number polls writable when TCP and MPA are done or
// failed, SO_ERROR and a second connect() say which, as on Linux; a blocking call on a
// socket still connecting waits for it. No sleeps beyond the bounds being checked.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/epoll.h>

#include <chrono>
#include <cstring>

#include "ddp_helpers.h"

using namespace esock_test;

namespace {

using Clock = std::chrono::steady_clock;

long ms_since(Clock::time_point t0) {
  return static_cast<long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count());
}

sockaddr_in loopback(std::uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  return a;
}

short poll_once(int fd, short events, int ms) {
  pollfd p{fd, events, 0};
  return ::poll(&p, 1, ms) == 1 ? p.revents : 0;
}

int so_error(int fd) {
  int err = -1;
  socklen_t l = sizeof err;
  return ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l) == 0 ? err : -1;
}

// A kernel TCP listener that never accepts and never says a word: the kernel completes the
// handshake, MPA never answers.
int silent_listener(std::uint16_t* port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a = loopback(0);
  socklen_t l = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 8) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &l) != 0)
    return -1;
  *port = ntohs(a.sin_port);
  return fd;
}

}  // namespace

TEST(DdpConnect, NonBlockingReturnsAtOnceAndPollsWritableWhenUp) {
  std::uint16_t port = 0;
  const int lfd = ddp_listener(&port);
  ASSERT_GE(lfd, 0);
  const int fd = ddp_socket();
  ASSERT_EQ(::fcntl(fd, F_SETFL, O_NONBLOCK), 0);
  const sockaddr_in a = loopback(port);
  const auto* sa = reinterpret_cast<const sockaddr*>(&a);
  ASSERT_EQ(::connect(fd, sa, sizeof a), -1);
  ASSERT_EQ(errno, EINPROGRESS);
  // An epoll set added now keeps watching the number through the set-up.
  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLOUT;
  ev.data.u64 = 42;
  ASSERT_EQ(::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0);
  epoll_event got{};
  ASSERT_EQ(::epoll_wait(ep, &got, 1, 10000), 1);
  const std::uint64_t data = got.data.u64;  // (epoll_event is packed: no reference to it)
  EXPECT_EQ(data, 42u);
  EXPECT_TRUE(got.events & EPOLLOUT);
  EXPECT_EQ(so_error(fd), 0);
  EXPECT_EQ(::connect(fd, sa, sizeof a), 0) << "the first connect after completion, as Linux";
  EXPECT_EQ(::connect(fd, sa, sizeof a), -1);
  EXPECT_EQ(errno, EISCONN);
  sockaddr_in peer{};
  socklen_t pl = sizeof peer;
  ASSERT_EQ(::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl), 0);
  EXPECT_EQ(peer.sin_port, a.sin_port);
  ASSERT_EQ(::fcntl(lfd, F_SETFL, 0), 0);
  const int srv = ::accept(lfd, nullptr, nullptr);
  ASSERT_GE(srv, 0) << std::strerror(errno);
  ASSERT_EQ(::write(fd, "nb", 2), 2);
  char b[4];
  ASSERT_EQ(poll_once(srv, POLLIN, 10000) & POLLIN, POLLIN);
  ASSERT_EQ(::read(srv, b, sizeof b), 2);
  EXPECT_EQ(std::memcmp(b, "nb", 2), 0);
  ::close(ep);
  ::close(srv);
  ::close(fd);
  ::close(lfd);
}

// Before, a non-blocking connect waited for MPA: ESOCK_TIMEOUT_MS (10 s) against a peer
// that never answers, inside connect() (curl: "after 0 ms" after 10 s).
TEST(DdpConnect, NonBlockingToASilentPeerNeverBlocks) {
  std::uint16_t port = 0;
  const int lfd = silent_listener(&port);
  ASSERT_GE(lfd, 0);
  const int fd = ddp_socket();
  ASSERT_EQ(::fcntl(fd, F_SETFL, O_NONBLOCK), 0);
  const sockaddr_in a = loopback(port);
  const auto t0 = Clock::now();
  ASSERT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a), -1);
  EXPECT_EQ(errno, EINPROGRESS);
  EXPECT_LT(ms_since(t0), 200) << "connect waited";
  EXPECT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a), -1);
  EXPECT_EQ(errno, EALREADY);
  EXPECT_EQ(poll_once(fd, POLLIN | POLLOUT, 300), 0) << "ready with MPA not done";
  EXPECT_EQ(so_error(fd), 0);
  char b[4];
  EXPECT_EQ(::read(fd, b, sizeof b), -1);
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(::write(fd, "x", 1), -1);
  EXPECT_EQ(errno, EAGAIN);
  sockaddr_in me{};
  socklen_t ml = sizeof me;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&me), &ml), 0);
  EXPECT_NE(me.sin_port, 0) << "the local name while connecting is the kernel socket's";
  ml = sizeof me;
  EXPECT_EQ(::getpeername(fd, reinterpret_cast<sockaddr*>(&me), &ml), -1);
  EXPECT_EQ(errno, ENOTCONN);
  const auto t1 = Clock::now();
  EXPECT_EQ(::close(fd), 0);
  EXPECT_LT(ms_since(t1), 200) << "close waited for the set-up";
  ::close(lfd);
}

TEST(DdpConnect, NonBlockingToAClosedPortReportsTheRefusalOnce) {
  std::uint16_t port = 0;
  const int lfd = silent_listener(&port);
  ASSERT_GE(lfd, 0);
  ::close(lfd);  // nobody listens there now
  const int fd = ddp_socket();
  ASSERT_EQ(::fcntl(fd, F_SETFL, O_NONBLOCK), 0);
  const sockaddr_in a = loopback(port);
  const int r = ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a);
  ASSERT_EQ(r, -1);
  if (errno == EINPROGRESS) {  // else the kernel refused at once, the socket unchanged
    ASSERT_TRUE(poll_once(fd, POLLOUT, 10000) & POLLOUT);
    EXPECT_EQ(so_error(fd), ECONNREFUSED);
    EXPECT_EQ(so_error(fd), 0) << "SO_ERROR clears, as the kernel's";
    EXPECT_EQ(::write(fd, "x", 1), -1);
    EXPECT_EQ(errno, ECONNREFUSED);
  } else {
    EXPECT_EQ(errno, ECONNREFUSED);
  }
  ::close(fd);
}

// A blocking call on a socket whose connect is still going on waits for it, as TCP's does in
// SYN-SENT.
TEST(DdpConnect, ABlockingWriteWaitsForTheConnectInProgress) {
  std::uint16_t port = 0;
  const int lfd = ddp_listener(&port);
  ASSERT_GE(lfd, 0);
  const int fd = ddp_socket();
  ASSERT_EQ(::fcntl(fd, F_SETFL, O_NONBLOCK), 0);
  const sockaddr_in a = loopback(port);
  ASSERT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a), -1);
  ASSERT_EQ(errno, EINPROGRESS);
  ASSERT_EQ(::fcntl(fd, F_SETFL, 0), 0);
  ASSERT_EQ(::write(fd, "blk", 3), 3) << std::strerror(errno);
  ASSERT_EQ(::fcntl(lfd, F_SETFL, 0), 0);
  const int srv = ::accept(lfd, nullptr, nullptr);
  ASSERT_GE(srv, 0);
  std::uint8_t b[3];
  ASSERT_TRUE(read_all(srv, b, 3));
  EXPECT_EQ(std::memcmp(b, "blk", 3), 0);
  ::close(srv);
  ::close(fd);
  ::close(lfd);
}
