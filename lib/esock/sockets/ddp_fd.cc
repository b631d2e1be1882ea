// DDPMODE descriptor bookkeeping and the calls not yet carried by a provider.
#include <fcntl.h>

#include <cerrno>

#include "esock/sockets/ddp_ops.h"
#include "esock/sockets/fd_table.h"
#include "esock/sockets/libc.h"
#include "esock/sockets/socket.h"

namespace esock::sockets {

namespace {
int fail(int err) {
  errno = err;
  return -1;
}
}  // namespace

void ddp_closed(int fd) {
  fd_take(fd);  // the last reference's destructor ends the connection
}

void ddp_duplicated(int oldfd, int newfd) {
  if (auto s = fd_get(oldfd)) fd_set(newfd, std::move(s));
}

int ddp_fcntl_setfl(int fd, int flags) {
  return ESOCK_LIBC(fcntl)(fd, F_SETFL, flags);
}

int ddp_getname(int fd, bool peer, sockaddr* addr, socklen_t* len) {
  return peer ? ESOCK_LIBC(getpeername)(fd, addr, len) : ESOCK_LIBC(getsockname)(fd, addr, len);
}

// Connection set-up over a provider is the next layer (docs/sockets.md, "Status"): until
// it is wired, an armed socket refuses to connect or listen rather than silently falling
// back to plain TCP, which a DDPMODE application would not expect.
int ddp_connect(int, const sockaddr*, socklen_t) {
  return fail(EOPNOTSUPP);
}
int ddp_listen(int, int) {
  return fail(EOPNOTSUPP);
}
int ddp_accept(int, sockaddr*, socklen_t*, int) {
  return fail(EINVAL);
}
ssize_t ddp_sendmsg(int, const msghdr*, int) {
  return fail(ENOTCONN);
}
ssize_t ddp_recvmsg(int, msghdr*, int) {
  return fail(ENOTCONN);
}
int ddp_shutdown(int, int) {
  return fail(ENOTCONN);
}

}  // namespace esock::sockets
