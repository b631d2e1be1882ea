// GoogleTest checks of the less common data calls on a DDPMODE byte stream (splice through a
// pipe, sendmmsg/recvmmsg), shared by the ksock and dpdk suites and run over a connection
// whose peer echoes every octet. Without their shims these calls moved the signal socket's
// octets instead of the connection's (docs/sockets.md, "fd model").
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "ddp_helpers.h"

namespace esock_test {

// 1 MB goes pipe -> socket by splice and comes back socket -> pipe by splice, intact.
inline void expect_splice_both_ways(int fd) {
  const auto v = pattern(1 << 20, 17);
  int to[2], from[2];
  ASSERT_EQ(::pipe2(to, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(from, O_CLOEXEC), 0);
  std::thread feeder([&] {
    EXPECT_TRUE(write_all(to[1], v.data(), v.size()));
    ::close(to[1]);
  });
  std::thread sender([&] {
    std::size_t sent = 0;
    while (sent < v.size()) {
      const ssize_t n = ::splice(to[0], nullptr, fd, nullptr, v.size() - sent, 0);
      if (n <= 0) break;
      sent += static_cast<std::size_t>(n);
    }
    EXPECT_EQ(sent, v.size());
  });
  std::vector<std::uint8_t> back(v.size());
  std::thread drainer([&] { EXPECT_TRUE(read_all(from[0], back.data(), back.size())); });
  std::size_t got = 0;
  while (got < v.size()) {
    const ssize_t n = ::splice(fd, nullptr, from[1], nullptr, v.size() - got, 0);
    ASSERT_GT(n, 0) << std::strerror(errno);
    got += static_cast<std::size_t>(n);
  }
  feeder.join();
  sender.join();
  drainer.join();
  EXPECT_EQ(back, v);
  // A socket has no offset, and one end must be a pipe.
  loff_t off = 0;
  EXPECT_EQ(::splice(fd, &off, from[1], nullptr, 1, 0), -1);
  EXPECT_EQ(errno, ESPIPE);
  for (int p : {to[0], from[0], from[1]}) ::close(p);
}

// Three messages of two pieces each go out in one sendmmsg; recvmmsg (MSG_WAITFORONE)
// gathers the echo: the octets in order, each message's length reported.
inline void expect_mmsg_batches(int fd) {
  const std::string parts[6] = {"one", "-1", "two", "--2", "three", "---3"};
  iovec iov[6];
  mmsghdr out[3] = {};
  for (int i = 0; i < 6; ++i) iov[i] = {const_cast<char*>(parts[i].data()), parts[i].size()};
  for (int i = 0; i < 3; ++i) {
    out[i].msg_hdr.msg_iov = &iov[2 * i];
    out[i].msg_hdr.msg_iovlen = 2;
  }
  ASSERT_EQ(::sendmmsg(fd, out, 3, 0), 3) << std::strerror(errno);
  std::string want;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(out[i].msg_len, parts[2 * i].size() + parts[2 * i + 1].size());
    want += parts[2 * i] + parts[2 * i + 1];
  }
  std::string got;
  while (got.size() < want.size()) {
    char b[3][4];
    iovec in_iov[3];
    mmsghdr in[3] = {};
    for (int i = 0; i < 3; ++i) {
      in_iov[i] = {b[i], sizeof b[i]};
      in[i].msg_hdr.msg_iov = &in_iov[i];
      in[i].msg_hdr.msg_iovlen = 1;
    }
    const int n = ::recvmmsg(fd, in, 3, MSG_WAITFORONE, nullptr);
    ASSERT_GT(n, 0) << std::strerror(errno);
    for (int i = 0; i < n; ++i) got.append(b[i], in[i].msg_len);
  }
  EXPECT_EQ(got, want);
}

}  // namespace esock_test
