// One message with one descriptor over an AF_UNIX socket (SCM_RIGHTS, unix(7)): the accept
// queue of a ksock listener (runtime/listen_queue.h) and the fork relay of an own stack's
// listener (ddpmode/listen_relay.cc) both carry a connection's descriptor with a small body.
#pragma once

#include <sys/types.h>

#include "base/bytes.h"

namespace esock::sockets {

// Sends body with fd attached, without waiting (MSG_DONTWAIT | MSG_NOSIGNAL): true once the
// message is in the socket (the receiver's copy of fd travels with it).
bool send_with_fd(int sock, bytes_view body, int fd);

// Receives one message without waiting: the body's length (0: the other end closed), or -1
// with errno. *fd: the descriptor it carried (-1 if none); *truncated: the body or the
// descriptor did not fit (MSG_TRUNC, MSG_CTRUNC). recv_flags: added to MSG_DONTWAIT
// (MSG_CMSG_CLOEXEC).
ssize_t recv_with_fd(int sock, mut_bytes body, int recv_flags, int* fd, bool* truncated);

}  // namespace esock::sockets
