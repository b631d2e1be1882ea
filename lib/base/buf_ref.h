// A counted reference to bytes whose storage is owned elsewhere: an mbuf, a registered
// memory region, a heap block. This is how zero-copy works across layers: a received
// segment's payload stays in its mbuf while a BufRef exists; a transmitted chunk stays
// pinned until TCP has it ACKed and the device has released every frame that points at it.
//
// One stack instance runs on one core (ARCHITECTURE.md), so the count is not atomic.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>

namespace esock {

// The owner embeds (or allocates) a BufHolder and supplies the release hook, which runs
// when the last reference is dropped.
struct BufHolder {
  std::uint32_t refs = 0;
  void (*release)(BufHolder*) = nullptr;
};

class BufRef {
 public:
  BufRef() = default;
  // Takes a new reference on `h` (which may be null: an empty ref).
  explicit BufRef(BufHolder* h) : h_(h) {
    if (h_) ++h_->refs;
  }
  BufRef(const BufRef& o) : BufRef(o.h_) {}
  BufRef(BufRef&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  BufRef& operator=(BufRef o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  ~BufRef() { reset(); }

  void reset() {
    if (h_ && --h_->refs == 0 && h_->release) h_->release(h_);
    h_ = nullptr;
  }
  explicit operator bool() const { return h_ != nullptr; }
  BufHolder* holder() const { return h_; }

 private:
  BufHolder* h_ = nullptr;
};

// A heap block with its holder in front: for copies the stack has to make anyway
// (reassembled IPv4 datagrams, the fault injector's delayed frames, tests).
class HeapBuf {
 public:
  static BufRef make(std::size_t len, std::uint8_t** data) {
    void* mem = std::malloc(sizeof(BufHolder) + (len ? len : 1));
    if (!mem) throw std::bad_alloc();
    auto* h = new (mem) BufHolder{0, [](BufHolder* p) { std::free(p); }};
    *data = reinterpret_cast<std::uint8_t*>(mem) + sizeof(BufHolder);
    return BufRef(h);
  }
};

}  // namespace esock
