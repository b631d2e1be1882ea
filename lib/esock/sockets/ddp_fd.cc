// DDPMODE descriptor bookkeeping: close/dup follow the numbers, fcntl flags, names.
#include <fcntl.h>

#include <cerrno>

#include "esock/sockets/ddp_ops.h"
#include "esock/sockets/fd_table.h"
#include "esock/sockets/libc.h"
#include "esock/sockets/runtime.h"
#include "esock/sockets/socket.h"

namespace esock::sockets {

void ddp_closed(int fd) {
  auto s = fd_take(fd);
  if (!s || s->fd_refs.fetch_sub(1) != 1) return;
  // The last number naming this socket went away: the connection closes (FIN, drain).
  Runtime& rt = Runtime::get();
  std::lock_guard lk(rt.mu);
  rt.close(s);
}

void ddp_duplicated(int oldfd, int newfd) {
  if (auto s = fd_get(oldfd)) {
    s->fd_refs.fetch_add(1);
    fd_set(newfd, std::move(s));
  }
}

int ddp_fcntl_setfl(int fd, int flags) {
  const int r = ESOCK_LIBC(fcntl)(fd, F_SETFL, flags);
  if (r == 0) {
    if (auto s = fd_get(fd)) {
      Runtime& rt = Runtime::get();
      std::lock_guard lk(rt.mu);
      s->nonblocking = (flags & O_NONBLOCK) != 0;
      rt.after_op(*s);
    }
  }
  return r;
}

int ddp_getname(int fd, bool peer, sockaddr* addr, socklen_t* len) {
  // A connected socket's names are those of its private TCP descriptor.
  int tcp = fd;
  if (auto s = fd_get(fd)) {
    std::lock_guard lk(Runtime::get().mu);
    if (s->state() == Socket::State::connected && s->conn && s->conn->pc)
      tcp = s->conn->pc->poll_fd();
    else if (s->orphaned)
      tcp = -1;
  }
  if (tcp < 0) {
    errno = ENOTCONN;
    return -1;
  }
  return peer ? ESOCK_LIBC(getpeername)(tcp, addr, len) : ESOCK_LIBC(getsockname)(tcp, addr, len);
}

int ddp_option_fd(int fd) {
  if (auto s = fd_get(fd)) {
    std::lock_guard lk(Runtime::get().mu);
    if (s->state() == Socket::State::connected && s->conn && s->conn->pc)
      return s->conn->pc->poll_fd();
  }
  return fd;
}

}  // namespace esock::sockets
