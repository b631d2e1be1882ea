// Helpers the socket benchmarks share (bench/esock, bench/azsdp): whole-buffer reads and
// writes on a blocking socket, a steady clock in seconds, and the CPU seconds a process's
// threads spent so far.
#pragma once

#include <dirent.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <fstream>
#include <string>

namespace esock_bench {

inline bool write_all(int fd, const void* p, std::size_t n) {
  const auto* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = ::write(fd, c, n);
    if (w <= 0) return false;
    c += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

inline bool read_all(int fd, void* p, std::size_t n) {
  auto* c = static_cast<char*>(p);
  while (n > 0) {
    const ssize_t r = ::read(fd, c, n);
    if (r <= 0) return false;
    c += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

inline double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Seconds on a CPU of every live thread of process pid so far (schedstat's first field is
// nanoseconds on the CPU, user and system time alike). Threads that ended are not counted.
inline double cpu_seconds(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return 0;
  double total = 0;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f(dir + "/" + e->d_name + "/schedstat");
    double ns = 0;
    if (f >> ns) total += ns / 1e9;
  }
  ::closedir(d);
  return total;
}

// A server's loop: waits in select() on both listeners (plain and DDPMODE) and hands each
// accepted connection to on_conn(fd), which owns it.
template <typename F>
[[noreturn]] void accept_loop(int plain_l, int ddp_l, F on_conn) {
  for (;;) {
    fd_set r;
    FD_ZERO(&r);
    FD_SET(plain_l, &r);
    FD_SET(ddp_l, &r);
    if (::select(std::max(plain_l, ddp_l) + 1, &r, nullptr, nullptr, nullptr) < 0) ::_exit(1);
    for (int l : {plain_l, ddp_l}) {
      if (!FD_ISSET(l, &r)) continue;
      const int c = ::accept(l, nullptr, nullptr);
      if (c >= 0) on_conn(c);
    }
  }
}

}  // namespace esock_bench
