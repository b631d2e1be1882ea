// Landing pages for AZ-SDP's asynchronous read (ddpmode/read_async.cc; docs/sockets.md,
// "Zero-copy modes"): the data a read already returned arrives in staging pages of esock's
// own, and then replaces the application's pages whole (mremap(2) with MREMAP_FIXED),
// which stay no-access meanwhile (page_guard). A thread that touches them early waits and
// then sees only the final data, never a page half written: the move is one system call
// under the kernel's mapping lock, which the fault that retries the touch also takes.
//
// Only private anonymous memory can take the move (heap, malloc's mappings, bss, other
// threads' stacks): a shared mapping's pages would stop being shared, and a file mapping's
// would stop being the file's. The system calls are made directly: esock interposes munmap
// and mremap (shim/memory.cc) for the application's own.
#pragma once

#include <cstddef>

namespace esock::sockets::page_flip {

// Whether every page of [p, p + len) (page-aligned) is private anonymous memory. It asks
// the kernel (madvise MADV_WIPEONFORK, which only such memory takes, undone at once with
// MADV_KEEPONFORK): two system calls, no /proc/self/maps (milliseconds in a DPDK process).
bool private_anonymous(void* p, std::size_t len);
// Staging pages for [p, p + len): the range's own pages, moved out to a new address
// (mremap with MREMAP_DONTUNMAP, which leaves the range mapped and empty), so a buffer
// read into again and again reuses its pages instead of the kernel zeroing new ones at
// every landing; fresh pages when the range cannot move whole (it spans mappings). Null
// with errno if neither can be had. *own tells which (discard puts the range's own back).
void* staging(void* p, std::size_t len, bool* own);
// Moves the staging pages over [dst, dst + len): true once dst holds them (the staging
// range is gone then). False with errno if the kernel refused (the map count limit, a
// huge-page mapping the move would split): the staging pages are left as they are.
bool land(void* staging, void* dst, std::size_t len);
// Staging pages that will not land: the range's own go back to it (what it held, with
// whatever of the data was placed before), fresh ones are unmapped. A range whose own
// pages cannot move back gets their octets copied (copy_back).
void discard(void* staging, void* dst, std::size_t len, bool own);
// The fallback of a move the kernel refused: dst made accessible, the staging octets copied
// into it, the staging pages unmapped.
void copy_back(void* staging, void* dst, std::size_t len);

}  // namespace esock::sockets::page_flip
