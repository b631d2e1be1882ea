// What the shims call for a DDPMODE descriptor (or for SOL_ESOCK options on any socket).
// Same contract as the libc calls they stand for: -1 (or MAP) with errno set on failure.
#pragma once

#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <memory>

namespace esock::sockets {

int ddp_setsockopt(int fd, int level, int name, const void* val, socklen_t len);
int ddp_getsockopt(int fd, int level, int name, void* val, socklen_t* len);
int ddp_connect(int fd, const sockaddr* addr, socklen_t len);
int ddp_listen(int fd, int backlog);
int ddp_accept(int fd, sockaddr* addr, socklen_t* len, int flags);
ssize_t ddp_sendmsg(int fd, const msghdr* msg, int flags);
ssize_t ddp_recvmsg(int fd, msghdr* msg, int flags);
int ddp_shutdown(int fd, int how);
class Socket;

// close and dup2/dup3 over a DDPMODE number: the table lets go of the number *before* libc
// gives it back to the kernel (fd_take), else a socket another thread opens in between
// could get the number while the table still calls it DDPMODE; once libc is done, the
// reference is dropped here (the last one closes the connection).
void ddp_release(std::shared_ptr<Socket> s);
// Called after libc's dup succeeded, to keep the table in step with the kernel.
void ddp_duplicated(int oldfd, int newfd);
int ddp_fcntl_setfl(int fd, int flags);
// ioctl(2) on a DDPMODE socket: FIONBIO sets the socket's (shared) non-blocking flag as
// O_NONBLOCK does; FIONREAD/SIOCINQ reports what the stream holds, SIOCOUTQ what was
// written and the peer has not taken yet; the rest go to the
// kernel descriptor.
int ddp_ioctl(int fd, unsigned long request, void* arg);
int ddp_getname(int fd, bool peer, sockaddr* addr, socklen_t* len);
// getsockopt(2) of an SO_*/TCP_* option on a DDPMODE number: from the kernel socket behind
// it (the private TCP descriptor once connected; an own stack's connection's option set,
// a fresh socket while it has none).
int ddp_get_option(int fd, int level, int name, void* val, socklen_t* len);
// setsockopt(2) of an SO_*/TCP_* option on a DDPMODE number: on the kernel socket behind it
// (while armed, recorded: Socket::option_calls); over an own stack, the connection's option
// set changes (process/option_socket.h).
int ddp_set_option(int fd, int level, int name, const void* val, socklen_t len);
// epoll_ctl(2) on a DDPMODE number: the kernel's, and the set remembered
// (Socket::epoll_watches).
// A thread is about to wait for fd to poll readable (poll, select and their kin): a
// pre-forked worker's copy of an own stack's listener asks its parent for a connection, as
// accept and adding it to an epoll set do (listen_relay.cc); anything else is left alone.
void ddp_wait_readable(int fd);
int ddp_epoll_ctl(int epfd, int op, int fd, epoll_event* ev);
int ddp_bind(int fd, const sockaddr* addr, socklen_t len);
// An own-stack provider cannot serve this socket where its program points it (an address
// the stack does not have, or loopback): one esockrun --ddp made DDPMODE goes back to
// being the plain kernel socket (0), one the application made DDPMODE gets `refuse`.
int ddp_give_back_implicit(int fd, int refuse);
// The own stack's address (ESOCK_DPDK_IP), network order; 0 if unset.
in_addr_t stack_address();
// A new IPv4 TCP socket: armed in DDPMODE when the configuration says every one is.
void ddp_socket_created(int fd, int domain);

}  // namespace esock::sockets
