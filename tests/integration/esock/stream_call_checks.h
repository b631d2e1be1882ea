// GoogleTest checks of the data and descriptor calls on a DDPMODE byte stream, shared by the
// ksock and dpdk suites (issue 14: "tests for each semantic on both providers") and run over
// a connection whose peer echoes every octet: MSG_PEEK/MSG_WAITALL/MSG_DONTWAIT, vectored
// calls, FIONBIO/FIONREAD/SIOCOUTQ, O_NONBLOCK shared by dup'd numbers, sendfile, splice,
// sendmmsg/recvmmsg, shutdown(SHUT_RD). Without their shims splice and the batch calls moved
// the signal socket's octets instead of the connection's (docs/sockets.md, "fd model").
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/sockios.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include <algorithm>
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

// The echo of n octets has arrived: FIONREAD says so (bounded wait).
inline bool echo_arrived(int fd, int n) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int q = 0;
  while (std::chrono::steady_clock::now() < end) {
    if (::ioctl(fd, FIONREAD, &q) == 0 && q >= n) return true;
    pollfd p{fd, POLLIN, 0};
    ::poll(&p, 1, 10);
  }
  return false;
}

// MSG_PEEK leaves the octets, MSG_WAITALL waits for all, MSG_DONTWAIT never waits.
inline void expect_recv_flags(int fd) {
  ASSERT_EQ(::send(fd, "abcdef", 6, MSG_DONTWAIT), 6);
  ASSERT_TRUE(echo_arrived(fd, 3));
  char b[8] = {};
  ASSERT_EQ(::recv(fd, b, 3, MSG_PEEK), 3);
  EXPECT_EQ(std::string(b, 3), "abc");
  ASSERT_EQ(::recv(fd, b, 6, MSG_WAITALL), 6);
  EXPECT_EQ(std::string(b, 6), "abcdef");
  EXPECT_EQ(::recv(fd, b, sizeof b, MSG_DONTWAIT), -1);
  EXPECT_EQ(errno, EAGAIN);
}

// writev/sendmsg with several pieces, readv/recvmsg scattering the echo.
inline void expect_vector_calls(int fd) {
  char a[] = "12", b[] = "345", c[] = "6789";
  iovec out[3] = {{a, 2}, {b, 3}, {c, 4}};
  ASSERT_EQ(::writev(fd, out, 3), 9);
  msghdr m{};
  m.msg_iov = out;
  m.msg_iovlen = 3;
  ASSERT_EQ(::sendmsg(fd, &m, 0), 9);
  char x[4] = {}, y[5] = {};
  iovec in[2] = {{x, sizeof x}, {y, sizeof y}};
  ASSERT_TRUE(echo_arrived(fd, 18));
  ASSERT_EQ(::readv(fd, in, 2), 9);
  EXPECT_EQ(std::string(x, 4) + std::string(y, 5), "123456789");
  msghdr r{};
  r.msg_iov = in;
  r.msg_iovlen = 2;
  ASSERT_EQ(::recvmsg(fd, &r, MSG_WAITALL), 9);
  EXPECT_EQ(std::string(x, 4) + std::string(y, 5), "123456789");
  // preadv2/pwritev2 at offset -1 are readv/writev on a socket; an offset is ESPIPE.
  ASSERT_EQ(::pwritev2(fd, out, 3, -1, 0), 9);
  EXPECT_EQ(::pwritev2(fd, out, 3, 0, 0), -1);
  EXPECT_EQ(errno, ESPIPE);
  ASSERT_TRUE(echo_arrived(fd, 9));
  ASSERT_EQ(::preadv2(fd, in, 2, -1, 0), 9);
  EXPECT_EQ(std::string(x, 4) + std::string(y, 5), "123456789");
  EXPECT_EQ(::preadv2(fd, in, 2, -1, RWF_NOWAIT), -1);
  EXPECT_EQ(errno, EAGAIN);
}

// close_range and closefrom drop the DDPMODE numbers they close from esock's table, so a
// number reused afterwards is a plain descriptor (before, it still routed to the old socket).
inline void expect_close_range_forgets(int fd) {
  const int d = ::fcntl(fd, F_DUPFD, 900);
  ASSERT_GE(d, 900);
  ASSERT_EQ(esock_is_ddp(d), 1);
  ASSERT_EQ(::close_range(static_cast<unsigned>(d), static_cast<unsigned>(d), 0), 0);
  EXPECT_EQ(esock_is_ddp(d), 0);
  const int e = ::fcntl(fd, F_DUPFD, 950);
  ASSERT_GE(e, 950);
  ::closefrom(e);
  EXPECT_EQ(esock_is_ddp(e), 0);
  EXPECT_EQ(esock_is_ddp(fd), 1);  // the original number is untouched
  // ... and so are esock's own descriptors above e, which carry the connection.
  ASSERT_EQ(::write(fd, "ok", 2), 2);
  char b[2];
  ASSERT_TRUE(read_all(fd, reinterpret_cast<std::uint8_t*>(b), 2));
  EXPECT_EQ(std::string(b, 2), "ok");
}

// FIONBIO as O_NONBLOCK; FIONREAD what a read returns; SIOCOUTQ 0 once the peer took all.
inline void expect_ioctls(int fd) {
  int on = 1;
  ASSERT_EQ(::ioctl(fd, FIONBIO, &on), 0);
  EXPECT_TRUE(::fcntl(fd, F_GETFL) & O_NONBLOCK);
  char b[128];
  EXPECT_EQ(::read(fd, b, sizeof b), -1);
  EXPECT_EQ(errno, EAGAIN);
  on = 0;
  ASSERT_EQ(::ioctl(fd, FIONBIO, &on), 0);
  EXPECT_FALSE(::fcntl(fd, F_GETFL) & O_NONBLOCK);
  const auto v = pattern(100, 3);
  ASSERT_TRUE(write_all(fd, v.data(), v.size()));
  ASSERT_TRUE(echo_arrived(fd, 100));
  int q = -1;
  ASSERT_EQ(::ioctl(fd, FIONREAD, &q), 0);
  EXPECT_EQ(q, 100);
  ASSERT_TRUE(read_all(fd, reinterpret_cast<std::uint8_t*>(b), 100));
  ASSERT_EQ(::ioctl(fd, SIOCOUTQ, &q), 0);
  EXPECT_EQ(q, 0);
}

// O_NONBLOCK set through one number holds for every dup of it (one open file description).
inline void expect_nonblock_shared_by_dups(int fd) {
  const int d = ::dup(fd);
  ASSERT_GE(d, 0);
  ASSERT_EQ(::fcntl(d, F_SETFL, O_NONBLOCK), 0);
  EXPECT_TRUE(::fcntl(fd, F_GETFL) & O_NONBLOCK);
  char b[4];
  EXPECT_EQ(::read(fd, b, sizeof b), -1);
  EXPECT_EQ(errno, EAGAIN);
  ASSERT_EQ(::fcntl(fd, F_SETFL, 0), 0);
  EXPECT_FALSE(::fcntl(d, F_GETFL) & O_NONBLOCK);
  ::close(d);
}

// dup3 with O_CLOEXEC shares the connection and sets the flag on the new number only;
// dup2 onto a number that names the same socket keeps it; closing the copies leaves the
// original working.
inline void expect_dup_family(int fd) {
  const int d = ::dup3(fd, 800, O_CLOEXEC);
  ASSERT_EQ(d, 800) << std::strerror(errno);
  EXPECT_TRUE(::fcntl(d, F_GETFD) & FD_CLOEXEC);
  EXPECT_FALSE(::fcntl(fd, F_GETFD) & FD_CLOEXEC);
  EXPECT_EQ(esock_is_ddp(d), 1);
  const int e = ::dup(fd);
  ASSERT_GE(e, 0);
  ASSERT_EQ(::dup2(d, e), e);
  EXPECT_EQ(esock_is_ddp(e), 1);
  ASSERT_EQ(::write(d, "dd", 2), 2);
  ASSERT_EQ(::write(e, "ee", 2), 2);
  ::close(d);
  ::close(e);
  char b[4];
  ASSERT_TRUE(read_all(fd, reinterpret_cast<std::uint8_t*>(b), 4));
  EXPECT_EQ(std::string(b, 4), "ddee");
}

// sendfile from a file with and without an offset; the echo equals the file.
inline void expect_sendfile(int fd) {
  const auto v = pattern(300000, 5);
  FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  const int in = ::fileno(f);
  ASSERT_TRUE(write_all(in, v.data(), v.size()));
  off_t off = 0;
  std::vector<std::uint8_t> back(2 * v.size());
  std::thread reader([&] { EXPECT_TRUE(read_all(fd, back.data(), back.size())); });
  for (std::size_t sent = 0; sent < v.size();) {
    const ssize_t n = ::sendfile(fd, in, &off, v.size() - sent);
    ASSERT_GT(n, 0) << std::strerror(errno);
    sent += static_cast<std::size_t>(n);
  }
  EXPECT_EQ(off, static_cast<off_t>(v.size()));
  ASSERT_EQ(::lseek(in, 0, SEEK_SET), 0);
  for (std::size_t sent = 0; sent < v.size();) {  // no offset: the file position moves
    const ssize_t n = ::sendfile(fd, in, nullptr, v.size() - sent);
    ASSERT_GT(n, 0) << std::strerror(errno);
    sent += static_cast<std::size_t>(n);
  }
  EXPECT_EQ(::lseek(in, 0, SEEK_CUR), static_cast<off_t>(v.size()));
  reader.join();
  EXPECT_TRUE(std::equal(v.begin(), v.end(), back.begin()));
  EXPECT_TRUE(std::equal(v.begin(), v.end(), back.begin() + static_cast<std::ptrdiff_t>(v.size())));
  std::fclose(f);
}

// shutdown(SHUT_RD): reads end at once (0, and POLLIN), writing still works. Run over a
// peer that discards what it gets (an echo would write to a reader that is gone).
inline void expect_shut_rd(int fd) {
  ASSERT_EQ(::shutdown(fd, SHUT_RD), 0);
  char b[4];
  EXPECT_EQ(::read(fd, b, sizeof b), 0);
  pollfd p{fd, POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 1);
  EXPECT_EQ(::send(fd, "w", 1, MSG_NOSIGNAL), 1);
}

// All of the above on one echoed connection, in an order that leaves nothing unread.
inline void expect_every_call(int fd) {
  expect_recv_flags(fd);
  expect_vector_calls(fd);
  expect_ioctls(fd);
  expect_nonblock_shared_by_dups(fd);
  expect_dup_family(fd);
  expect_sendfile(fd);
  expect_splice_both_ways(fd);
  expect_mmsg_batches(fd);
  expect_close_range_forgets(fd);
}

}  // namespace esock_test
