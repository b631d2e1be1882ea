#include "esock/runtime/fork_relay.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

#include "esock/process/libc.h"

namespace esock::sockets {

ForkRelay::~ForkRelay() {
  if (fd_ >= 0) ESOCK_LIBC(close)(fd_);
}

short ForkRelay::poll_events(const estp::Stream& st) const {
  short ev = 0;
  if (!child_gone_ && to_child_off_ < to_child_.size()) ev |= POLLOUT;
  if (!child_eof_ && to_peer_off_ == to_peer_.size() && st.writable()) ev |= POLLIN;
  return ev;
}

bool ForkRelay::pump(estp::Stream& st) {
  if (!active_) return false;
  // A reset: the child's end closes (end of stream, EPIPE). EPIPE, a write to a peer that
  // closed, leaves what it sent before to be read.
  if (st.error() != 0 && st.error() != EPIPE) return true;
  // The peer's octets to the child, at most one chunk ahead of what the child took, so the
  // stream's credits push back on the peer as the child's reading does.
  while (!child_gone_ && !fin_passed_) {
    if (to_child_off_ == to_child_.size()) {
      to_child_.resize(chunk);
      const mut_bytes dst(to_child_.data(), chunk);
      const estp::ReadOut r = st.read({&dst, 1}, false);
      to_child_.resize(r.n);
      to_child_off_ = 0;
      if (r.err == EAGAIN) break;  // nothing yet (a rendezvous source: prefetch pulls it)
      if (r.err != 0) return true;
      if (r.n == 0) {
        if (st.peer_fin()) {  // everything the peer sent went on: its end of stream too
          ESOCK_LIBC(shutdown)(fd_, SHUT_WR);
          fin_passed_ = true;
        }
        break;
      }
    }
    const ssize_t n =
        ESOCK_LIBC(send)(fd_, to_child_.data() + to_child_off_, to_child_.size() - to_child_off_,
                         MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) break;
      child_gone_ = true;  // closed its end: what it did not read is dropped, as TCP's close
      to_child_.clear();
      to_child_off_ = 0;
      break;
    }
    to_child_off_ += static_cast<std::size_t>(n);
  }
  // The child's octets to the peer.
  while (!child_eof_) {
    if (to_peer_off_ == to_peer_.size()) {
      to_peer_.resize(chunk);
      const ssize_t n = ESOCK_LIBC(recv)(fd_, to_peer_.data(), chunk, MSG_DONTWAIT);
      to_peer_.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
      to_peer_off_ = 0;
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
      if (n <= 0) {
        // shutdown(SHUT_WR) or close: the peer gets FIN after what went before. A whole
        // close also hangs the pair up: nothing more goes to the child then.
        child_eof_ = true;
        st.shutdown_write();
        pollfd p{fd_, 0, 0};
        if (ESOCK_LIBC(poll)(&p, 1, 0) == 1 && (p.revents & POLLHUP)) child_gone_ = true;
        break;
      }
    }
    const std::ptrdiff_t w =
        st.write({to_peer_.data() + to_peer_off_, to_peer_.size() - to_peer_off_}, false);
    if (w == -EAGAIN) break;
    if (w < 0) {
      // The peer closed (or the stream failed): nothing more goes that way, but what it
      // sent before still goes to the child, up to its FIN, as a kernel socket would let
      // the child read it.
      to_peer_.clear();
      to_peer_off_ = 0;
      child_eof_ = true;
      if (st.error() != 0 && st.error() != EPIPE) return true;
      break;
    }
    to_peer_off_ += static_cast<std::size_t>(w);
  }
  return child_eof_ && (fin_passed_ || child_gone_);
}

}  // namespace esock::sockets
