// DDPMODE over the kernel-socket provider, blocking mode: connect/accept and every data
// call (read/write/readv/writev/send/recv/sendmsg/recvmsg) over a real loopback
// connection, copies and rendezvous, stream and MSGMODE; every octet verified.
#include <gtest/gtest.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <cstring>
#include <thread>

#include "ddp_helpers.h"
#include "msgmode_checks.h"
#include "stream_call_checks.h"

using namespace esock_test;

namespace {

TEST(DdpData, EchoOfManySizesEveryCall) {
  std::uint16_t port = 0;
  const int lfd = ddp_listener(&port);
  ASSERT_GE(lfd, 0);
  std::thread server([lfd] {
    const int c = ::accept(lfd, nullptr, nullptr);
    ASSERT_GE(c, 0);
    EXPECT_EQ(esock_is_ddp(c), 1);
    std::vector<std::uint8_t> buf(1 << 20);
    for (;;) {  // echo until EOF, alternating the receive and send calls
      static int turn = 0;
      ssize_t r;
      switch (turn++ % 3) {
        case 0:
          r = ::read(c, buf.data(), buf.size());
          break;
        case 1:
          r = ::recv(c, buf.data(), buf.size(), 0);
          break;
        default: {
          iovec v[2] = {{buf.data(), 100}, {buf.data() + 100, buf.size() - 100}};
          r = ::readv(c, v, 2);
        }
      }
      if (r <= 0) {
        EXPECT_EQ(r, 0) << std::strerror(errno);
        break;
      }
      ASSERT_TRUE(write_all(c, buf.data(), static_cast<std::size_t>(r)));
    }
    ::close(c);
  });
  const int fd = ddp_connect(port);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  EXPECT_EQ(esock_is_ddp(fd), 1);
  std::uint32_t seed = 1;
  for (std::size_t n : {1ul, 13ul, 1000ul, 65535ul, 65536ul, 300000ul, 1ul << 20, 7ul}) {
    const auto out = pattern(n, seed++);
    switch (seed % 4) {
      case 0:
        ASSERT_TRUE(write_all(fd, out.data(), n));
        break;
      case 1:
        ASSERT_EQ(::send(fd, out.data(), n, 0), static_cast<ssize_t>(n));
        break;
      case 2: {
        iovec v[2] = {{const_cast<std::uint8_t*>(out.data()), n / 2},
                      {const_cast<std::uint8_t*>(out.data()) + n / 2, n - n / 2}};
        ASSERT_EQ(::writev(fd, v, 2), static_cast<ssize_t>(n));
        break;
      }
      default: {
        iovec v{const_cast<std::uint8_t*>(out.data()), n};
        msghdr m{};
        m.msg_iov = &v;
        m.msg_iovlen = 1;
        ASSERT_EQ(::sendmsg(fd, &m, 0), static_cast<ssize_t>(n));
      }
    }
    std::vector<std::uint8_t> in(n);
    if (seed % 2) {
      ASSERT_TRUE(read_all(fd, in.data(), n)) << "size " << n;
    } else {
      iovec v{in.data(), n};
      msghdr m{};
      m.msg_iov = &v;
      m.msg_iovlen = 1;
      ASSERT_EQ(::recvmsg(fd, &m, MSG_WAITALL), static_cast<ssize_t>(n));
    }
    ASSERT_TRUE(in == out) << "size " << n;
  }
  ASSERT_EQ(::close(fd), 0);
  server.join();
  ::close(lfd);
}

// An echo server that reads small pieces and writes each back (copied: below the
// rendezvous threshold) while its client is still inside one big write (rendezvous): the
// echoes fill the client's receive buffers and take the server's credits, so the server
// blocks in write with the rest of the client's advertisement unread. The server must take
// that data into its own buffer before it waits (docs/stream-protocol.md 6.1), as TCP's
// buffering would, or both wait forever (examples.sockets.ddp_echo hung so once copies went
// up to 256 KiB). The server is another process, as in the example: in one process the
// client's own calls run the server connection's rounds too, which hides the hang.
TEST(DdpData, AnEchoServerInWriteTakesTheDataOfAClientStillWriting) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::uint16_t port = 0;
    const int lfd = ddp_listener(&port);
    if (lfd < 0 || ::write(ready[1], &port, sizeof port) != sizeof port) ::_exit(2);
    const int c = ::accept(lfd, nullptr, nullptr);
    if (c < 0) ::_exit(3);
    std::vector<std::uint8_t> buf(64 * 1024);
    for (;;) {
      const ssize_t r = ::read(c, buf.data(), buf.size());
      if (r == 0) ::_exit(::close(c) == 0 ? 0 : 4);
      if (r < 0 || !write_all(c, buf.data(), static_cast<std::size_t>(r))) ::_exit(5);
    }
  }
  std::uint16_t port = 0;
  ASSERT_EQ(::read(ready[0], &port, sizeof port), static_cast<ssize_t>(sizeof port));
  const int fd = ddp_connect(port);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  // Growing messages, each written whole and then read back, as examples/sockets'
  // ddp_echo_client does; the largest are four times what the client's buffers hold.
  std::uint32_t seed = 1;
  for (std::size_t n = 1; n <= (4u << 20); n = n * 4 + 3) {
    const auto out = pattern(n, seed++);
    ASSERT_EQ(::write(fd, out.data(), n), static_cast<ssize_t>(n));
    std::vector<std::uint8_t> in(n);
    ASSERT_TRUE(read_all(fd, in.data(), n)) << "size " << n;
    ASSERT_TRUE(in == out) << "size " << n;
  }
  ASSERT_EQ(::close(fd), 0);
  int st = 0;
  ASSERT_EQ(::waitpid(child, &st, 0), child);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << st;
  ::close(ready[0]);
  ::close(ready[1]);
}

TEST(DdpData, MsgmodeKeepsBoundaries) {
  std::uint16_t port = 0;
  const int lfd = ddp_listener(&port, true);
  ASSERT_GE(lfd, 0);
  std::thread server([lfd] {
    const int c = ::accept(lfd, nullptr, nullptr);
    ASSERT_GE(c, 0);
    std::vector<std::uint8_t> buf(200000);
    for (;;) {
      const ssize_t r = ::recv(c, buf.data(), buf.size(), 0);
      // The empty message ends the test; it is not echoed: the client closes right after
      // sending it, so an echo would race with that close (and fail once the engine
      // reports the failed post instead of dropping the message silently).
      if (r <= 0) break;
      ASSERT_EQ(::send(c, buf.data(), static_cast<std::size_t>(r), 0), r);
    }
    ::close(c);
  });
  const int fd = ddp_connect(port, true);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  for (std::size_t n : {5ul, 70000ul, 1ul, 150000ul, 3000ul}) {
    const auto out = pattern(n, static_cast<std::uint32_t>(n));
    ASSERT_EQ(::send(fd, out.data(), n, 0), static_cast<ssize_t>(n));
  }
  for (std::size_t n : {5ul, 70000ul, 1ul, 150000ul, 3000ul}) {
    std::vector<std::uint8_t> in(200000);
    ASSERT_EQ(::recv(fd, in.data(), in.size(), 0), static_cast<ssize_t>(n));
    EXPECT_TRUE(std::equal(in.begin(), in.begin() + static_cast<long>(n),
                           pattern(n, static_cast<std::uint32_t>(n)).begin()));
  }
  expect_short_buffer_truncates(fd);
  ASSERT_EQ(::send(fd, "", 0, 0), 0);
  ::close(fd);
  server.join();
  ::close(lfd);
}

// Every data and descriptor call on one echoed connection (stream_call_checks.h); splice and
// sendmmsg/recvmmsg among them, which the kernel served from the signal socket before.
TEST(DdpData, EveryCallOnAnEchoedStream) {
  DdpPair p;
  ASSERT_GE(p.srv, 0);
  std::thread echo([&] {
    std::vector<std::uint8_t> b(65536);
    for (ssize_t n; (n = ::read(p.srv, b.data(), b.size())) > 0;)
      if (!write_all(p.srv, b.data(), static_cast<std::size_t>(n))) break;
  });
  expect_every_call(p.cli);
  ::shutdown(p.cli, SHUT_WR);
  echo.join();
  DdpPair q;
  ASSERT_GE(q.srv, 0);
  expect_shut_rd(q.cli);
}

}  // namespace
