#include "transfer.h"

#include <algorithm>
#include <cerrno>

namespace esock::tcp::tool {
namespace {
constexpr std::size_t chunk = 64 * 1024;
constexpr std::size_t echo_limit = 1 << 20;  // stop reading while this much waits to go back
}  // namespace

const char* to_string(End e) {
  switch (e) {
    case End::running:
      return "running";
    case End::fin:
      return "fin";
    case End::aborted:
      return "aborted";
    case End::reset:
      return "reset";
    case End::failed:
      return "failed";
  }
  return "?";
}

Transfer::Transfer(const Options& o, Stack& stack, Connection* c, Instant start)
    : o_(o),
      stack_(stack),
      conn_(c),
      gen_(o.pattern, o.seed),
      txbuf_(chunk),
      rxbuf_(chunk),
      start_(start),
      finish_(start) {}

void Transfer::done(Instant now, End e) {
  end_ = e;
  finish_ = now;
  if (conn_) {
    info = conn_->tcb().info();
    stats = conn_->tcb().stats();
  }
}

bool Transfer::pump_send(Instant now) {
  if (!o_.send || fin_sent_) return false;
  bool work = false;
  while (true) {
    if (tx_off_ == tx_len_) {
      std::uint64_t left = *o_.send - generated_;
      if (left == 0) break;
      tx_len_ = static_cast<std::size_t>(std::min<std::uint64_t>(left, chunk));
      tx_off_ = 0;
      mut_bytes b(txbuf_.data(), tx_len_);
      gen_.fill(b);
      sent_.update(b);
      generated_ += tx_len_;
    }
    std::size_t n = conn_->send(bytes_view(txbuf_.data() + tx_off_, tx_len_ - tx_off_));
    if (n == 0) return work;
    tx_off_ += n;
    work = true;
    if (o_.abort_after && generated_ - (tx_len_ - tx_off_) >= *o_.abort_after) {
      done(now, End::aborted);
      stack_.abort(conn_);
      conn_ = nullptr;
      return true;
    }
  }
  // RFC 9293 3.10.4 CLOSE: the FIN goes after everything queued.
  conn_->shutdown_send();
  fin_sent_ = true;
  return true;
}

bool Transfer::pump_recv(Instant now) {
  bool work = false;
  while (conn_) {
    mut_bytes out(rxbuf_.data(), rxbuf_.size());
    if (o_.echo) {
      std::size_t waiting = echo_.size() - echo_off_;
      if (waiting >= echo_limit) break;
      out = out.first(std::min(out.size(), echo_limit - waiting));
    }
    std::size_t n = conn_->recv(out);
    if (n == 0) break;
    work = true;
    bytes_view got(rxbuf_.data(), n);
    recv_.update(got);
    if (o_.echo) echo_.insert(echo_.end(), got.begin(), got.end());
    if (o_.abort_after && !o_.send && recv_.bytes() >= *o_.abort_after) {
      done(now, End::aborted);
      stack_.abort(conn_);
      conn_ = nullptr;
    }
  }
  return work;
}

bool Transfer::pump_echo() {
  if (!o_.echo || fin_sent_) return false;
  bool work = false;
  while (echo_off_ < echo_.size()) {
    std::size_t n = conn_->send(bytes_view(echo_.data() + echo_off_, echo_.size() - echo_off_));
    if (n == 0) break;
    echo_off_ += n;
    work = true;
  }
  if (echo_off_ == echo_.size()) {
    echo_.clear();
    echo_off_ = 0;
    if (conn_->peer_closed()) {
      conn_->shutdown_send();  // the peer's FIN, echoed after its data
      fin_sent_ = true;
      work = true;
    }
  }
  return work;
}

bool Transfer::step(Instant now) {
  if (end_ != End::running || !conn_) return false;
  bool work = pump_recv(now);
  if (conn_) work |= pump_send(now);
  if (conn_) work |= pump_echo();
  if (!conn_) return true;
  // Only --recv (no --send, no --echo): the peer's FIN ends our side too.
  if (!o_.send && !o_.echo && !fin_sent_ && conn_->peer_closed() &&
      conn_->tcb().recv_queue().empty()) {
    conn_->shutdown_send();
    fin_sent_ = true;
    work = true;
  }
  TcpState s = conn_->state();
  if (s == TcpState::closed || s == TcpState::time_wait) {
    error_ = conn_->error();
    if (error_ == 0 && fin_sent_ && conn_->peer_closed()) {
      done(now, End::fin);
    } else {
      done(now, error_ == ECONNRESET ? End::reset : End::failed);
    }
    return true;
  }
  return work;
}

}  // namespace esock::tcp::tool
