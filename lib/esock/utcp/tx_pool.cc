#include "esock/utcp/tx_pool.h"

namespace esock::utcp {

TxPool::~TxPool() {
  for (Pin* p : free_pins_) delete p;
}

BufRef TxPool::pin(std::uint64_t id) {
  Pin* p = nullptr;
  if (!free_pins_.empty()) {
    p = free_pins_.back();
    free_pins_.pop_back();
  } else {
    p = new Pin{BufHolder{0, &TxPool::pin_released}, this, 0};
  }
  p->id = id;
  ++pins_out_;
  return BufRef(&p->holder);
}

void TxPool::pin_released(BufHolder* h) {
  auto* p = reinterpret_cast<Pin*>(h);
  TxPool* pool = p->pool;
  pool->free_pins_.push_back(p);
  --pool->pins_out_;
  pool->mark_done(p->id);
  if (pool->orphaned_ && pool->pins_out_ == 0) delete pool;
}

void TxPool::done(std::uint64_t id) {
  mark_done(id);
}

// Pins mostly come back in order (TCP ACKs in order), but a device may still hold a frame
// of an older segment: remember stragglers and advance over the contiguous prefix only.
void TxPool::mark_done(std::uint64_t id) {
  if (id <= released_through_) return;
  const std::uint64_t i = id - released_through_ - 1;
  if (done_.size() <= i) done_.resize(static_cast<std::size_t>(i) + 1, false);
  done_[static_cast<std::size_t>(i)] = true;
  const std::uint64_t before = released_through_;
  while (!done_.empty() && done_.front()) {
    done_.pop_front();
    ++released_through_;
  }
  if (released_through_ != before && wake_ != nullptr) wake_(wake_ctx_);
}

void TxPool::orphan() {
  orphaned_ = true;
  wake_ = nullptr;  // the owner is gone
  if (pins_out_ == 0) delete this;
}

}  // namespace esock::utcp
