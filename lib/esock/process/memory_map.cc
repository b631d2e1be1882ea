#include "esock/process/memory_map.h"

#include <fcntl.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "esock/process/libc.h"

namespace esock::sockets {

namespace {

// /proc/self/maps, whole (a few KiB to a few hundred for most programs).
std::string read_maps() {
  std::string text;
  const int fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buf[16384];
  for (;;) {
    const ssize_t n = ESOCK_LIBC(read)(fd, buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ESOCK_LIBC(close)(fd);
  return text;
}

}  // namespace

bool range_mapped(const void* addr, std::size_t len, bool writable) {
  const auto start = reinterpret_cast<std::uintptr_t>(addr);
  std::uintptr_t cur = start;
  const std::uintptr_t end = start + len;  // the caller checked it does not wrap
  const std::string maps = read_maps();
  // Lines "lo-hi perms ..." in address order: walk them while they cover cur contiguously.
  std::size_t at = 0;
  while (cur < end && at < maps.size()) {
    const std::size_t eol = maps.find('\n', at);
    const std::string line = maps.substr(at, eol == std::string::npos ? eol : eol - at);
    at = eol == std::string::npos ? maps.size() : eol + 1;
    char* p = nullptr;
    const std::uintptr_t lo = std::strtoull(line.c_str(), &p, 16);
    if (p == nullptr || *p != '-') continue;
    const std::uintptr_t hi = std::strtoull(p + 1, &p, 16);
    if (p == nullptr || *p != ' ' || hi <= cur) continue;
    if (lo > cur) return false;  // a hole at cur
    const bool r = p[1] == 'r', w = p[2] == 'w';
    if (!r || (writable && !w)) return false;
    cur = hi;
  }
  return cur >= end;
}

}  // namespace esock::sockets
