// Connection: a TCB owned by the stack, plus what the stack needs to know about it
// (listener children, release) and the forwarding of the TCB's hooks to the user.
#include "tcp/stack/stack.h"

namespace esock::tcp {

Connection::Connection(Stack& stack, const TcpConfig& cfg, const FourTuple& t, Listener* parent)
    : stack_(stack), tcb_(cfg, t, stack, this), parent_(parent) {
  tcb_.recv_queue().share_budget(&stack.rx_frames_);
}

std::size_t Connection::send(bytes_view data) {
  return tcb_.send(stack_.now(), data);
}

bool Connection::send_ref(bytes_view data, const BufRef& ref, bool end_of_record) {
  return tcb_.send_ref(stack_.now(), data, ref, end_of_record);
}

bool Connection::send_record(std::span<const TxPiece> parts) {
  return tcb_.send_record(stack_.now(), parts);
}

std::size_t Connection::recv(mut_bytes out) {
  return tcb_.recv(stack_.now(), out);
}

void Connection::shutdown_send() {
  tcb_.close(stack_.now());
}

void Connection::set_nodelay(bool on) {
  tcb_.set_nodelay(stack_.now(), on);
}

bool Connection::established() const {
  switch (tcb_.state()) {
    case TcpState::established:
    case TcpState::fin_wait_1:
    case TcpState::fin_wait_2:
    case TcpState::close_wait:
      return true;
    default:
      return false;
  }
}

void Connection::on_established() {
  if (parent_) stack_.child_established(this);
  if (user_) user_->on_established();
}
void Connection::on_readable() {
  if (user_) user_->on_readable();
}
void Connection::on_writable() {
  if (user_) user_->on_writable();
}
void Connection::on_acked(std::uint32_t bytes) {
  if (user_) user_->on_acked(bytes);
}
void Connection::on_closed(CloseReason r) {
  if (parent_) stack_.child_gone(this);
  ++stack_.stats_.connections_closed;
  stack_.note_released(*this);  // a released connection is freed in the next round
  if (user_) user_->on_closed(r);
}
void Connection::on_deadline(Instant when) {
  stack_.schedule(*this, when);
  // A released connection entering TIME-WAIT (its 2 MSL timer is armed then) counts
  // against StackConfig::time_wait_max.
  if (tcb_.state() == TcpState::time_wait) stack_.note_released(*this);
}
bool Connection::on_out_of_order(std::uint32_t seq, bytes_view data, const BufRef& ref) {
  return user_ && user_->on_out_of_order(seq, data, ref);
}
void Connection::on_range_delivered(std::uint32_t seq, std::uint32_t len) {
  if (user_) user_->on_range_delivered(seq, len);
}

}  // namespace esock::tcp
