#include "esock/utcp/plain_relay.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace esock::utcp {

PlainRelay::PlainRelay(tcp::Stack& stack, tcp::Connection* c, int fd)
    : stack_(stack), conn_(c), fd_(fd), buf_(chunk) {
  conn_->set_user(nullptr);  // polled: pump() after each Stack::poll()
}

PlainRelay::~PlainRelay() {
  // A fork child that still holds the application's end reads end of stream (its copy
  // keeps the pair open otherwise).
  ::shutdown(fd_, SHUT_RDWR);
  ::close(fd_);
  if (conn_ == nullptr) return;
  if (reset_)
    stack_.abort(conn_);
  else
    stack_.close(conn_);
}

// A whole close of the application's end (not only its shutdown) hangs the pair up: nothing
// more goes to it then. At exit its end counts as closed.
void PlainRelay::check_hang_up() {
  pollfd p{fd_, 0, 0};
  if (exiting_ || (::poll(&p, 1, 0) == 1 && (p.revents & POLLHUP))) app_gone_ = true;
}

bool PlainRelay::settled() const {
  if (conn_ == nullptr || failed_ || reset_ || conn_->state() == tcp::TcpState::closed) return true;
  const tcp::Tcb& t = conn_->tcb();
  return done() && t.unsent() == 0 && t.snd_una() == t.snd_nxt();
}

short PlainRelay::poll_events() const {
  if (conn_ == nullptr || done()) return 0;
  short ev = 0;
  if (app_blocked_) ev |= POLLOUT;
  if (!app_eof_ && conn_->established() && conn_->send_space() > 0) ev |= POLLIN;
  return ev;
}

bool PlainRelay::pump() {
  if (conn_ == nullptr || done()) return false;
  const tcp::TcpState st = conn_->state();
  if (st == tcp::TcpState::closed && conn_->error() != 0) {
    // RFC 9293 section 3.10.7.3 (RST) or a failed open: the application's end closes whole.
    ::shutdown(fd_, SHUT_RDWR);
    failed_ = true;
    return true;
  }
  if (app_eof_ && !app_gone_) check_hang_up();  // after its shutdown a close shows only so
  bool did = to_app();
  if (conn_->established()) did |= to_peer();
  if (app_gone_ && !reset_) did |= to_app();  // it hung up meanwhile: unread octets reset
  return did;
}

// The peer's octets, straight from TCP's receive queue into the pair (no copy of ours).
bool PlainRelay::to_app() {
  bool did = false;
  tcp::Tcb& tcb = conn_->tcb();
  tcp::RecvQueue& rq = tcb.recv_queue();
  app_blocked_ = false;
  while (!app_gone_ && !fin_passed_) {
    const bytes_view v = rq.front();
    if (v.empty()) {
      if (tcb.peer_closed()) {  // everything before the FIN went on: the FIN too
        ::shutdown(fd_, SHUT_WR);
        fin_passed_ = true;
        did = true;
      }
      break;
    }
    const ssize_t n = ::send(fd_, v.data(), v.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        app_blocked_ = true;
        break;
      }
      app_gone_ = true;  // it closed its end: what it did not read is dropped
      break;
    }
    tcb.recv_consumed(stack_.now(), static_cast<std::size_t>(n));
    did = true;
  }
  // The application closed with the peer's octets unread: as a kernel socket closed so
  // (RFC 9293 section 3.10.4, as Linux does), the connection is reset.
  if (app_gone_ && !rq.empty()) {
    reset_ = true;
    did = true;
  }
  return did;
}

// The application's octets: at most what TCP's send buffer takes now, so the pair's own
// buffer (and then the application's write) is what pushes back.
bool PlainRelay::to_peer() {
  bool did = false;
  while (!app_eof_) {
    const std::size_t room = std::min(conn_->send_space(), chunk);
    if (room == 0) break;
    const ssize_t n = ::recv(fd_, buf_.data(), room, MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN && !exiting_) break;
    }
    if (n <= 0) {
      // shutdown(SHUT_WR) or close: FIN after what went before. A whole close also hangs
      // the pair up: nothing more goes to the application then.
      app_eof_ = true;
      conn_->shutdown_send();
      check_hang_up();
      did = true;
      break;
    }
    const std::size_t sent = conn_->send(bytes_view(buf_.data(), static_cast<std::size_t>(n)));
    (void)sent;  // == n: no more than send_space() was read
    did = true;
  }
  return did;
}

}  // namespace esock::utcp
