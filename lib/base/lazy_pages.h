// Memory a connection may need but mostly does not touch: receive and send buffers sized
// for bulk transfers that an idle connection (a keep-alive client, one of 10,000) leaves
// empty. An anonymous private mapping costs no RAM until a page is written, where a
// zero-filled vector commits every page at once (2 MiB per ESTP connection: the set-up of
// many connections spent most of its time zeroing them). munmap on destruction gives the
// pages back to the system at once, which malloc does not promise for its arenas.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <utility>

namespace esock {

class LazyPages {
 public:
  LazyPages() = default;
  // Zero-filled pages on first touch; null data() when the mapping failed (ENOMEM).
  explicit LazyPages(std::size_t len) {
    if (len == 0) return;
    void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return;
    p_ = static_cast<std::uint8_t*>(p);
    len_ = len;
  }
  LazyPages(LazyPages&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), len_(std::exchange(o.len_, 0)) {}
  LazyPages& operator=(LazyPages&& o) noexcept {
    if (this != &o) {
      unmap();
      p_ = std::exchange(o.p_, nullptr);
      len_ = std::exchange(o.len_, 0);
    }
    return *this;
  }
  LazyPages(const LazyPages&) = delete;
  LazyPages& operator=(const LazyPages&) = delete;
  ~LazyPages() { unmap(); }

  std::uint8_t* data() const { return p_; }
  std::size_t size() const { return len_; }
  bool empty() const { return len_ == 0; }

 private:
  void unmap() {
    if (p_ != nullptr) ::munmap(p_, len_);
    p_ = nullptr;
    len_ = 0;
  }
  std::uint8_t* p_ = nullptr;
  std::size_t len_ = 0;
};

}  // namespace esock
