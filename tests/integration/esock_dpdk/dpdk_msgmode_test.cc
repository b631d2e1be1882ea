// ESOCK_MSGMODE over the dpdk provider (docs/stream-protocol.md section 7): every write is
// one message and every read returns at most one, against dpdk_peer's MSGMODE echo
// listener; every octet verified.
#include <arpa/inet.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "ddp_helpers.h"
#include "esock/esock.h"
#include "msgmode_checks.h"
#include "peer_env.h"

namespace {

using esock_dpdk_test::PeerEnv;
using esock_test::pattern;

int connect_msgmode(std::uint16_t port) {
  const int fd = esock_test::ddp_socket(true);
  const sockaddr_in a = PeerEnv::peer_addr(port);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0) return fd;
  const int e = errno;
  if (fd >= 0) ::close(fd);
  errno = e;
  return -1;
}

// Receives one message into a buffer larger than any the tests send and checks it.
void expect_message(int fd, std::size_t n, std::uint32_t seed) {
  std::vector<std::uint8_t> in((2 << 20) + 1);
  ASSERT_EQ(::recv(fd, in.data(), in.size(), 0), static_cast<ssize_t>(n)) << "size " << n;
  const auto want = pattern(n, seed);
  EXPECT_TRUE(std::equal(want.begin(), want.end(), in.begin())) << "size " << n;
}

TEST(DpdkMsgmode, EchoKeepsEveryMessageWhole) {
  const int fd = connect_msgmode(PeerEnv::msgport());
  ASSERT_GE(fd, 0) << std::strerror(errno);
  int on = 0;
  socklen_t len = sizeof on;
  ASSERT_EQ(::getsockopt(fd, SOL_ESOCK, ESOCK_MSGMODE, &on, &len), 0);
  EXPECT_EQ(on, 1);
  // One at a time, copies and rendezvous (past the threshold) alike.
  for (std::size_t n : {1ul, 5ul, 3000ul, 70000ul, 150000ul, 1ul << 20}) {
    const auto out = pattern(n, static_cast<std::uint32_t>(n));
    ASSERT_EQ(::send(fd, out.data(), n, 0), static_cast<ssize_t>(n));
    expect_message(fd, n, static_cast<std::uint32_t>(n));
  }
  // Many small ones in flight together: queued back to back, still one per read.
  const std::vector<std::size_t> sizes = {7, 1, 300, 2048, 13, 999, 4, 1500, 64, 2};
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const auto out = pattern(sizes[i], static_cast<std::uint32_t>(100 + i));
    ASSERT_EQ(::write(fd, out.data(), out.size()), static_cast<ssize_t>(out.size()));
  }
  for (std::size_t i = 0; i < sizes.size(); ++i)
    expect_message(fd, sizes[i], static_cast<std::uint32_t>(100 + i));
  ASSERT_EQ(::send(fd, "", 0, 0), 0);  // the empty message ends the peer's echo
  std::uint8_t b[8];
  EXPECT_EQ(::recv(fd, b, sizeof b, 0), 0);  // its close
  EXPECT_EQ(::close(fd), 0);
}

TEST(DpdkMsgmode, ShortBufferTruncatesWithMsgTrunc) {
  const int fd = connect_msgmode(PeerEnv::msgport());
  ASSERT_GE(fd, 0) << std::strerror(errno);
  esock_test::expect_short_buffer_truncates(fd);
  EXPECT_EQ(::close(fd), 0);  // EOF ends the peer's echo
}

TEST(DpdkMsgmode, MsgmodeAgainstAStreamListenerFailsWithEproto) {
  const int fd = connect_msgmode(PeerEnv::port());
  EXPECT_EQ(fd, -1);
  EXPECT_EQ(errno, EPROTO);
}

}  // namespace
