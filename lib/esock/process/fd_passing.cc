#include "esock/process/fd_passing.h"

#include <sys/socket.h>

#include <cstring>

#include "esock/process/libc.h"

namespace esock::sockets {

namespace {
// A message of one body with room for one descriptor in its control part.
struct FdMessage {
  FdMessage(void* body, std::size_t len) : v{body, len} {
    m.msg_iov = &v;
    m.msg_iovlen = 1;
    m.msg_control = control;
    m.msg_controllen = sizeof control;
  }
  FdMessage(const FdMessage&) = delete;
  FdMessage& operator=(const FdMessage&) = delete;
  iovec v;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr m{};
};
}  // namespace

bool send_with_fd(int sock, bytes_view body, int fd) {
  FdMessage msg(const_cast<std::uint8_t*>(body.data()), body.size());
  cmsghdr* c = CMSG_FIRSTHDR(&msg.m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  return ESOCK_LIBC(sendmsg)(sock, &msg.m, MSG_DONTWAIT | MSG_NOSIGNAL) > 0;
}

ssize_t recv_with_fd(int sock, mut_bytes body, int recv_flags, int* fd, bool* truncated) {
  FdMessage msg(body.data(), body.size());
  *fd = -1;
  const ssize_t n = ESOCK_LIBC(recvmsg)(sock, &msg.m, MSG_DONTWAIT | recv_flags);
  if (n < 0) return n;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg.m); c != nullptr; c = CMSG_NXTHDR(&msg.m, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
        c->cmsg_len == CMSG_LEN(sizeof(int)))
      std::memcpy(fd, CMSG_DATA(c), sizeof *fd);
  *truncated = (msg.m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0;
  return n;
}

}  // namespace esock::sockets
