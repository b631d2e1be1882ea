// Interposed batch, pipe and vector calls: sendmmsg/recvmmsg, splice, preadv2/pwritev2. On a
// DDPMODE number the kernel would move the signal socket's octets (docs/sockets.md, "fd model"),
// not the connection's: these go to the stream protocol too, message by message, or through a
// bounce buffer for splice. Pass-through costs one flag load per descriptor.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstddef>

#include "esock/ddpmode/ops.h"
#include "esock/process/libc.h"
#include "esock/runtime/fd_table.h"

using esock::sockets::fd_is_ddp;

namespace {

// splice's bounce buffer: what one call moves at most (the kernel moves at most a pipe's
// worth, 64 KiB by default, too).
constexpr std::size_t splice_chunk = 64 * 1024;

ssize_t ddp_io(int fd, void* buf, std::size_t n, int flags, bool out) {
  iovec v{buf, n};
  msghdr m{};
  m.msg_iov = &v;
  m.msg_iovlen = 1;
  return out ? esock::sockets::ddp_sendmsg(fd, &m, flags)
             : esock::sockets::ddp_recvmsg(fd, &m, flags);
}

// Socket to pipe: the stream's octets are peeked, written to the pipe as far as it takes
// them, and only that much is then consumed, so nothing is lost when the pipe is full.
ssize_t splice_from_ddp(int sock, int pipe, std::size_t len, unsigned flags) {
  struct stat st {};
  if (::fstat(pipe, &st) != 0) return -1;
  if (!S_ISFIFO(st.st_mode)) {
    errno = EINVAL;  // one end must be a pipe
    return -1;
  }
  char buf[splice_chunk];
  const int dontwait = (flags & SPLICE_F_NONBLOCK) ? MSG_DONTWAIT : 0;
  const ssize_t got =
      ddp_io(sock, buf, len < sizeof buf ? len : sizeof buf, MSG_PEEK | dontwait, false);
  if (got <= 0) return got;
  const ssize_t put = ESOCK_LIBC(write)(pipe, buf, static_cast<std::size_t>(got));
  if (put <= 0) return put;
  return ddp_io(sock, buf, static_cast<std::size_t>(put), MSG_DONTWAIT, false);  // consumed
}

// Pipe to socket: what was read from the pipe is sent whole (a non-blocking socket waits
// for room then, as octets taken from a pipe cannot be put back).
ssize_t splice_to_ddp(int pipe, int sock, std::size_t len) {
  struct stat st {};
  if (::fstat(pipe, &st) != 0) return -1;
  if (!S_ISFIFO(st.st_mode)) {
    errno = EINVAL;
    return -1;
  }
  char buf[splice_chunk];
  const ssize_t got = ESOCK_LIBC(read)(pipe, buf, len < sizeof buf ? len : sizeof buf);
  if (got <= 0) return got;
  std::size_t done = 0;
  while (done < static_cast<std::size_t>(got)) {
    const ssize_t n =
        ddp_io(sock, buf + done, static_cast<std::size_t>(got) - done, MSG_NOSIGNAL, true);
    if (n < 0) {
      if (errno == EAGAIN) {  // a non-blocking socket: wait for room (the interposed poll)
        pollfd p{sock, POLLOUT, 0};
        ::poll(&p, 1, -1);
        continue;
      }
      if (errno == EINTR) continue;
      return done > 0 ? static_cast<ssize_t>(done) : -1;
    }
    done += static_cast<std::size_t>(n);
  }
  return got;
}

// preadv2/pwritev2 on a socket: offset -1 means "the current position", which a socket
// reads and writes as readv/writev do; any other offset is ESPIPE. RWF_NOWAIT does not wait.
ssize_t ddp_vec2(int fd, const iovec* iov, int cnt, long long offset, int flags, bool out) {
  if (offset != -1) {
    errno = ESPIPE;
    return -1;
  }
  if (cnt < 0 || cnt > IOV_MAX) {
    errno = EINVAL;
    return -1;
  }
  msghdr m{};
  m.msg_iov = const_cast<iovec*>(iov);
  m.msg_iovlen = static_cast<std::size_t>(cnt);
  const int f = (flags & RWF_NOWAIT) ? MSG_DONTWAIT : 0;
  return out ? esock::sockets::ddp_sendmsg(fd, &m, f) : esock::sockets::ddp_recvmsg(fd, &m, f);
}

}  // namespace

extern "C" {

ssize_t preadv2(int fd, const iovec* iov, int cnt, off_t offset, int flags) {
  if (!fd_is_ddp(fd)) [[likely]]
    return ESOCK_LIBC(preadv2)(fd, iov, cnt, offset, flags);
  return ddp_vec2(fd, iov, cnt, offset, flags, false);
}

ssize_t pwritev2(int fd, const iovec* iov, int cnt, off_t offset, int flags) {
  if (!fd_is_ddp(fd)) [[likely]]
    return ESOCK_LIBC(pwritev2)(fd, iov, cnt, offset, flags);
  return ddp_vec2(fd, iov, cnt, offset, flags, true);
}

ssize_t preadv64v2(int fd, const iovec* iov, int cnt, off64_t offset, int flags) {
  if (!fd_is_ddp(fd)) [[likely]]
    return ESOCK_LIBC(preadv64v2)(fd, iov, cnt, offset, flags);
  return ddp_vec2(fd, iov, cnt, offset, flags, false);
}

ssize_t pwritev64v2(int fd, const iovec* iov, int cnt, off64_t offset, int flags) {
  if (!fd_is_ddp(fd)) [[likely]]
    return ESOCK_LIBC(pwritev64v2)(fd, iov, cnt, offset, flags);
  return ddp_vec2(fd, iov, cnt, offset, flags, true);
}

int sendmmsg(int fd, mmsghdr* v, unsigned int n, int flags) {
  if (!fd_is_ddp(fd)) [[likely]]
    return ESOCK_LIBC(sendmmsg)(fd, v, n, flags);
  // As the kernel: the messages sent, or -1 when the first fails.
  unsigned int i = 0;
  for (; i < n; ++i) {
    const ssize_t r = esock::sockets::ddp_sendmsg(fd, &v[i].msg_hdr, flags);
    if (r < 0) return i > 0 ? static_cast<int>(i) : -1;
    v[i].msg_len = static_cast<unsigned int>(r);
  }
  return static_cast<int>(i);
}

int recvmmsg(int fd, mmsghdr* v, unsigned int n, int flags, timespec* timeout) {
  if (!fd_is_ddp(fd)) [[likely]]
    return ESOCK_LIBC(recvmmsg)(fd, v, n, flags, timeout);
  // MSG_WAITFORONE: only the first may wait. The timeout, as the kernel's, is looked at
  // only between messages; a byte stream ends the batch at its end (a read of 0).
  const int first = flags & ~MSG_WAITFORONE;
  const int rest = (flags & MSG_WAITFORONE) ? first | MSG_DONTWAIT : first;
  unsigned int i = 0;
  for (; i < n; ++i) {
    const ssize_t r = esock::sockets::ddp_recvmsg(fd, &v[i].msg_hdr, i == 0 ? first : rest);
    if (r < 0) return i > 0 ? static_cast<int>(i) : -1;
    v[i].msg_len = static_cast<unsigned int>(r);
    if (r == 0) return static_cast<int>(i + 1);
  }
  return static_cast<int>(i);
}

ssize_t splice(int in, loff_t* off_in, int out, loff_t* off_out, size_t len, unsigned int flags) {
  const bool from = fd_is_ddp(in), to = fd_is_ddp(out);
  if (!from && !to) [[likely]]
    return ESOCK_LIBC(splice)(in, off_in, out, off_out, len, flags);
  if ((from && off_in != nullptr) || (to && off_out != nullptr)) {
    errno = ESPIPE;  // a socket has no offset
    return -1;
  }
  if (from && to) {
    errno = EINVAL;  // one end must be a pipe
    return -1;
  }
  return from ? splice_from_ddp(in, out, len, flags) : splice_to_ddp(in, out, len);
}

}  // extern "C"
