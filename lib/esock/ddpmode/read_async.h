// AZ-SDP's asynchronous read (../shared/seeds/000_* section 4.2; docs/sockets.md, "Zero-copy
// modes"): a large read whose data waits at the peer as an advertised source returns at
// once with the length it will get, and the octets arrive later. Until they have, the
// buffer's pages are no-access (page_guard): a thread that touches them waits in the fault
// and then sees only the final data.
#pragma once

#include <cstddef>
#include <mutex>

#include "base/bytes.h"
#include "esock/runtime/runtime.h"
#include "esock/runtime/socket.h"

namespace esock::sockets {

// Starts an asynchronous read into dst when it can go so: octets it will hold (whole pages
// from dst's start, at least min_len, up to what the source at the head of the stream has
// left), or 0 when the read must go as before (an unaligned buffer, a buffer shared with
// another process or a file, one on this thread's stack, no guard to be had). need: the
// read must return at least this much (MSG_WAITALL's rest), or 0.
std::size_t start_async_read(Socket& s, DdpRuntime& rt, mut_bytes dst, std::size_t min_len,
                             std::size_t need);

}  // namespace esock::sockets
