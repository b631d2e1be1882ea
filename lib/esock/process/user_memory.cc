#include "esock/process/user_memory.h"

#include <setjmp.h>
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <mutex>

#include "esock/process/fault_signal.h"

namespace esock::sockets {

namespace {

// The probing thread's way back; null when it is not probing. initial-exec: the handler
// must not call into the dynamic linker to find it (not async-signal-safe).
__thread sigjmp_buf* t_probe __attribute__((tls_model("initial-exec"))) = nullptr;

bool claim_probe_fault(int /*sig*/, siginfo_t* /*info*/, void* /*uc*/) {
  if (t_probe != nullptr) siglongjmp(*t_probe, 1);
  return false;
}

// One access per page of [first, last], the first octet of each page after the first.
// noinline and volatile: the accesses stay, after the sigsetjmp that guards them.
__attribute__((noinline)) void touch_pages(std::uintptr_t first, std::uintptr_t last,
                                           bool writable) {
  static const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  for (std::uintptr_t a = first;;) {
    auto* q = reinterpret_cast<volatile std::uint8_t*>(a);
    if (writable)
      __atomic_fetch_add(q, 0, __ATOMIC_RELAXED);
    else
      (void)*q;
    const std::uintptr_t next = (a & ~(page - 1)) + page;
    if (next == 0 || next > last) return;  // past the range (or the top of the space)
    a = next;
  }
}

// Nothing in this frame changes between sigsetjmp and a jump back (-Wclobbered).
__attribute__((noinline)) bool probe_pages(std::uintptr_t first, std::uintptr_t last,
                                           bool writable) {
  sigjmp_buf back;
  if (sigsetjmp(back, 0) != 0) {
    t_probe = nullptr;
    return false;
  }
  t_probe = &back;
  touch_pages(first, last, writable);
  t_probe = nullptr;
  return true;
}

}  // namespace

bool user_memory_ok(const void* p, std::size_t len, bool writable) {
  if (len == 0) return true;
  const auto first = reinterpret_cast<std::uintptr_t>(p);
  if (p == nullptr || first > UINTPTR_MAX - (len - 1)) return false;  // wraps the space
  static std::once_flag once;
  std::call_once(once, [] { add_fault_claim(claim_probe_fault); });
  return probe_pages(first, first + (len - 1), writable);
}

}  // namespace esock::sockets
