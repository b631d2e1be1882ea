#include "esock/process/page_flip.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace esock::sockets::page_flip {

bool private_anonymous(void* p, std::size_t len) {
  // MADV_WIPEONFORK refuses (EINVAL) any range with a shared or file-backed mapping in it;
  // it changes only what a fork child would see, and KEEPONFORK puts that back at once.
  const int saved = errno;
  const bool ok = ::madvise(p, len, MADV_WIPEONFORK) == 0;
  (void)::madvise(p, len, MADV_KEEPONFORK);
  errno = saved;
  return ok;
}

void* staging(void* p, std::size_t len, bool* own) {
  // (Linux 5.7; for private anonymous memory, which private_anonymous() made sure of.)
  const long r = ::syscall(SYS_mremap, p, len, len, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, nullptr);
  if (r != -1) {
    *own = true;
    return reinterpret_cast<void*>(r);
  }
  *own = false;
  void* q = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return q == MAP_FAILED ? nullptr : q;
}

bool land(void* staging, void* dst, std::size_t len) {
  const long r = ::syscall(SYS_mremap, staging, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
  return r != -1;
}

void copy_back(void* staging, void* dst, std::size_t len) {
  ::mprotect(dst, len, PROT_READ | PROT_WRITE);
  std::memcpy(dst, staging, len);
  (void)::syscall(SYS_munmap, staging, len);
}

void discard(void* staging, void* dst, std::size_t len, bool own) {
  if (staging == nullptr) return;
  if (!own) {
    (void)::syscall(SYS_munmap, staging, len);
  } else if (!land(staging, dst, len)) {
    copy_back(staging, dst, len);
  }
}

}  // namespace esock::sockets::page_flip
