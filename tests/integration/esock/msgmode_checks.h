// GoogleTest checks of MSGMODE shared by the ksock and dpdk suites (docs/stream-protocol.md
// section 7), run over a connection whose peer echoes each message as one message.
#pragma once

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cstring>

#include "ddp_helpers.h"

namespace esock_test {

// A read into a buffer shorter than the message returns the buffer's worth with MSG_TRUNC
// (SOCK_SEQPACKET semantics); the rest of that message is gone, the next arrives whole.
inline void expect_short_buffer_truncates(int fd) {
  const auto big = pattern(5000, 9);
  ASSERT_EQ(::send(fd, big.data(), big.size(), 0), 5000);
  ASSERT_EQ(::send(fd, "x", 1, 0), 1);
  std::uint8_t small[100];
  iovec v{small, sizeof small};
  msghdr m{};
  m.msg_iov = &v;
  m.msg_iovlen = 1;
  ASSERT_EQ(::recvmsg(fd, &m, 0), 100);
  EXPECT_TRUE(m.msg_flags & MSG_TRUNC);
  EXPECT_EQ(std::memcmp(small, big.data(), 100), 0);
  ASSERT_EQ(::recv(fd, small, sizeof small, 0), 1);
  EXPECT_EQ(small[0], 'x');
}

}  // namespace esock_test
