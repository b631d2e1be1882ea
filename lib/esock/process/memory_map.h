// What the process's address space holds, for checks off the fast path (registration).
#pragma once

#include <cstddef>

namespace esock::sockets {

// Whether every octet of [addr, addr + len) is mapped readable, and writable too when
// `writable` (from /proc/self/maps): what the kernel's ibv_reg_mr checks by pinning the
// pages, and what a peer's RDMA Write into the region would otherwise find out by crashing
// the process. len > 0.
bool range_mapped(const void* addr, std::size_t len, bool writable);

}  // namespace esock::sockets
