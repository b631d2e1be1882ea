// Descriptors a provider's own code opens (DPDK's EAL and its interrupt thread, the memif
// driver) live in esock's private range (libc.h, move_high), as esock's own do. Left where
// the kernel puts them they take the small numbers an application expects its sockets to
// get: wrk sizes its event loop to 10 + 3 x its connections, and DPDK's ten (a pipe, an
// epoll, a timer, memory, the memif socket, queue eventfds) pushed `wrk -c1`'s connection
// past it; and a closefrom(3) would close them under the stack.
// While a PrivateFdScope lives on a thread, the descriptor calls libesock interposes for
// this (shim/private_fds.cc, and socket/accept/recvmsg) move what they return high, and
// the threads it creates (DPDK's control threads) are private for their whole life.
#pragma once

#include <sys/socket.h>

namespace esock::sockets {

class PrivateFdScope {
 public:
  PrivateFdScope();
  ~PrivateFdScope();
  PrivateFdScope(const PrivateFdScope&) = delete;
  PrivateFdScope& operator=(const PrivateFdScope&) = delete;
};

// Whether this thread's new descriptors go to the private range.
bool private_fds_here();
// This thread's new descriptors go to the private range from now on (a thread a
// PrivateFdScope's thread created).
void private_fds_for_life();
// fd moved high (the low number closed) where private_fds_here(); else fd as it is. A
// failed move keeps the low number: the caller gets its descriptor either way.
int privatize(int fd);
// The descriptors an SCM_RIGHTS message brought (after recvmsg), moved high likewise.
void privatize_rights(msghdr* msg);

}  // namespace esock::sockets
