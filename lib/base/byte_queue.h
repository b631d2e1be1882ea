// A FIFO of octets with uninitialised append: producers frame straight into it, consumers
// drain from the front. Storage is compacted lazily so steady-state traffic does not allocate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "base/bytes.h"

namespace esock {

class ByteQueue {
 public:
  std::size_t size() const { return tail_ - head_; }
  bool empty() const { return tail_ == head_; }
  bytes_view view() const { return {buf_.get() + head_, tail_ - head_}; }

  // Reserves n octets at the back and returns them for the caller to fill.
  mut_bytes append_uninit(std::size_t n) {
    if (cap_ - tail_ < n) make_room(n);
    mut_bytes out{buf_.get() + tail_, n};
    tail_ += n;
    return out;
  }
  void append(bytes_view b) {
    if (!b.empty()) std::memcpy(append_uninit(b.size()).data(), b.data(), b.size());
  }
  // Gives back the last n octets of an append_uninit() that were not used.
  void unappend(std::size_t n) { tail_ -= n; }
  void consume(std::size_t n) {
    head_ += n;
    if (head_ == tail_) head_ = tail_ = 0;
  }

 private:
  void make_room(std::size_t n) {
    const std::size_t used = tail_ - head_;
    if (head_ > 0 && cap_ - used >= n && used <= cap_ / 2) {
      std::memmove(buf_.get(), buf_.get() + head_, used);
    } else {
      std::size_t cap = cap_ ? cap_ : 4096;
      while (cap - used < n) cap *= 2;
      auto fresh = std::make_unique_for_overwrite<std::uint8_t[]>(cap);
      if (used) std::memcpy(fresh.get(), buf_.get() + head_, used);
      buf_ = std::move(fresh);
      cap_ = cap;
    }
    head_ = 0;
    tail_ = used;
  }

  std::unique_ptr<std::uint8_t[]> buf_;
  std::size_t cap_ = 0, head_ = 0, tail_ = 0;
};

}  // namespace esock
