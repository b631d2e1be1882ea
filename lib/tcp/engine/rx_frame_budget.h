// How many received device frames (DPDK mbufs) the connections of one stack may keep
// pinned in their in-order receive queues (recv_queue.h). The port's pool is finite and
// shared: a peer that sends many tiny segments to a connection nobody reads (not yet
// accepted, say) would otherwise hold one frame per segment until reception stopped for
// every connection (issue 20, item 3). Past the bound, segments are copied into compact
// blocks and their frames go back to the pool at once.
//
// And how many received octets they hold together, in order and out of order (as Linux's
// tcp_mem): each connection's receive buffer bounds it alone, but a peer with thousands of
// connections nobody reads (an accept queue) would hold thousands of buffers. Past the
// bound, a connection that already holds its guaranteed share (TcpConfig::rx_memory_min)
// keeps no new text: the segment is dropped and the peer sends it again later.
// One owner (the stack), no locking.
#pragma once

#include <cstddef>
#include <cstdint>

namespace esock::tcp {

struct RxFrameBudget {
  std::size_t limit = SIZE_MAX;       // frames all queues together may pin
  std::size_t held = 0;               // frames pinned now
  std::uint64_t copied_segments = 0;  // segments copied because a bound (this or a queue's) was hit
  std::size_t bytes_limit = SIZE_MAX;  // received octets all connections together may hold
  std::size_t bytes_held = 0;
};

}  // namespace esock::tcp
