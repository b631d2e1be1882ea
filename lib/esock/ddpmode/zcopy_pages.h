// What AZ-SDP's asynchronous writes and reads (io.cc, read_async.cc) ask of a buffer's
// pages before they guard them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace esock::sockets {

std::uintptr_t page_size();
// Whether [p, p + n) overlaps the calling thread's stack (pthread_getattr_np, once per
// thread). A guarded stack page would leave the kernel no room for a signal frame (the
// fault's own included).
bool on_own_stack(const std::uint8_t* p, std::size_t n);

}  // namespace esock::sockets
