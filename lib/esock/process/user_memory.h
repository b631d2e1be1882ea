// Whether the application's buffer is there, asked the way the kernel finds out in
// copy_from_user/copy_to_user: by touching it and catching the fault. A socket call on a
// DDPMODE socket answers EFAULT for a buffer that is not mapped (or not writable, for a
// receive) before esock copies from it, copies into it, or offers it to the peer for an
// RDMA Read, instead of faulting in the middle of the stack (issue 20, careless caller).
//
// How: one access per page of the range (a read, or an atomic add of 0 for a write, which
// needs write permission and changes nothing even if another thread writes the octet) with
// esock's SIGSEGV/SIGBUS handler (fault_signal.h) that, while this thread probes, jumps
// back and reports the fault. No system call on the way: the handler is installed once,
// at the first probe, and passes every fault that is not esock's to the handler it
// replaced (or to the default action, which then kills the process with the right signal
// as before).
//
// Limits: a program that installs its own SIGSEGV or SIGBUS handler after esock's first
// probe replaces esock's, and a bad buffer then faults in its handler as it would without
// esock's check; a buffer unmapped by another thread after the check faults in the stack
// (the kernel's answer there would be EFAULT after a partial copy).
#pragma once

#include <cstddef>

namespace esock::sockets {

// True when every octet of [p, p + len) can be read, and written too when `writable`.
// len 0 is always true.
bool user_memory_ok(const void* p, std::size_t len, bool writable);

}  // namespace esock::sockets
