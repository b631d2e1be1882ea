#include "esock/process/private_fds.h"

#include <cerrno>
#include <cstring>

#include "esock/process/libc.h"

namespace esock::sockets {

namespace {
thread_local int scope_depth = 0;
thread_local bool for_life = false;
}  // namespace

PrivateFdScope::PrivateFdScope() {
  ++scope_depth;
}
PrivateFdScope::~PrivateFdScope() {
  --scope_depth;
}

bool private_fds_here() {
  return scope_depth > 0 || for_life;
}

void private_fds_for_life() {
  for_life = true;
}

int privatize(int fd) {
  if (fd < 0 || !private_fds_here()) return fd;
  const int saved = errno;
  const int high = move_high(fd);
  if (high < 0 || high < lowest_private_fd()) {  // move_high's low fallback: no gain
    if (high >= 0) ESOCK_LIBC(close)(high);
    errno = saved;
    return fd;
  }
  ESOCK_LIBC(close)(fd);
  errno = saved;
  return high;
}

void privatize_rights(msghdr* msg) {
  if (msg == nullptr || msg->msg_control == nullptr || !private_fds_here()) return;
  for (cmsghdr* c = CMSG_FIRSTHDR(msg); c != nullptr; c = CMSG_NXTHDR(msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    auto* data = CMSG_DATA(c);
    for (std::size_t i = 0; i < n; ++i) {
      int fd;
      std::memcpy(&fd, data + i * sizeof fd, sizeof fd);
      fd = privatize(fd);
      std::memcpy(data + i * sizeof fd, &fd, sizeof fd);
    }
  }
}

}  // namespace esock::sockets
