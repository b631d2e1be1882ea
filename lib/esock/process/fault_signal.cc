#include "esock/process/fault_signal.h"

#include <atomic>
#include <mutex>

namespace esock::sockets {

namespace {

constexpr int max_claims = 4;
std::atomic<FaultClaim> g_claims[max_claims] = {};
struct sigaction g_prev_segv {};
struct sigaction g_prev_bus {};

void on_fault(int sig, siginfo_t* info, void* uc) {
  for (const auto& c : g_claims) {
    const FaultClaim claim = c.load(std::memory_order_acquire);
    if (claim != nullptr && claim(sig, info, uc)) return;
  }
  // Not esock's fault: as if esock had no handler.
  const struct sigaction& prev = sig == SIGBUS ? g_prev_bus : g_prev_segv;
  if ((prev.sa_flags & SA_SIGINFO) != 0) {
    prev.sa_sigaction(sig, info, uc);
  } else if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
    prev.sa_handler(sig);
  } else {
    // The default action: restore it and return; the faulting instruction runs again and
    // the process dies of the signal (a core dump where enabled), as without esock.
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    ::sigaction(sig, &dfl, nullptr);
  }
}

void install() {
  struct sigaction sa {};
  sa.sa_sigaction = on_fault;
  sigemptyset(&sa.sa_mask);
  // SA_NODEFER: the signal is not blocked in the handler, so a claim's siglongjmp (which
  // does not restore the mask: sigsetjmp(.., 0), no system call) leaves it unblocked.
  sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
  ::sigaction(SIGSEGV, &sa, &g_prev_segv);
  ::sigaction(SIGBUS, &sa, &g_prev_bus);
}

}  // namespace

void add_fault_claim(FaultClaim claim) {
  static std::mutex mu;
  const std::lock_guard lk(mu);
  for (auto& c : g_claims) {
    if (c.load(std::memory_order_relaxed) == claim) break;
    if (c.load(std::memory_order_relaxed) == nullptr) {
      c.store(claim, std::memory_order_release);
      break;
    }
  }
  static std::once_flag once;
  std::call_once(once, install);
}

}  // namespace esock::sockets
