// The accept queue a ksock listener shares with the processes it is forked into
// (docs/sockets.md, "fork"): an AF_UNIX SOCK_SEQPACKET pair, one message per connection set
// up by whichever process's runtime took it from the kernel listening socket, carrying its
// kernel socket (SCM_RIGHTS) and what another process needs to take it over. The
// application's listening number is the receiving end: readable while a connection waits,
// in every process, and accept(2) in any of them takes the next one.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "base/bytes.h"

namespace esock::sockets {

struct QueuedConn {
  enum class Kind : std::uint8_t { negotiated = 0, plain_silent = 1, plain_not_mpa = 2 };
  int fd = -1;  // the connection's kernel socket, now this process's
  Kind kind = Kind::negotiated;
  std::vector<std::uint8_t> mpa_request;  // negotiated: the peer's MPA Request
};

// The pair: *in (the runtime's end, non-blocking) and *out (to become the application's
// number). 0, or -1 with errno.
int listen_queue_pair(int* in, int* out);
// Queues a connection: true once the message (and so the descriptor) is in the queue; false
// when the queue is full (EAGAIN) or failed.
bool listen_queue_push(int in, int fd, QueuedConn::Kind kind, bytes_view mpa_request);
// The next connection, without waiting; nullopt with errno (EAGAIN: none).
std::optional<QueuedConn> listen_queue_pop(int out);

}  // namespace esock::sockets
