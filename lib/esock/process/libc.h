// The libc functions esock interposes, resolved once with dlsym(RTLD_NEXT) so pass-through
// calls reach the next definition (libc itself, or another preloaded shim) with one
// indirect call. Also used by esock's own code for every kernel call on an interposed name,
// so esock never re-enters its own shims.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

namespace esock::sockets {

// X(name, return type, parameter list)
#define ESOCK_LIBC_FUNCTIONS(X)                                                        \
  X(socket, int, (int, int, int))                                                      \
  X(connect, int, (int, const sockaddr*, socklen_t))                                   \
  X(bind, int, (int, const sockaddr*, socklen_t))                                      \
  X(listen, int, (int, int))                                                           \
  X(accept, int, (int, sockaddr*, socklen_t*))                                         \
  X(accept4, int, (int, sockaddr*, socklen_t*, int))                                   \
  X(close, int, (int))                                                                 \
  X(dup, int, (int))                                                                   \
  X(dup2, int, (int, int))                                                             \
  X(dup3, int, (int, int, int))                                                        \
  X(fcntl, int, (int, int, ...))                                                       \
  X(read, ssize_t, (int, void*, size_t))                                               \
  X(write, ssize_t, (int, const void*, size_t))                                        \
  X(readv, ssize_t, (int, const iovec*, int))                                          \
  X(writev, ssize_t, (int, const iovec*, int))                                         \
  X(send, ssize_t, (int, const void*, size_t, int))                                    \
  X(recv, ssize_t, (int, void*, size_t, int))                                          \
  X(sendto, ssize_t, (int, const void*, size_t, int, const sockaddr*, socklen_t))      \
  X(recvfrom, ssize_t, (int, void*, size_t, int, sockaddr*, socklen_t*))               \
  X(sendmsg, ssize_t, (int, const msghdr*, int))                                       \
  X(recvmsg, ssize_t, (int, msghdr*, int))                                             \
  X(sendfile, ssize_t, (int, int, off_t*, size_t))                                     \
  X(shutdown, int, (int, int))                                                         \
  X(getsockopt, int, (int, int, int, void*, socklen_t*))                               \
  X(setsockopt, int, (int, int, int, const void*, socklen_t))                          \
  X(getsockname, int, (int, sockaddr*, socklen_t*))                                    \
  X(getpeername, int, (int, sockaddr*, socklen_t*))                                    \
  X(sendfile64, ssize_t, (int, int, off64_t*, size_t))                                 \
  X(fcntl64, int, (int, int, ...))                                                     \
  X(ioctl, int, (int, unsigned long, ...))                                             \
  X(fork, pid_t, (void))                                                               \
  X(__read_chk, ssize_t, (int, void*, size_t, size_t))                                 \
  X(__recv_chk, ssize_t, (int, void*, size_t, size_t, int))                            \
  X(__recvfrom_chk, ssize_t, (int, void*, size_t, size_t, int, sockaddr*, socklen_t*)) \
  X(poll, int, (pollfd*, nfds_t, int))                                                 \
  X(select, int, (int, fd_set*, fd_set*, fd_set*, timeval*))                           \
  X(epoll_wait, int, (int, epoll_event*, int, int))                                    \
  X(epoll_ctl, int, (int, int, int, epoll_event*))                                     \
  X(sendmmsg, int, (int, mmsghdr*, unsigned int, int))                                 \
  X(recvmmsg, int, (int, mmsghdr*, unsigned int, int, timespec*))                      \
  X(splice, ssize_t, (int, loff_t*, int, loff_t*, size_t, unsigned int))               \
  X(preadv2, ssize_t, (int, const iovec*, int, off_t, int))                            \
  X(pwritev2, ssize_t, (int, const iovec*, int, off_t, int))                           \
  X(preadv64v2, ssize_t, (int, const iovec*, int, off64_t, int))                       \
  X(pwritev64v2, ssize_t, (int, const iovec*, int, off64_t, int))                      \
  X(close_range, int, (unsigned int, unsigned int, int))                               \
  X(ppoll, int, (pollfd*, nfds_t, const timespec*, const sigset_t*))                   \
  X(pselect, int, (int, fd_set*, fd_set*, fd_set*, const timespec*, const sigset_t*))  \
  X(epoll_pwait, int, (int, epoll_event*, int, int, const sigset_t*))                  \
  X(__poll_chk, int, (pollfd*, nfds_t, int, size_t))                                   \
  X(__ppoll_chk, int, (pollfd*, nfds_t, const timespec*, const sigset_t*, size_t))     \
  X(pipe, int, (int*))                                                                 \
  X(pipe2, int, (int*, int))                                                           \
  X(eventfd, int, (unsigned int, int))                                                 \
  X(epoll_create, int, (int))                                                          \
  X(epoll_create1, int, (int))                                                         \
  X(timerfd_create, int, (int, int))                                                   \
  X(memfd_create, int, (const char*, unsigned int))                                    \
  X(pthread_create, int, (pthread_t*, const pthread_attr_t*, void* (*)(void*), void*))

struct Libc {
#define ESOCK_LIBC_MEMBER(name, ret, params) ret(*name) params = nullptr;
  ESOCK_LIBC_FUNCTIONS(ESOCK_LIBC_MEMBER)
#undef ESOCK_LIBC_MEMBER
};

// Filled by resolve_libc() (a load-time constructor, and again on first use should another
// library's constructor call a socket function before ours ran).
extern Libc libc;
void resolve_libc();

// Private descriptors live high so they do not take the small numbers applications expect
// from socket()/accept(); they are close-on-exec. The new number (a duplicate: close the
// old one) or -1.
int move_high(int fd);
// An AF_UNIX socketpair of `type` (close-on-exec) with both ends moved high: 0, or -1 with
// errno and nothing left open.
int private_pair(int type, int fds[2]);
// The lowest number move_high has given so far (INT_MAX before the first): close_range and
// closefrom spare esock's close-on-exec descriptors from there up (shim/fd.cc).
int lowest_private_fd();
// A vfork child (CPython's subprocess, posix_spawn's clone(CLONE_VM)) shares the parent's
// memory: esock's tables must not change there, so its descriptor calls pass straight to
// the kernel. The process's pid is cached at load and by the fork handlers (vfork runs none).
bool in_vfork_child();
void note_pid();  // after fork, in the child

// The function pointer for name, resolving first if the constructor has not run yet.
#define ESOCK_LIBC(name)                                       \
  (__builtin_expect(::esock::sockets::libc.name != nullptr, 1) \
       ? ::esock::sockets::libc.name                           \
       : (::esock::sockets::resolve_libc(), ::esock::sockets::libc.name))

}  // namespace esock::sockets
