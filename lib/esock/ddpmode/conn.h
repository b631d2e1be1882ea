// Connection set-up shared by the two provider kinds (ddpmode/conn.cc: kernel TCP,
// ddpmode/conn_stack.cc: own stack); see docs/sockets.md ("fd model", "Providers").
#pragma once

#include <sys/socket.h>

#include <memory>
#include <string>

#include "esock/providers/provider.h"
#include "esock/runtime/runtime.h"
#include "esock/runtime/socket.h"

namespace esock::sockets {

int errno_fail(int err);  // sets errno, returns -1
// One line on stderr for a connection that fell back to plain TCP (docs/sockets.md, "Peers
// without esock"): the first 8 of a process, so a busy server does not flood its log.
void tell_plain_tcp(const std::string& who);
// rdmap_ext: the provider's engine takes RFC 7306 (Provider::software_rnic); offered in RAWMODE.
mpa::Config mpa_config(bool initiator, bool msgmode, bool raw, bool rdmap_ext);
// An own stack's plain relay (a peer without esock, utcp/plain_relay.h): a private AF_UNIX
// stream pair, ends[0] for the application, ends[1] for the relay (non-blocking), buffers
// sized for bulk transfers; the progress thread is started to move it. 0 or -1 with errno.
// Under the runtime lock.
int plain_pair(int ends[2]);
// The descriptor that carries pc on as plain TCP: its kernel socket (ksock), or the
// application's end of a plain_pair whose other end the stack relays to the connection,
// registered to show as the TCP socket it stands for (runtime/relayed_names.h). -1 with
// errno. Under the runtime lock.
int take_plain_end(ProviderConn& pc);
// After MPA: checks the peer's Hello and starts the stream engine (or RAWMODE) on the
// socket. 0 or an errno. Under the runtime lock (an own-stack connection is polled by the
// progress thread from the moment it exists).
int attach(std::unique_ptr<ProviderConn> pc, bool initiator, Socket& s);
// The signal socketpair: returns A (to become the application's number) or -1; the Conn
// keeps L and a private dup of A.
int make_signal(int* sig_a, int* sig_l);
// connect's handover: the application's number `fd` becomes A, keeping its descriptor and
// file status flags. 0 or -1 with errno.
int take_number(int fd, int a);

// connect, both provider kinds (conn_async.cc), under the runtime lock: the handover of the
// application's number to the signal, then the set-up in the runtime's rounds. Kernel TCP:
// pc null, the kernel socket connected or connecting (tcp_err: connect(2)'s errno, EINTR
// leaves it going on); own stack: pc from Provider::connect. Returns connect's result:
// EINPROGRESS for a non-blocking socket, else what await_connect says.
int begin_connect(std::unique_lock<RuntimeMutex>& lk, Provider& p, int fd,
                  const std::shared_ptr<Socket>& s, std::unique_ptr<ProviderConn> pc,
                  const sockaddr* addr, socklen_t len, int tcp_err);
// Waits (interruptibly) until the connect in progress ended: 0 when connected; the error,
// reported once (SO_ERROR then says 0); a fallback's plain socket connects here.
int await_connect(std::unique_lock<RuntimeMutex>& lk, int fd, const std::shared_ptr<Socket>& s,
                  const sockaddr* addr, socklen_t len);

// Pre-forked children on an own stack's listener (listen_relay.cc): the parent's side, made
// at listen() (null when it cannot be); a child's accept on its copy (fd: the family queue's
// children's end); and its request for a connection (accept, or adding fd to an epoll set).
std::unique_ptr<ListenRelay> make_listen_relay();
int accept_from_parent(int fd, Socket& ls, sockaddr* addr, socklen_t* len, int flags);
void ask_parent(int fd, Socket& s);

// Own-stack providers (conn_stack.cc).
int stack_connect(Provider& p, int fd, const std::shared_ptr<Socket>& s, const sockaddr* addr,
                  socklen_t len);
int stack_listen(Provider& p, int fd, const std::shared_ptr<Socket>& s, int backlog);
int kernel_listen(Provider& p, int fd, const std::shared_ptr<Socket>& s, int backlog);
// accept() on a listener whose connections the runtime sets up (stack or kernel_listen).
int stack_accept(Socket& ls, sockaddr* addr, socklen_t* len, int flags);

}  // namespace esock::sockets
