#include "esock/runtime/listen_queue.h"

#include <fcntl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "esock/process/fd_passing.h"
#include "esock/process/libc.h"

namespace esock::sockets {

namespace {
// An MPA Request is 20 octets and at most 512 of private data (RFC 5044 section 7.1).
constexpr std::size_t max_message = 1 + 20 + 512;

}  // namespace

int listen_queue_pair(int* in, int* out) {
  int sp[2];
  // Blocking: *out becomes the application's description, whose status flags are the
  // application's alone (a program that finds O_NONBLOCK already set never sets it, and
  // esock would not learn it wants a non-blocking accept). esock's calls never wait on it.
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) return -1;
  *in = move_high(sp[0]);
  ESOCK_LIBC(close)(sp[0]);
  if (*in >= 0) ESOCK_LIBC(fcntl)(*in, F_SETFL, O_NONBLOCK);
  if (*in < 0) {
    ESOCK_LIBC(close)(sp[1]);
    return -1;
  }
  *out = sp[1];
  return 0;
}

bool listen_queue_push(int in, int fd, QueuedConn::Kind kind, bytes_view mpa_request) {
  if (mpa_request.size() + 1 > max_message) return false;
  std::uint8_t msg[max_message];
  msg[0] = static_cast<std::uint8_t>(kind);
  if (!mpa_request.empty()) std::memcpy(msg + 1, mpa_request.data(), mpa_request.size());
  return send_with_fd(in, bytes_view(msg, 1 + mpa_request.size()), fd);
}

std::optional<QueuedConn> listen_queue_pop(int out) {
  std::uint8_t msg[max_message];
  QueuedConn q;
  bool truncated = false;
  const ssize_t n =
      recv_with_fd(out, mut_bytes(msg, sizeof msg), MSG_CMSG_CLOEXEC, &q.fd, &truncated);
  if (n <= 0) {
    if (n == 0) errno = EAGAIN;
    if (q.fd >= 0) ESOCK_LIBC(close)(q.fd);
    return std::nullopt;
  }
  if (q.fd < 0 || msg[0] > 2 || truncated) {
    if (q.fd >= 0) ESOCK_LIBC(close)(q.fd);
    errno = EPROTO;  // not a message of ours: nothing to hand out
    return std::nullopt;
  }
  q.kind = static_cast<QueuedConn::Kind>(msg[0]);
  q.mpa_request.assign(msg + 1, msg + n);
  const int high = move_high(q.fd);  // as every private descriptor: out of the program's way
  if (high >= 0) {
    ESOCK_LIBC(close)(q.fd);
    q.fd = high;
  }
  return q;
}

}  // namespace esock::sockets
