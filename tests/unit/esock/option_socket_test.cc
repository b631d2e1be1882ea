// Own-stack connections keep their SO_*/TCP_* options on kernel TCP sockets shared by the
// connections with the same ones (process/option_socket.h): one socket per distinct set,
// the kernel's validation and read-back, nothing changed by a refused option.
#include "esock/process/option_socket.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

namespace esock::sockets {
namespace {

int get_int(int fd, int level, int name) {
  int v = -1;
  socklen_t l = sizeof v;
  EXPECT_EQ(getsockopt(fd, level, name, &v, &l), 0);
  return v;
}

OptionCalls nodelay(int on) {
  return with_call({}, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

TEST(OptionSocket, ConnectionsWithTheSameOptionsShareOneSocket) {
  const std::size_t before = OptionSet::shared_count();
  std::vector<std::shared_ptr<const OptionSet>> held;
  for (int i = 0; i < 1000; ++i) held.push_back(OptionSet::of(nodelay(1)));
  for (const auto& s : held) ASSERT_EQ(s.get(), held[0].get());
  EXPECT_EQ(get_int(held[0]->fd(), IPPROTO_TCP, TCP_NODELAY), 1);
  EXPECT_EQ(OptionSet::shared_count(), before + 1);
  // Another set is another socket; the first is untouched by it.
  const auto off = OptionSet::of(nodelay(0));
  EXPECT_NE(off->fd(), held[0]->fd());
  EXPECT_EQ(get_int(off->fd(), IPPROTO_TCP, TCP_NODELAY), 0);
  EXPECT_EQ(get_int(held[0]->fd(), IPPROTO_TCP, TCP_NODELAY), 1);
}

TEST(OptionSocket, TheLastConnectionWithASetClosesItsSocket) {
  const std::size_t before = OptionSet::shared_count();
  int fd = -1;
  {
    const int prio = 5;
    auto set = OptionSet::of(with_call({}, SOL_SOCKET, SO_PRIORITY, &prio, sizeof prio));
    ASSERT_TRUE(set);
    fd = set->fd();
    EXPECT_EQ(fcntl(fd, F_GETFD), FD_CLOEXEC);
    EXPECT_EQ(OptionSet::shared_count(), before + 1);
  }
  EXPECT_EQ(fcntl(fd, F_GETFD), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(OptionSet::shared_count(), before);
}

TEST(OptionSocket, ALaterValueOfTheSameOptionReplacesTheEarlierOne) {
  OptionCalls c = nodelay(1);
  const int cork = 1, off = 0;
  c = with_call(std::move(c), IPPROTO_TCP, TCP_CORK, &cork, sizeof cork);
  c = with_call(std::move(c), IPPROTO_TCP, TCP_NODELAY, &off, sizeof off);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].name, TCP_CORK);  // in the order last set
  const auto set = OptionSet::of(c);
  ASSERT_TRUE(set);
  EXPECT_EQ(get_int(set->fd(), IPPROTO_TCP, TCP_NODELAY), 0);
  EXPECT_EQ(get_int(set->fd(), IPPROTO_TCP, TCP_CORK), 1);
}

TEST(OptionSocket, AReplayEndsAsTheCallsDidWhereOneOptionResetsAnother) {
  // ip(7): IP_TOS sets the socket's priority too; the application set SO_PRIORITY after.
  const int prio = 2, tos = 0x10;
  OptionCalls c = with_call({}, SOL_SOCKET, SO_PRIORITY, &prio, sizeof prio);
  c = with_call(std::move(c), IPPROTO_IP, IP_TOS, &tos, sizeof tos);
  c = with_call(std::move(c), SOL_SOCKET, SO_PRIORITY, &prio, sizeof prio);
  const int direct = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(setsockopt(direct, SOL_SOCKET, SO_PRIORITY, &prio, sizeof prio), 0);
  ASSERT_EQ(setsockopt(direct, IPPROTO_IP, IP_TOS, &tos, sizeof tos), 0);
  ASSERT_EQ(setsockopt(direct, SOL_SOCKET, SO_PRIORITY, &prio, sizeof prio), 0);
  const auto set = OptionSet::of(c);
  ASSERT_TRUE(set);
  EXPECT_EQ(get_int(set->fd(), SOL_SOCKET, SO_PRIORITY), get_int(direct, SOL_SOCKET, SO_PRIORITY));
  EXPECT_EQ(get_int(set->fd(), IPPROTO_IP, IP_TOS), get_int(direct, IPPROTO_IP, IP_TOS));
  close(direct);
}

TEST(OptionSocket, AFilterProgramIsNotReplayedOnAnotherSocket) {
  EXPECT_FALSE(replayable(SOL_SOCKET, SO_ATTACH_FILTER));
  EXPECT_TRUE(replayable(IPPROTO_TCP, TCP_NODELAY));
  EXPECT_TRUE(replayable(SOL_SOCKET, SO_KEEPALIVE));
  const auto own = OptionSet::own(nodelay(1));
  ASSERT_TRUE(own);
  EXPECT_EQ(own->calls(), nullptr);  // its connection's alone, changed in place
  EXPECT_EQ(get_int(own->fd(), IPPROTO_TCP, TCP_NODELAY), 1);
}

TEST(OptionSocket, AnOptionTheKernelRefusesFailsWithItsErrorAndMakesNothing) {
  const std::size_t before = OptionSet::shared_count();
  const short too_short = 1;  // TCP_NODELAY takes an int
  errno = 0;
  EXPECT_FALSE(
      OptionSet::of(with_call({}, IPPROTO_TCP, TCP_NODELAY, &too_short, sizeof too_short)));
  EXPECT_EQ(errno, EINVAL);
  const int v = 1;
  errno = 0;
  EXPECT_FALSE(OptionSet::of(with_call({}, IPPROTO_TCP, 12345, &v, sizeof v)));
  EXPECT_EQ(errno, ENOPROTOOPT);
  EXPECT_EQ(OptionSet::shared_count(), before);
}

TEST(OptionSocket, AnAdoptedSocketJoinsTheSetItsCallsMake) {
  const auto made = OptionSet::of(nodelay(1));
  const int own = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  ASSERT_EQ(setsockopt(own, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one), 0);
  const auto adopted = OptionSet::adopt(own, nodelay(1));
  EXPECT_EQ(adopted.get(), made.get());
  EXPECT_EQ(fcntl(own, F_GETFD), -1);  // closed: the set had a socket already
  // A kept socket is its connection's alone and in no registry.
  const int kept_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const auto kept = OptionSet::keep(kept_fd);
  EXPECT_EQ(kept->calls(), nullptr);
  EXPECT_EQ(kept->fd(), kept_fd);
}

TEST(OptionSocket, AFreshSocketHoldsNothingMoreThanFresh) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_FALSE(holds_more_than_fresh(fd));
  EXPECT_FALSE(bound_to_port(fd));
  const int one = 1;
  ASSERT_EQ(setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one), 0);
  EXPECT_TRUE(holds_more_than_fresh(fd));
  close(fd);
  const int b = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(b, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_TRUE(bound_to_port(b));
  EXPECT_TRUE(holds_more_than_fresh(b));
  close(b);
}

}  // namespace
}  // namespace esock::sockets
