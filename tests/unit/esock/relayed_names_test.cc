// The names of plain relay ends (lib/esock/runtime/relayed_names.h): an AF_UNIX stream end
// registered for a TCP connection answers as that connection, a dup of it too, another
// socket not; and a full table makes room from the ends this process has closed, so a
// long-lived connection keeps its names however many short ones came after it.
#include "esock/runtime/relayed_names.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

namespace esock::sockets {
namespace {

sockaddr_in addr(const char* ip, std::uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  ::inet_pton(AF_INET, ip, &a.sin_addr);
  return a;
}

bool peer_port(int fd, std::uint16_t* port) {
  sockaddr_in got{};
  socklen_t len = sizeof got;
  int r = -1;
  if (!relayed_name(fd, true, reinterpret_cast<sockaddr*>(&got), &len, &r) || r != 0) return false;
  *port = ntohs(got.sin_port);
  return len == sizeof got && got.sin_family == AF_INET;
}

TEST(RelayedNames, AnEndAndItsDupAnswerAsTheConnectionAnotherSocketDoesNot) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  relayed_add(sv[0], addr("10.0.0.2", 4000), addr("10.0.0.1", 5000));
  std::uint16_t port = 0;
  ASSERT_TRUE(peer_port(sv[0], &port));
  EXPECT_EQ(port, 5000);
  const int d = ::dup(sv[0]);
  ASSERT_TRUE(peer_port(d, &port));
  EXPECT_FALSE(peer_port(sv[1], &port));
  int v = 1, r = -1;
  EXPECT_TRUE(relayed_setsockopt(d, IPPROTO_TCP, TCP_NODELAY, &v, sizeof v, &r));
  EXPECT_EQ(r, 0);
  v = 0;
  socklen_t vl = sizeof v;
  EXPECT_TRUE(relayed_getsockopt(sv[0], IPPROTO_TCP, TCP_NODELAY, &v, &vl, &r));
  EXPECT_EQ(v, 1);
  for (int fd : {sv[0], sv[1], d}) ::close(fd);
}

TEST(RelayedNames, AFullTableForgetsClosedEndsBeforeLiveOnes) {
  int keep[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, keep), 0);
  relayed_add(keep[0], addr("10.0.0.2", 4001), addr("10.0.0.1", 6001));
  // Many short connections after it, each closed before the next.
  for (std::size_t i = 0; i < 3 * relayed_capacity; ++i) {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    relayed_add(sv[0], addr("10.0.0.2", 4002), addr("10.0.0.1", 6002));
    ::close(sv[0]);
    ::close(sv[1]);
  }
  EXPECT_LE(relayed_count(), relayed_capacity);
  std::uint16_t port = 0;
  ASSERT_TRUE(peer_port(keep[0], &port)) << "the live end was forgotten";
  EXPECT_EQ(port, 6001);
  ::close(keep[0]);
  ::close(keep[1]);
}

}  // namespace
}  // namespace esock::sockets
