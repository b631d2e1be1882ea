#include "esock/ksock/socket_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace esock::ksock {

namespace {

SockResult failure(int err, std::string what) {
  SockResult r;
  r.err = err;
  r.why = std::move(what) + ": " + std::strerror(err);
  return r;
}

int wait_fd(int fd, short events, int timeout_ms) {
  pollfd p{fd, events, 0};
  int r;
  do {
    r = ::poll(&p, 1, timeout_ms);
  } while (r < 0 && errno == EINTR);
  if (r == 0) return ETIMEDOUT;
  return r < 0 ? errno : 0;
}

}  // namespace

SockResult tcp_connect(const std::string& host, std::uint16_t port, int timeout_ms) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rc != 0) {
    SockResult r;
    r.err = EHOSTUNREACH;
    r.why = "cannot resolve " + host + ": " + gai_strerror(rc);
    return r;
  }
  SockResult last = failure(ECONNREFUSED, "connect " + host + ":" + service);
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      last = failure(errno, "socket");
      continue;
    }
    int err = 0;
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
      err = errno;
      if (err == EINPROGRESS) {
        err = wait_fd(fd, POLLOUT, timeout_ms);
        if (err == 0) {
          socklen_t len = sizeof err;
          ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        }
      }
    }
    if (err == 0) {
      ::freeaddrinfo(res);
      SockResult ok;
      ok.fd = fd;
      return ok;
    }
    ::close(fd);
    last = failure(err, "connect " + host + ":" + service);
  }
  ::freeaddrinfo(res);
  return last;
}

SockResult tcp_listen(const std::string& addr, std::uint16_t port, int backlog) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  if (::inet_pton(AF_INET, addr.c_str(), &sa.sin_addr) != 1) {
    SockResult r;
    r.err = EINVAL;
    r.why = "not an IPv4 address: " + addr;
    return r;
  }
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return failure(errno, "socket");
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0 || ::listen(fd, backlog) < 0) {
    SockResult r = failure(errno, "listen on " + addr + ":" + std::to_string(port));
    ::close(fd);
    return r;
  }
  SockResult ok;
  ok.fd = fd;
  return ok;
}

SockResult tcp_accept(int listen_fd, int timeout_ms) {
  if (int err = wait_fd(listen_fd, POLLIN, timeout_ms); err != 0) return failure(err, "accept");
  int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) return failure(errno, "accept");
  SockResult ok;
  ok.fd = fd;
  return ok;
}

int prepare_stream_socket(int fd) {
  int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0) return errno;
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) return errno;
  return 0;
}

std::uint16_t local_port(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) < 0) return 0;
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return 0;
}

std::size_t effective_mss(int fd, std::size_t fallback) {
  int mss = 0;
  socklen_t len = sizeof mss;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &len) < 0 || mss <= 0) return fallback;
  return static_cast<std::size_t>(mss);
}

}  // namespace esock::ksock
