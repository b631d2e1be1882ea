// RAWMODE connections for the extension API's tests (ext_api_test.cc, ext_rfc7306_test.cc).
#pragma once

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "esock/esock.h"

namespace esock_test {

inline int raw_socket() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  if (::setsockopt(fd, SOL_ESOCK, ESOCK_RAWMODE, &one, sizeof one) != 0) return -1;
  return fd;
}

// A connected RAWMODE pair over loopback: *a initiator, *b responder.
inline void raw_pair(int* a, int* b) {
  const int l = raw_socket();
  ASSERT_GE(l, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(l, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  ASSERT_EQ(::listen(l, 4), 0);
  socklen_t len = sizeof sa;
  ::getsockname(l, reinterpret_cast<sockaddr*>(&sa), &len);
  std::thread t([&] { *b = ::accept(l, nullptr, nullptr); });
  *a = raw_socket();
  const int rc = ::connect(*a, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  t.join();
  ::close(l);
  ASSERT_EQ(rc, 0) << std::strerror(errno);
  ASSERT_GE(*b, 0) << std::strerror(errno);
}

// Waits (poll on the completion descriptor, bounded) for one completion.
inline esock_wc wait_wc(int fd) {
  esock_wc wc{};
  for (int i = 0; i < 1000; ++i) {
    const int n = esock_poll_cq(fd, &wc, 1);
    if (n == 1) return wc;
    if (n < 0) ADD_FAILURE() << "poll_cq: " << std::strerror(errno);
    if (n < 0) break;
    pollfd p{esock_comp_fd(fd), POLLIN, 0};
    if (::poll(&p, 1, 10000) != 1) break;
  }
  ADD_FAILURE() << "no completion";
  return wc;
}

inline bool readable_now(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

}  // namespace esock_test
