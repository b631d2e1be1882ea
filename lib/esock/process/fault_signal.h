// esock's one SIGSEGV/SIGBUS handler, shared by the uses esock has for memory faults: the
// buffer probe (user_memory.h: a socket call's EFAULT) and the write guard on a buffer the
// peer may still read (page_guard.h: AZ-SDP's asynchronous writes). Each use adds a claim;
// a fault no claim takes goes to the handler installed before esock's (or to the default
// action, which kills the process with that signal as it would without esock).
//
// Limit: a program that installs its own SIGSEGV or SIGBUS handler after esock's replaces
// it (docs/sockets.md).
#pragma once

#include <signal.h>

namespace esock::sockets {

// A claim runs in the signal handler, so it must be async-signal-safe. It returns true
// when the fault was its own and is dealt with (the faulting instruction runs again), or
// does not return (siglongjmp).
using FaultClaim = bool (*)(int sig, siginfo_t* info, void* uc);

// Adds a claim (at most 4 in all) and, the first time, installs the handler. Not for
// signal handlers; safe from several threads.
void add_fault_claim(FaultClaim claim);

}  // namespace esock::sockets
