// Kernel roles: the same workloads over Linux TCP on 127.0.0.1 with TCP_NODELAY on both
// ends, each process pinned to its own core; blocking calls, or (--poll=busy) spinning on
// non-blocking ones.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "roles.h"

namespace esock::bench {
namespace {

// spin: never block; retry MSG_DONTWAIT calls at once (the kernel's analogue of a
// busy-polling loop, so both stacks can be compared with the waiting taken out).
class KernelLink {
 public:
  KernelLink(int fd, bool spin, unsigned timeout_s)
      : fd_(fd),
        flags_(spin ? MSG_DONTWAIT : 0),
        timeout_ns_(std::int64_t{timeout_s} * 1'000'000'000) {}
  ~KernelLink() { ::close(fd_); }
  KernelLink(const KernelLink&) = delete;
  KernelLink& operator=(const KernelLink&) = delete;

  bool send_all(const std::uint8_t* p, std::size_t n) {
    const std::int64_t end = mono_ns() + timeout_ns_;
    while (n > 0) {
      const ssize_t k = ::send(fd_, p, n, MSG_NOSIGNAL | flags_);
      if (k < 0 && (errno == EINTR || (flags_ && errno == EAGAIN && mono_ns() < end))) {
        continue;
      }
      if (k <= 0) return fail("send");
      p += k;
      n -= static_cast<std::size_t>(k);
    }
    return true;
  }
  bool recv_all(std::uint8_t* p, std::size_t n) {
    const std::int64_t end = mono_ns() + timeout_ns_;
    while (n > 0) {
      const ssize_t k = ::recv(fd_, p, n, flags_);
      if (k < 0 && (errno == EINTR || (flags_ && errno == EAGAIN && mono_ns() < end))) {
        continue;
      }
      if (k <= 0) return fail(k == 0 ? "recv (peer closed)" : "recv");
      p += k;
      n -= static_cast<std::size_t>(k);
    }
    return true;
  }

 private:
  static bool fail(const char* what) {
    std::fprintf(stderr, "kernel: %s: %s\n", what, std::strerror(errno));
    return false;
  }
  int fd_;
  int flags_;
  std::int64_t timeout_ns_;  // per call; blocking calls have SO_RCVTIMEO/SO_SNDTIMEO
};

void tune(int fd, unsigned timeout_s) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout_s);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

sockaddr_in loopback(std::uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

}  // namespace

bool pin_to_core(unsigned core) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  return ::sched_setaffinity(0, sizeof set, &set) == 0;
}

int kernel_server(const RoleOptions& o) {
  if (!pin_to_core(o.core)) std::fprintf(stderr, "kernel server: cannot pin to %u\n", o.core);
  const int ls = ::socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  ::setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a = loopback(o.port);
  socklen_t alen = sizeof a;
  if (ls < 0 || ::bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(ls, 4) != 0 || ::getsockname(ls, reinterpret_cast<sockaddr*>(&a), &alen) != 0) {
    std::fprintf(stderr, "kernel server: listen: %s\n", std::strerror(errno));
    return 1;
  }
  std::printf("ready %u\n", ntohs(a.sin_port));
  std::fflush(stdout);
  const int fd = ::accept(ls, nullptr, nullptr);
  ::close(ls);
  if (fd < 0) {
    std::fprintf(stderr, "kernel server: accept: %s\n", std::strerror(errno));
    return 1;
  }
  tune(fd, o.timeout_s);
  KernelLink link(fd, o.busy_poll, o.timeout_s);
  return serve(link) ? 0 : 1;
}

int kernel_client(const RoleOptions& o) {
  if (!pin_to_core(o.core)) std::fprintf(stderr, "kernel client: cannot pin to %u\n", o.core);
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  const sockaddr_in a = loopback(o.port);
  if (fd < 0 || ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    std::fprintf(stderr, "kernel client: connect: %s\n", std::strerror(errno));
    return 1;
  }
  tune(fd, o.timeout_s);
  KernelLink link(fd, o.busy_poll, o.timeout_s);
  return run_client(link, o.plan) ? 0 : 1;
}

}  // namespace esock::bench
