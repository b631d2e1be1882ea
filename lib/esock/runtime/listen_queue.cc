#include "esock/runtime/listen_queue.h"

#include <fcntl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "esock/process/libc.h"

namespace esock::sockets {

namespace {
// An MPA Request is 20 octets and at most 512 of private data (RFC 5044 section 7.1).
constexpr std::size_t max_message = 1 + 20 + 512;

// One queue message: the kind and the Request in `data`, the descriptor in the control part.
struct Message {
  std::uint8_t data[max_message];
  iovec v{};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr m{};
  explicit Message(std::size_t len) : v{data, len} {
    m.msg_iov = &v;
    m.msg_iovlen = 1;
    m.msg_control = control;
    m.msg_controllen = sizeof control;
  }
  Message(const Message&) = delete;
  Message& operator=(const Message&) = delete;
};
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
  Message msg(1 + mpa_request.size());
  msg.data[0] = static_cast<std::uint8_t>(kind);
  if (!mpa_request.empty()) std::memcpy(msg.data + 1, mpa_request.data(), mpa_request.size());
  cmsghdr* c = CMSG_FIRSTHDR(&msg.m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  return ESOCK_LIBC(sendmsg)(in, &msg.m, MSG_DONTWAIT | MSG_NOSIGNAL) > 0;
}

std::optional<QueuedConn> listen_queue_pop(int out) {
  Message in(max_message);
  msghdr& m = in.m;
  const std::uint8_t* msg = in.data;
  const ssize_t n = ESOCK_LIBC(recvmsg)(out, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  if (n <= 0) {
    if (n == 0) errno = EAGAIN;
    return std::nullopt;
  }
  QueuedConn q;
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
      std::memcpy(&q.fd, CMSG_DATA(c), sizeof q.fd);
  if (q.fd < 0 || msg[0] > 2 || (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
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
