// In-order received data waiting for the application, kept in the frames it arrived in
// (each piece holds a BufRef on its mbuf), so delivery needs no copy until the application
// copies out, and none at all when it consumes pieces in place. The frames one queue (and
// all queues of a stack, rx_frame_budget.h) may pin are bounded: past the bound, and for
// segments too small to be worth a frame, the octets are copied into compact heap blocks
// and the frame is released at once (the queue then costs its bytes, not a frame per
// segment: the receive window bounds the bytes).
#pragma once

#include <cstddef>
#include <deque>

#include "base/buf_ref.h"
#include "base/bytes.h"
#include "tcp/engine/rx_frame_budget.h"

namespace esock::tcp {

class RecvQueue {
 public:
  // Segments shorter than this are copied rather than pinning a frame of ~2 KiB each,
  // unless the queue is empty (so a queue pins at most one frame for tiny segments).
  static constexpr std::size_t copy_below = 128;
  static constexpr std::size_t block_size = 16 * 1024;  // a copy block, at least

  RecvQueue() = default;
  explicit RecvQueue(std::size_t max_pinned) : max_pinned_(max_pinned) {}
  ~RecvQueue() { clear(); }
  RecvQueue(const RecvQueue&) = delete;
  RecvQueue& operator=(const RecvQueue&) = delete;

  // The stack's shared bound on pinned frames (null: only this queue's bound applies).
  void share_budget(RxFrameBudget* b) { budget_ = b; }
  RxFrameBudget* budget() const { return budget_; }
  // Whether a segment of len octets may keep its frame (ref) rather than be copied, given
  // `more` frames the owner holds elsewhere (its out-of-order store).
  bool may_pin(std::size_t len, const BufRef& ref, std::size_t more = 0) const;
  void count_copy() {
    ++copied_;
    if (budget_ != nullptr) ++budget_->copied_segments;
  }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Queues data: by reference to `ref` when a frame may be pinned, else copied.
  void push(bytes_view data, const BufRef& ref);

  std::size_t pinned() const { return pinned_; }    // frames held by reference
  std::uint64_t copied() const { return copied_; }  // segments copied (not pinned)

  // Copies up to out.size() bytes out and consumes them.
  std::size_t read(mut_bytes out);
  // Copies up to out.size() bytes from the front, across pieces, and consumes nothing (a
  // user that must see a protocol's first octets before deciding who reads them).
  std::size_t peek(mut_bytes out) const;

  // Zero-copy access: the first piece (empty view when the queue is empty) and its ref.
  bytes_view front() const { return pieces_.empty() ? bytes_view{} : pieces_.front().data; }
  const BufRef& front_ref() const { return pieces_.front().ref; }
  void consume(std::size_t n);
  void clear();

 private:
  struct Piece {
    bytes_view data;
    BufRef ref;
    bool pinned = false;  // ref is a received frame (else a copy block, or none)
  };
  void append_copy(bytes_view data);
  void pop_front();

  std::deque<Piece> pieces_;
  std::size_t size_ = 0;
  std::size_t max_pinned_ = SIZE_MAX;
  std::size_t pinned_ = 0;
  std::uint64_t copied_ = 0;
  RxFrameBudget* budget_ = nullptr;
  std::size_t tail_room_ = 0;  // free octets after pieces_.back(), a copy block's tail
};

}  // namespace esock::tcp
