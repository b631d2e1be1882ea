// setsockopt/getsockopt(SOL_ESOCK) through the interposed libc calls: when DDPMODE can be
// switched on, the errno for every moment it cannot, and how dup/close carry it.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

#include <cerrno>

#include "esock/esock.h"

namespace {

int tcp_socket() {
  return ::socket(AF_INET, SOCK_STREAM, 0);
}

int set_ddp(int fd, int name = ESOCK_DDPMODE, int on = 1) {
  return ::setsockopt(fd, SOL_ESOCK, name, &on, sizeof on);
}

int get_opt(int fd, int name) {
  int v = -1;
  socklen_t l = sizeof v;
  if (::getsockopt(fd, SOL_ESOCK, name, &v, &l) < 0) return -errno;
  return v;
}

// A listening socket on loopback and a client connected to it.
struct Pair {
  int lfd = -1, cfd = -1;
  Pair() {
    lfd = tcp_socket();
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t l = sizeof a;
    EXPECT_EQ(::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(lfd, 4), 0);
    EXPECT_EQ(::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &l), 0);
    cfd = tcp_socket();
    EXPECT_EQ(::connect(cfd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  }
  ~Pair() {
    ::close(cfd);
    ::close(lfd);
  }
};

TEST(DdpmodeOption, FreshTcpSocketCanBeSwitchedOnAndReportsIt) {
  const int fd = tcp_socket();
  ASSERT_GE(fd, 0);
  EXPECT_EQ(get_opt(fd, ESOCK_DDPMODE), 0);
  EXPECT_EQ(esock_is_ddp(fd), 0);
  ASSERT_EQ(set_ddp(fd), 0);
  EXPECT_EQ(get_opt(fd, ESOCK_DDPMODE), 1);
  EXPECT_EQ(get_opt(fd, ESOCK_MSGMODE), 0);
  EXPECT_EQ(esock_is_ddp(fd), 1);
  ASSERT_EQ(set_ddp(fd, ESOCK_MSGMODE), 0);
  EXPECT_EQ(get_opt(fd, ESOCK_MSGMODE), 1);
  EXPECT_EQ(::close(fd), 0);
  EXPECT_EQ(esock_is_ddp(fd), 0);
}

TEST(DdpmodeOption, MsgmodeImpliesDdpmode) {
  const int fd = tcp_socket();
  ASSERT_EQ(set_ddp(fd, ESOCK_MSGMODE), 0);
  EXPECT_EQ(get_opt(fd, ESOCK_DDPMODE), 1);
  EXPECT_EQ(get_opt(fd, ESOCK_MSGMODE), 1);
  ::close(fd);
}

TEST(DdpmodeOption, ConnectedSocketFailsWithEisconn) {
  Pair p;
  errno = 0;
  EXPECT_EQ(set_ddp(p.cfd), -1);
  EXPECT_EQ(errno, EISCONN);
  EXPECT_EQ(esock_is_ddp(p.cfd), 0);
}

TEST(DdpmodeOption, ListeningSocketFailsWithEinval) {
  Pair p;
  errno = 0;
  EXPECT_EQ(set_ddp(p.lfd), -1);
  EXPECT_EQ(errno, EINVAL);
}

TEST(DdpmodeOption, NotTcpStreamFailsWithEopnotsupp) {
  const int udp = ::socket(AF_INET, SOCK_DGRAM, 0);
  errno = 0;
  EXPECT_EQ(set_ddp(udp), -1);
  EXPECT_EQ(errno, EOPNOTSUPP);
  ::close(udp);
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  errno = 0;
  EXPECT_EQ(set_ddp(sv[0]), -1);
  EXPECT_EQ(errno, EOPNOTSUPP);
  ::close(sv[0]);
  ::close(sv[1]);
}

TEST(DdpmodeOption, NotASocketFailsWithEnotsock) {
  int pfd[2];
  ASSERT_EQ(::pipe(pfd), 0);
  errno = 0;
  EXPECT_EQ(set_ddp(pfd[0]), -1);
  EXPECT_EQ(errno, ENOTSOCK);
  EXPECT_EQ(get_opt(pfd[0], ESOCK_DDPMODE), -ENOTSOCK);
  ::close(pfd[0]);
  ::close(pfd[1]);
  errno = 0;
  EXPECT_EQ(set_ddp(-1), -1);
  EXPECT_EQ(errno, EBADF);
}

TEST(DdpmodeOption, BadArgumentsFail) {
  const int fd = tcp_socket();
  int on = 1;
  errno = 0;
  EXPECT_EQ(::setsockopt(fd, SOL_ESOCK, ESOCK_DDPMODE, &on, 1), -1);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(::setsockopt(fd, SOL_ESOCK, ESOCK_DDPMODE, nullptr, sizeof on), -1);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(::setsockopt(fd, SOL_ESOCK, 99, &on, sizeof on), -1);
  EXPECT_EQ(errno, ENOPROTOOPT);
  char small = 0;
  socklen_t l = 1;
  errno = 0;
  EXPECT_EQ(::getsockopt(fd, SOL_ESOCK, ESOCK_DDPMODE, &small, &l), -1);
  EXPECT_EQ(errno, EINVAL);
  ::close(fd);
}

// Hardening (careless caller): no place for the length or the value is EFAULT, as the
// kernel answers for its own levels (it was EINVAL).
TEST(DdpmodeOption, GetsockoptWithNullLengthOrValueIsEfault) {
  const int fd = tcp_socket();
  int on = 0;
  socklen_t l = sizeof on;
  errno = 0;
  EXPECT_EQ(::getsockopt(fd, SOL_ESOCK, ESOCK_DDPMODE, &on, nullptr), -1);
  EXPECT_EQ(errno, EFAULT);
  errno = 0;
  EXPECT_EQ(::getsockopt(fd, SOL_ESOCK, ESOCK_DDPMODE, nullptr, &l), -1);
  EXPECT_EQ(errno, EFAULT);
  // The kernel, for comparison, on its own level.
  errno = 0;
  EXPECT_EQ(::getsockopt(fd, SOL_SOCKET, SO_TYPE, &on, nullptr), -1);
  EXPECT_EQ(errno, EFAULT);
  ::close(fd);
}

TEST(DdpmodeOption, CannotBeSwitchedOffOnceOn) {
  const int fd = tcp_socket();
  ASSERT_EQ(set_ddp(fd), 0);
  errno = 0;
  EXPECT_EQ(set_ddp(fd, ESOCK_DDPMODE, 0), -1);
  EXPECT_EQ(errno, EINVAL);
  ::close(fd);
  // Off on a socket that never had it is a no-op.
  const int fd2 = tcp_socket();
  EXPECT_EQ(set_ddp(fd2, ESOCK_DDPMODE, 0), 0);
  EXPECT_EQ(esock_is_ddp(fd2), 0);
  ::close(fd2);
}

TEST(DdpmodeOption, DupSharesItAndCloseOfOneKeepsTheOther) {
  const int fd = tcp_socket();
  ASSERT_EQ(set_ddp(fd), 0);
  const int d1 = ::dup(fd);
  const int d2 = ::fcntl(fd, F_DUPFD_CLOEXEC, 100);
  ASSERT_GE(d2, 100);
  const int d3 = 200;
  ASSERT_EQ(::dup2(fd, d3), d3);
  EXPECT_EQ(get_opt(d1, ESOCK_DDPMODE), 1);
  EXPECT_EQ(get_opt(d2, ESOCK_DDPMODE), 1);
  EXPECT_EQ(get_opt(d3, ESOCK_DDPMODE), 1);
  ::close(fd);
  EXPECT_EQ(esock_is_ddp(fd), 0);
  EXPECT_EQ(esock_is_ddp(d1), 1);
  // The option set through one number is seen through the others (one socket).
  ASSERT_EQ(set_ddp(d1, ESOCK_MSGMODE), 0);
  EXPECT_EQ(get_opt(d2, ESOCK_MSGMODE), 1);
  ::close(d1);
  ::close(d2);
  ::close(d3);
}

TEST(DdpmodeOption, Dup2OverADdpNumberForgetsIt) {
  const int fd = tcp_socket();
  ASSERT_EQ(set_ddp(fd), 0);
  const int plain = tcp_socket();
  ASSERT_EQ(::dup2(plain, fd), fd);
  EXPECT_EQ(esock_is_ddp(fd), 0);
  EXPECT_EQ(get_opt(fd, ESOCK_DDPMODE), 0);
  ::close(fd);
  ::close(plain);
}

TEST(DdpmodeOption, ReusedNumberAfterCloseIsPlain) {
  const int fd = tcp_socket();
  ASSERT_EQ(set_ddp(fd), 0);
  ::close(fd);
  // The table forgets the number at close, whoever gets it next (the kernel hands it to
  // the next open, which may be esock's own runtime rather than this test).
  EXPECT_EQ(esock_is_ddp(fd), 0);
  const int again = tcp_socket();
  EXPECT_EQ(esock_is_ddp(again), 0);
  EXPECT_EQ(get_opt(again, ESOCK_DDPMODE), 0);
  ::close(again);
}

TEST(DdpmodeOption, OtherOptionsStillReachTheKernel) {
  const int fd = tcp_socket();
  ASSERT_EQ(set_ddp(fd), 0);
  int one = 1, v = 0;
  socklen_t l = sizeof v;
  ASSERT_EQ(::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one), 0);
  ASSERT_EQ(::getsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &v, &l), 0);
  EXPECT_EQ(v, 1);
  ::close(fd);
}

}  // namespace
