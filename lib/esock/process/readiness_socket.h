// A connection's readiness as ONE kernel descriptor (issue 18: 10,000 connections under a
// hard RLIMIT_NOFILE of 20,000 leave room for one descriptor each; the socketpair that
// carries it today, with the private dup and the option socket, takes four).
//
// The descriptor is an AF_UNIX datagram socket (autobound, so it has an abstract name), and
// every state a TCP socket polls in is set from outside it (RFC-free: the rules are Linux's
// unix_dgram_poll, checked by tests/unit/esock/readiness_socket_test.cc):
//   readable      a one-octet datagram queued on it, which it sends itself (to its own
//                 name), taken off again by recv;
//   not writable  connected to `full`, a socket whose receive queue is kept full: a
//                 datagram socket whose peer cannot take more does not poll writable; made
//                 writable again by dissolving the connection (connect AF_UNSPEC) and then
//                 one datagram to the hub's `sink`, read at once: freeing it is the
//                 write-space wakeup that wakes poll and epoll writers (EPOLLET included),
//                 which the dissolution alone does not promise on every kernel;
//   end of stream shutdown(SHUT_RD): POLLIN | POLLRDHUP for good;
//   hang-up       shutdown(SHUT_RDWR): POLLHUP as well;
//   error         POLLERR with SO_ERROR ECONNRESET: a datagram pair with a throwaway socket
//                 whose dissolution, with a datagram of ours still queued there, is
//                 reported to us as a reset.
// The hub's two sockets are shared by every connection of the process (and of its fork
// children, which inherit them).
#pragma once

#include <sys/socket.h>
#include <sys/un.h>

namespace esock::sockets {

struct ReadinessState {
  sockaddr_un name{};  // the socket's abstract name, where readability is sent
  socklen_t name_len = 0;
  bool readable = false;
  bool writable = true;
  bool failed = false;  // fail() froze it: the connection is gone
};

class ReadinessHub {
 public:
  // The process's hub, its sockets made on first use; nullptr (errno) if they cannot be.
  static ReadinessHub* process();

  // A new readiness socket, close-on-exec, writable and not readable; -1 with errno.
  int create(ReadinessState* st) const;
  // Transitions; each returns false (errno) if the kernel refused a step. After
  // end_of_stream or hang_up the socket polls readable for good (set_readable(true) has
  // nothing left to do). fail() is the last: what it leaves (POLLERR, writable, readable if
  // it was) stays, and later transitions do nothing.
  bool set_readable(int fd, ReadinessState& st, bool on) const;
  bool set_writable(int fd, ReadinessState& st, bool on) const;
  static bool end_of_stream(int fd);
  static bool hang_up(int fd);
  // Takes every datagram queued on fd: a stranger's (the abstract name is reachable from
  // the whole network namespace), when fd is not to poll readable.
  static void take_stray(int fd);
  // POLLERR, SO_ERROR ECONNRESET once; writable, as a reset TCP socket polls; readable if
  // it was.
  bool fail(int fd, ReadinessState& st) const;

 private:
  ReadinessHub() = default;
  bool open();
  bool close_all();  // false, with the hub's sockets closed
  bool signal_self(int fd, const ReadinessState& st) const;

  int full_ = -1;  // its receive queue is kept full (by fillers whose datagrams stay there)
  int sink_ = -1;  // takes and frees one datagram per writability wakeup
  sockaddr_un full_name_{}, sink_name_{};
  socklen_t full_len_ = 0, sink_len_ = 0;
};

}  // namespace esock::sockets
