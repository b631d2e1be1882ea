// Interposed memory calls (AZ-SDP, docs/sockets.md "Zero-copy modes"): the pages an
// asynchronous write sends from must stay mapped until the peer pulled them, since the
// transport reads them by reference. free(), realloc(), munmap() and mremap() of memory
// that holds guarded pages (process/page_guard.h) wait until those are released; with no
// guard on they cost one relaxed load. glibc's free() unmaps a large block with its own
// internal call, which no interposition sees, hence free() and realloc() themselves.
//
// The next definition (glibc's, or a malloc preloaded after libesock) is found with
// dlsym(RTLD_NEXT) at the first call; dlsym itself may allocate and free, so calls made
// while it resolves go to glibc's directly.
#include <dlfcn.h>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>

#include "esock/process/page_guard.h"

namespace pg = esock::sockets::page_guard;

extern "C" {
void __libc_free(void* p);
void* __libc_realloc(void* p, size_t n);
}

namespace {

using FreeFn = void (*)(void*);
using ReallocFn = void* (*)(void*, size_t);
std::atomic<FreeFn> g_free{nullptr};
std::atomic<ReallocFn> g_realloc{nullptr};
thread_local bool t_resolving __attribute__((tls_model("initial-exec"))) = false;

template <class Fn>
Fn next(std::atomic<Fn>& slot, const char* name, Fn fallback) {
  Fn f = slot.load(std::memory_order_acquire);
  if (f != nullptr) return f;
  if (t_resolving) return fallback;
  t_resolving = true;
  f = reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, name));
  t_resolving = false;
  if (f == nullptr) f = fallback;
  slot.store(f, std::memory_order_release);
  return f;
}

void wait_for(const void* p, std::size_t len) {
  if (p != nullptr && len != 0 && pg::any()) pg::wait_unguarded(p, len);
}

}  // namespace

extern "C" {

void free(void* p) {
  if (p != nullptr && pg::any()) pg::wait_unguarded(p, ::malloc_usable_size(p));
  next(g_free, "free", __libc_free)(p);
}

void* realloc(void* p, size_t n) {
  if (p != nullptr && pg::any()) pg::wait_unguarded(p, ::malloc_usable_size(p));
  return next(g_realloc, "realloc", __libc_realloc)(p, n);
}

int munmap(void* addr, size_t len) {
  wait_for(addr, len);
  return static_cast<int>(::syscall(SYS_munmap, addr, len));
}

void* mremap(void* old, size_t old_len, size_t new_len, int flags, ...) {
  void* fixed = nullptr;
  if ((flags & MREMAP_FIXED) != 0) {
    va_list ap;
    va_start(ap, flags);
    fixed = va_arg(ap, void*);
    va_end(ap);
  }
  wait_for(old, old_len);
  return reinterpret_cast<void*>(::syscall(SYS_mremap, old, old_len, new_len, flags, fixed));
}

}  // extern "C"
