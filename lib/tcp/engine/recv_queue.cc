#include "tcp/engine/recv_queue.h"

#include <algorithm>
#include <cstring>

namespace esock::tcp {

std::size_t RecvQueue::read(mut_bytes out) {
  std::size_t done = 0;
  while (done < out.size() && !pieces_.empty()) {
    Piece& p = pieces_.front();
    std::size_t k = std::min(out.size() - done, p.data.size());
    std::memcpy(out.data() + done, p.data.data(), k);
    done += k;
    consume(k);
  }
  return done;
}

std::size_t RecvQueue::peek(mut_bytes out) const {
  std::size_t done = 0;
  for (auto it = pieces_.begin(); done < out.size() && it != pieces_.end(); ++it) {
    const std::size_t k = std::min(out.size() - done, it->data.size());
    std::memcpy(out.data() + done, it->data.data(), k);
    done += k;
  }
  return done;
}

bool RecvQueue::may_pin(std::size_t len, const BufRef& ref, std::size_t more) const {
  if (!ref || pinned_ + more >= max_pinned_) return false;
  // A tiny segment is copied unless the queue is empty: the common request/response case
  // (one small message, read at once) keeps its frame and costs no copy or allocation.
  if (len < copy_below && !pieces_.empty()) return false;
  return budget_ == nullptr || budget_->held < budget_->limit;
}

void RecvQueue::push(bytes_view data, const BufRef& ref) {
  if (data.empty()) return;
  size_ += data.size();
  if (may_pin(data.size(), ref)) {
    pieces_.push_back(Piece{data, ref, true});
    tail_room_ = 0;  // a copy block before it is closed: order is kept
    ++pinned_;
    if (budget_ != nullptr) ++budget_->held;
    return;
  }
  if (ref) count_copy();
  append_copy(data);
}

// Appends to the open copy block (the last piece) while it has room, then to a new one.
void RecvQueue::append_copy(bytes_view data) {
  while (!data.empty()) {
    if (tail_room_ == 0) {
      const std::size_t cap = std::max(block_size, data.size());
      std::uint8_t* mem = nullptr;
      BufRef block = HeapBuf::make(cap, &mem);
      pieces_.push_back(Piece{bytes_view(mem, 0), std::move(block), false});
      tail_room_ = cap;
    }
    Piece& last = pieces_.back();
    const std::size_t k = std::min(tail_room_, data.size());
    // The block's free octets follow the piece's view; a consumed front only moved its start.
    auto* end = const_cast<std::uint8_t*>(last.data.data()) + last.data.size();
    std::memcpy(end, data.data(), k);
    last.data = bytes_view(last.data.data(), last.data.size() + k);
    tail_room_ -= k;
    data = data.subspan(k);
  }
}

void RecvQueue::pop_front() {
  if (pieces_.front().pinned) {
    --pinned_;
    if (budget_ != nullptr) --budget_->held;
  }
  pieces_.pop_front();
  if (pieces_.empty()) tail_room_ = 0;  // the open block went with it
}

void RecvQueue::consume(std::size_t n) {
  n = std::min(n, size_);
  size_ -= n;
  while (n > 0) {
    Piece& p = pieces_.front();
    if (n < p.data.size()) {
      p.data = p.data.subspan(n);
      return;
    }
    n -= p.data.size();
    pop_front();
  }
}

void RecvQueue::clear() {
  while (!pieces_.empty()) pop_front();
  size_ = 0;
}

}  // namespace esock::tcp
