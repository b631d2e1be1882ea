// Helpers for DDPMODE tests linked with libesock (-lesock): loopback listener/client set up
// only with setsockopt + ordinary socket calls, and full-length read/write loops.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "esock/esock.h"

namespace esock_test {

inline int ddp_socket(bool msgmode = false) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  if (::setsockopt(fd, SOL_ESOCK, msgmode ? ESOCK_MSGMODE : ESOCK_DDPMODE, &one, sizeof one) != 0)
    return -1;
  return fd;
}

// A DDPMODE (or MSGMODE) listener on an ephemeral port of addr (host order; 127.0.0.1
// unless told); *port receives the port. -1 on failure.
inline int ddp_listener(std::uint16_t* port, bool msgmode = false,
                        in_addr_t addr = INADDR_LOOPBACK) {
  const int fd = ddp_socket(msgmode);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(addr);
  socklen_t l = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(fd, 16) != 0 || ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &l) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  *port = ntohs(a.sin_port);
  return fd;
}

inline int ddp_connect(std::uint16_t port, bool msgmode = false) {
  const int fd = ddp_socket(msgmode);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

inline bool write_all(int fd, const std::uint8_t* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

inline bool read_all(int fd, std::uint8_t* p, std::size_t n) {
  while (n > 0) {
    const ssize_t r = ::read(fd, p, n);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

inline std::vector<std::uint8_t> pattern(std::size_t n, std::uint32_t seed) {
  std::vector<std::uint8_t> v(n);
  std::mt19937 r(seed);
  for (auto& x : v) x = static_cast<std::uint8_t>(r());
  return v;
}

// A connected DDPMODE pair in one process: the listener, the client end and the server end.
struct DdpPair {
  DdpPair() {
    lfd = ddp_listener(&port);
    std::thread t([&] { srv = ::accept(lfd, nullptr, nullptr); });
    cli = ddp_connect(port);
    t.join();
  }
  ~DdpPair() {
    for (int fd : {cli, srv, lfd})
      if (fd >= 0) ::close(fd);
  }
  DdpPair(const DdpPair&) = delete;
  DdpPair& operator=(const DdpPair&) = delete;
  int lfd = -1, cli = -1, srv = -1;
  std::uint16_t port = 0;
};

// Anonymous pages of its own (AZ-SDP tests: guards cover whole pages, none shared).
struct MappedPages {
  explicit MappedPages(std::size_t n) : len(n) {
    p = static_cast<std::uint8_t*>(
        ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  }
  ~MappedPages() { ::munmap(p, len); }
  MappedPages(const MappedPages&) = delete;
  std::uint8_t* p;
  std::size_t len;
};

// The permissions /proc/self/maps shows for the mapping that holds p ("rw-p", "r--p").
inline std::string perms_at(const void* p) {
  std::ifstream maps("/proc/self/maps");
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  for (std::string line; std::getline(maps, line);) {
    unsigned long lo = 0, hi = 0;
    char perms[5] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %4s", &lo, &hi, perms) == 3 && lo <= a && a < hi)
      return perms;
  }
  return "?";
}

inline int set_zcopy_mode(int fd, int mode) {
  return ::setsockopt(fd, SOL_ESOCK, ESOCK_ZCOPY_MODE, &mode, sizeof mode);
}

}  // namespace esock_test
