#include "esock/process/readiness_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <initializer_list>
#include <new>

#include "esock/process/libc.h"

namespace esock::sockets {

namespace {

// An AF_UNIX datagram socket with a kernel-chosen abstract name (autobind: only the family
// given), close-on-exec, moved to the private range unless it is the caller's to place.
int autobound(sockaddr_un* name, socklen_t* len, bool high) {
  int fd = ESOCK_LIBC(socket)(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (high) {
    const int h = move_high(fd);
    ESOCK_LIBC(close)(fd);
    if (h < 0) return -1;
    fd = h;
  }
  const sa_family_t family = AF_UNIX;
  *len = sizeof *name;
  if (ESOCK_LIBC(bind)(fd, reinterpret_cast<const sockaddr*>(&family), sizeof family) != 0 ||
      ESOCK_LIBC(getsockname)(fd, reinterpret_cast<sockaddr*>(name), len) != 0) {
    const int err = errno;
    ESOCK_LIBC(close)(fd);
    errno = err;
    return -1;
  }
  return fd;
}

const sockaddr* as_sa(const sockaddr_un& a) {
  return reinterpret_cast<const sockaddr*>(&a);
}

// Takes every datagram queued on fd.
void drain(int fd) {
  char b[8];
  while (ESOCK_LIBC(recv)(fd, b, sizeof b, MSG_DONTWAIT) > 0) {
  }
}

bool dissolve(int fd) {
  sockaddr unspec{};
  unspec.sa_family = AF_UNSPEC;
  return ESOCK_LIBC(connect)(fd, &unspec, sizeof unspec) == 0;
}

}  // namespace

ReadinessHub* ReadinessHub::process() {
  static ReadinessHub* hub = [] {
    auto* h = new (std::nothrow) ReadinessHub;
    if (h != nullptr && !h->open()) {
      delete h;
      h = nullptr;
    }
    return h;
  }();
  return hub;
}

bool ReadinessHub::open() {
  sockaddr_un unused{};
  socklen_t unused_len = 0;
  full_ = autobound(&full_name_, &full_len_, true);
  sink_ = autobound(&sink_name_, &sink_len_, true);
  if (full_ < 0 || sink_ < 0) return close_all();
  // Fill `full` until a socket connected to it polls not writable: its queue holds
  // net.unix.max_dgram_qlen + 1 datagrams then (10 by default, 512 where systemd sets it),
  // more than one filler's send buffer may carry, so fillers come until it holds. A
  // filler's descriptor can go at once: its datagrams stay queued at `full`.
  const int probe = autobound(&unused, &unused_len, true);
  if (probe < 0 || ESOCK_LIBC(connect)(probe, as_sa(full_name_), full_len_) != 0) {
    if (probe >= 0) ESOCK_LIBC(close)(probe);
    return close_all();
  }
  bool full = false;
  for (int fillers = 0; fillers < 64 && !full; ++fillers) {
    const int filler = autobound(&unused, &unused_len, true);
    if (filler < 0) break;
    while (ESOCK_LIBC(sendto)(filler, "f", 1, MSG_DONTWAIT, as_sa(full_name_), full_len_) == 1) {
    }
    ESOCK_LIBC(close)(filler);
    pollfd p{probe, POLLOUT, 0};
    full = ESOCK_LIBC(poll)(&p, 1, 0) == 0;
  }
  ESOCK_LIBC(close)(probe);
  return full || close_all();
}

bool ReadinessHub::close_all() {
  for (int* fd : {&full_, &sink_}) {
    if (*fd >= 0) ESOCK_LIBC(close)(*fd);
    *fd = -1;
  }
  return false;
}

int ReadinessHub::create(ReadinessState* st) const {
  *st = ReadinessState{};
  return autobound(&st->name, &st->name_len, false);
}

// Readability is a datagram the socket sends itself: the kernel lets a connected datagram
// socket receive only from its peer, so a socket connected to `full` (not writable) is
// dissolved for the send and connected again; and dissolving drops what is queued, so a
// readable socket made writable sends itself the datagram again.
bool ReadinessHub::signal_self(int fd, const ReadinessState& st) const {
  const bool blocked = !st.writable;
  if (blocked && !dissolve(fd)) return false;
  // EPIPE: its reading side is shut (end_of_stream, hang_up): readable for good already.
  const bool sent =
      ESOCK_LIBC(sendto)(fd, "r", 1, MSG_DONTWAIT, as_sa(st.name), st.name_len) == 1 ||
      errno == EPIPE;
  if (blocked && ESOCK_LIBC(connect)(fd, as_sa(full_name_), full_len_) != 0) return false;
  return sent;
}

bool ReadinessHub::set_readable(int fd, ReadinessState& st, bool on) const {
  if (on == st.readable || st.failed) return true;
  if (on) {
    if (!signal_self(fd, st)) return false;
    st.readable = true;
    return true;
  }
  drain(fd);
  st.readable = false;
  return true;
}

bool ReadinessHub::set_writable(int fd, ReadinessState& st, bool on) const {
  if (on == st.writable || st.failed) return true;
  if (!on) {
    // (From unconnected: nothing queued is dropped.)
    if (ESOCK_LIBC(connect)(fd, as_sa(full_name_), full_len_) != 0) return false;
    st.writable = false;
    return true;
  }
  if (!dissolve(fd)) return false;
  st.writable = true;
  // The write-space wakeup: a datagram of ours, freed as the sink reads it. (The sink is
  // emptied first: anyone can send to its name, and a full sink would refuse ours.)
  drain(sink_);
  if (ESOCK_LIBC(sendto)(fd, "w", 1, MSG_DONTWAIT, as_sa(sink_name_), sink_len_) == 1) drain(sink_);
  return !st.readable || signal_self(fd, st);  // the dissolution dropped it
}

bool ReadinessHub::end_of_stream(int fd) {
  return ESOCK_LIBC(shutdown)(fd, SHUT_RD) == 0;
}

void ReadinessHub::take_stray(int fd) {
  drain(fd);
}

bool ReadinessHub::hang_up(int fd) {
  return ESOCK_LIBC(shutdown)(fd, SHUT_RDWR) == 0;
}

bool ReadinessHub::fail(int fd, ReadinessState& st) const {
  if (st.failed) return true;
  // fd and a throwaway socket x connected to each other, one datagram of fd's queued at x;
  // x dissolving its side drops it and reports the loss to fd as ECONNRESET (sk_err). fd
  // stays connected to x, which is gone then: writable, as a reset TCP socket polls. A
  // readable fd gets a datagram from x too (connecting to x dropped its own queue if it was
  // connected to `full`, and a send of fd's own now would take the error instead).
  sockaddr_un xn{};
  socklen_t xl = 0;
  const int x = autobound(&xn, &xl, true);
  if (x < 0) return false;
  auto readable_again = [&] {
    return ESOCK_LIBC(send)(x, "r", 1, MSG_DONTWAIT) == 1 || errno == EPIPE;  // EPIPE: EOF
  };
  const bool ok = ESOCK_LIBC(connect)(fd, as_sa(xn), xl) == 0 &&
                  ESOCK_LIBC(connect)(x, as_sa(st.name), st.name_len) == 0 &&
                  ESOCK_LIBC(send)(fd, "e", 1, MSG_DONTWAIT) == 1 &&
                  (!st.readable || readable_again()) && dissolve(x);
  const int err = errno;
  ESOCK_LIBC(close)(x);
  errno = err;
  if (!ok) return false;
  st.writable = true;
  st.failed = true;
  return true;
}

}  // namespace esock::sockets
