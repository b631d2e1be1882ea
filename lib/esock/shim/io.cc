// Interposed data calls. Pass-through costs one flag load (fd_is_ddp) and one indirect
// call; DDPMODE descriptors go to the stream protocol through ddp_sendmsg/ddp_recvmsg.
#include <sys/sendfile.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <vector>

#include "esock/ddpmode/ops.h"
#include "esock/process/libc.h"
#include "esock/process/page_guard.h"
#include "esock/process/private_fds.h"
#include "esock/runtime/fd_table.h"

using esock::sockets::fd_is_ddp;

namespace {

// The kernel writing into a buffer an asynchronous write still sends from (read-only until
// the peer pulled it, ESOCK_ZCOPY_ASYNC) would fail with EFAULT: the call waits until the
// pages are writable again, as a store into them does. One relaxed load with no guard on.
void wait_writable(void* buf, size_t n) {
  if (esock::sockets::page_guard::any()) [[unlikely]]
    esock::sockets::page_guard::wait_unguarded(buf, n);
}
void wait_writable(const iovec* iov, int cnt) {
  esock::sockets::page_guard::wait_unguarded(iov, static_cast<size_t>(cnt));
}

// The kernel reading from a buffer an asynchronous read still fills (no-access until its
// octets landed, ESOCK_ZCOPY_ASYNC) would fail with EFAULT: the call waits for them, as a
// load from the pages does.
void wait_readable(const void* buf, size_t n) {
  esock::sockets::page_guard::wait_readable(buf, n);
}
void wait_readable(const iovec* iov, int cnt) {
  if (iov != nullptr && cnt > 0 && cnt <= IOV_MAX)
    esock::sockets::page_guard::wait_readable(iov, static_cast<size_t>(cnt));
}

ssize_t ddp_send1(int fd, const void* buf, size_t n, int flags) {
  iovec v{const_cast<void*>(buf), n};
  msghdr m{};
  m.msg_iov = &v;
  m.msg_iovlen = 1;
  return esock::sockets::ddp_sendmsg(fd, &m, flags);
}

ssize_t ddp_recv1(int fd, void* buf, size_t n, int flags) {
  iovec v{buf, n};
  msghdr m{};
  m.msg_iov = &v;
  m.msg_iovlen = 1;
  return esock::sockets::ddp_recvmsg(fd, &m, flags);
}

ssize_t ddp_vec(int fd, const iovec* iov, int cnt, bool out) {
  if (cnt < 0 || cnt > IOV_MAX) {
    errno = EINVAL;
    return -1;
  }
  msghdr m{};
  m.msg_iov = const_cast<iovec*>(iov);
  m.msg_iovlen = static_cast<size_t>(cnt);
  return out ? esock::sockets::ddp_sendmsg(fd, &m, 0) : esock::sockets::ddp_recvmsg(fd, &m, 0);
}

}  // namespace

extern "C" {

ssize_t read(int fd, void* buf, size_t n) {
  if (fd_is_ddp(fd)) [[unlikely]]
    return ddp_recv1(fd, buf, n, 0);
  wait_writable(buf, n);
  return ESOCK_LIBC(read)(fd, buf, n);
}

ssize_t __read_chk(int fd, void* buf, size_t n, size_t buflen) {
  if (fd_is_ddp(fd)) [[unlikely]] {
    if (n > buflen) __builtin_trap();  // what glibc's __chk_fail amounts to
    return ddp_recv1(fd, buf, n, 0);
  }
  wait_writable(buf, n);
  return ESOCK_LIBC(__read_chk)(fd, buf, n, buflen);
}

ssize_t write(int fd, const void* buf, size_t n) {
  if (fd_is_ddp(fd)) [[unlikely]]
    return ddp_send1(fd, buf, n, 0);
  wait_readable(buf, n);
  return ESOCK_LIBC(write)(fd, buf, n);
}

ssize_t readv(int fd, const iovec* iov, int cnt) {
  if (fd_is_ddp(fd)) [[unlikely]]
    return ddp_vec(fd, iov, cnt, false);
  if (cnt > 0 && cnt <= IOV_MAX && iov != nullptr) wait_writable(iov, cnt);
  return ESOCK_LIBC(readv)(fd, iov, cnt);
}

ssize_t writev(int fd, const iovec* iov, int cnt) {
  if (fd_is_ddp(fd)) [[unlikely]]
    return ddp_vec(fd, iov, cnt, true);
  wait_readable(iov, cnt);
  return ESOCK_LIBC(writev)(fd, iov, cnt);
}

ssize_t send(int fd, const void* buf, size_t n, int flags) {
  if (fd_is_ddp(fd)) [[unlikely]]
    return ddp_send1(fd, buf, n, flags);
  wait_readable(buf, n);
  return ESOCK_LIBC(send)(fd, buf, n, flags);
}

ssize_t recv(int fd, void* buf, size_t n, int flags) {
  if (fd_is_ddp(fd)) [[unlikely]]
    return ddp_recv1(fd, buf, n, flags);
  wait_writable(buf, n);
  return ESOCK_LIBC(recv)(fd, buf, n, flags);
}

ssize_t __recv_chk(int fd, void* buf, size_t n, size_t buflen, int flags) {
  if (fd_is_ddp(fd)) [[unlikely]] {
    if (n > buflen) __builtin_trap();
    return ddp_recv1(fd, buf, n, flags);
  }
  wait_writable(buf, n);
  return ESOCK_LIBC(__recv_chk)(fd, buf, n, buflen, flags);
}

ssize_t sendto(int fd, const void* buf, size_t n, int flags, const sockaddr* to, socklen_t len) {
  if (fd_is_ddp(fd)) [[unlikely]] {
    // A connected stream socket ignores the address (as TCP does when it is null).
    if (to != nullptr) {
      errno = EISCONN;
      return -1;
    }
    return ddp_send1(fd, buf, n, flags);
  }
  wait_readable(buf, n);
  return ESOCK_LIBC(sendto)(fd, buf, n, flags, to, len);
}

ssize_t recvfrom(int fd, void* buf, size_t n, int flags, sockaddr* from, socklen_t* len) {
  if (fd_is_ddp(fd)) [[unlikely]] {
    const ssize_t r = ddp_recv1(fd, buf, n, flags);
    if (r >= 0 && from != nullptr && len != nullptr) *len = 0;  // TCP leaves it unset too
    return r;
  }
  wait_writable(buf, n);
  return ESOCK_LIBC(recvfrom)(fd, buf, n, flags, from, len);
}

ssize_t __recvfrom_chk(int fd, void* buf, size_t n, size_t buflen, int flags, sockaddr* from,
                       socklen_t* len) {
  if (fd_is_ddp(fd)) [[unlikely]] {
    if (n > buflen) __builtin_trap();
    return recvfrom(fd, buf, n, flags, from, len);
  }
  wait_writable(buf, n);
  return ESOCK_LIBC(__recvfrom_chk)(fd, buf, n, buflen, flags, from, len);
}

ssize_t sendmsg(int fd, const msghdr* msg, int flags) {
  if (fd_is_ddp(fd)) [[unlikely]]
    return esock::sockets::ddp_sendmsg(fd, msg, flags);
  if (msg != nullptr) wait_readable(msg->msg_iov, static_cast<int>(msg->msg_iovlen));
  return ESOCK_LIBC(sendmsg)(fd, msg, flags);
}

ssize_t recvmsg(int fd, msghdr* msg, int flags) {
  if (fd_is_ddp(fd)) [[unlikely]]
    return esock::sockets::ddp_recvmsg(fd, msg, flags);
  if (msg != nullptr && msg->msg_iov != nullptr && msg->msg_iovlen <= IOV_MAX)
    wait_writable(msg->msg_iov, static_cast<int>(msg->msg_iovlen));
  const ssize_t r = ESOCK_LIBC(recvmsg)(fd, msg, flags);
  if (r >= 0 && esock::sockets::private_fds_here()) [[unlikely]]  // memif's regions, eventfds
    esock::sockets::privatize_rights(msg);
  return r;
}

ssize_t sendfile(int out_fd, int in_fd, off_t* offset, size_t count) {
  if (!fd_is_ddp(out_fd)) [[likely]]
    return ESOCK_LIBC(sendfile)(out_fd, in_fd, offset, count);
  // DDPMODE: read the file through a bounce buffer and send it as stream data.
  char buf[64 * 1024];
  const size_t want = count < sizeof buf ? count : sizeof buf;
  const ssize_t got =
      offset ? ::pread(in_fd, buf, want, *offset) : ESOCK_LIBC(read)(in_fd, buf, want);
  if (got <= 0) return got;
  const ssize_t sent = ddp_send1(out_fd, buf, static_cast<size_t>(got), 0);
  if (sent > 0) {
    if (offset)
      *offset += sent;
    else if (sent < got)
      ::lseek(in_fd, sent - got, SEEK_CUR);  // give back what was not sent
  }
  return sent;
}

}  // extern "C"

extern "C" ssize_t sendfile64(int out_fd, int in_fd, off64_t* offset, size_t count) {
  if (!fd_is_ddp(out_fd)) [[likely]]
    return ESOCK_LIBC(sendfile64)(out_fd, in_fd, offset, count);
  static_assert(sizeof(off64_t) == sizeof(off_t), "64-bit targets only");
  return sendfile(out_fd, in_fd, reinterpret_cast<off_t*>(offset), count);
}
