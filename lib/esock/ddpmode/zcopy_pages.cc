#include "esock/ddpmode/zcopy_pages.h"

#include <pthread.h>
#include <unistd.h>

namespace esock::sockets {

std::uintptr_t page_size() {
  static const auto p = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  return p;
}

bool on_own_stack(const std::uint8_t* p, std::size_t n) {
  thread_local std::uintptr_t lo = 0, hi = 0;
  if (hi == 0) {
    pthread_attr_t attr;
    void* addr = nullptr;
    std::size_t size = 0;
    if (::pthread_getattr_np(::pthread_self(), &attr) == 0) {
      if (::pthread_attr_getstack(&attr, &addr, &size) == 0) {
        lo = reinterpret_cast<std::uintptr_t>(addr);
        hi = lo + size;
      }
      ::pthread_attr_destroy(&attr);
    }
    if (hi == 0) hi = 1;  // unknown: asked once
  }
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  return a < hi && lo < a + n;
}

}  // namespace esock::sockets
