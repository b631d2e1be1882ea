// In-order received data waiting for the application, kept in the frames it arrived in
// (each piece holds a BufRef on its mbuf), so delivery needs no copy until the application
// copies out, and none at all when it consumes pieces in place.
#pragma once

#include <cstddef>
#include <deque>

#include "base/buf_ref.h"
#include "base/bytes.h"

namespace esock::tcp {

class RecvQueue {
 public:
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  void push(bytes_view data, const BufRef& ref) {
    if (data.empty()) return;
    pieces_.push_back(Piece{data, ref});
    size_ += data.size();
  }

  // Copies up to out.size() bytes out and consumes them.
  std::size_t read(mut_bytes out);

  // Zero-copy access: the first piece (empty view when the queue is empty) and its ref.
  bytes_view front() const { return pieces_.empty() ? bytes_view{} : pieces_.front().data; }
  const BufRef& front_ref() const { return pieces_.front().ref; }
  void consume(std::size_t n);
  void clear() {
    pieces_.clear();
    size_ = 0;
  }

 private:
  struct Piece {
    bytes_view data;
    BufRef ref;
  };
  std::deque<Piece> pieces_;
  std::size_t size_ = 0;
};

}  // namespace esock::tcp
