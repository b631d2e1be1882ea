#include "ddp/stag.h"

#include <sys/random.h>

#include <cerrno>

namespace esock::ddp {
namespace {
constexpr std::uint32_t max_index = (1u << 24) - 1;
constexpr std::uint32_t all_access =
    access_local_write | access_remote_read | access_remote_write | access_remote_atomic;
}  // namespace

StagTable::StagTable() = default;

StagTable::StagTable(std::uint64_t key_seed) : seeded_(true), seed_(key_seed) {}

std::uint8_t StagTable::next_key(std::uint8_t previous) {
  for (;;) {
    std::uint8_t k;
    if (seeded_) {
      // splitmix64 (Steele, Lea, Flood 2014): deterministic, well mixed.
      std::uint64_t z = (seed_ += 0x9e3779b97f4a7c15u);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
      k = static_cast<std::uint8_t>(z ^ (z >> 31));
    } else {
      if (keys_left_ == 0) {
        const ssize_t n = ::getrandom(keys_, sizeof keys_, 0);
        // Without the kernel's source (never expected) the keys still change every time.
        keys_left_ = n > 0 ? static_cast<std::size_t>(n) : 0;
        if (keys_left_ == 0) return static_cast<std::uint8_t>(previous + 1);
      }
      k = keys_[--keys_left_];
    }
    if (k != previous) return k;
  }
}

std::uint32_t StagTable::alloc_pd() {
  return next_pd_++;
}

stag_t StagTable::register_mr(std::uint32_t pd, void* addr, std::size_t len, std::uint32_t access) {
  if (pd == 0 || pd >= next_pd_ || addr == nullptr || len == 0 || len > UINT32_MAX) return 0;
  if ((access & ~all_access) != 0) return 0;
  const auto base = reinterpret_cast<std::uintptr_t>(addr);
  if (base > UINTPTR_MAX - len) return 0;         // region would wrap the address space
  if (regions_.empty()) regions_.emplace_back();  // index 0 stays unused: STag 0 is invalid
  std::uint32_t idx;
  if (!free_.empty()) {
    idx = free_.front();
    free_.pop_front();
  } else {
    if (regions_.size() > max_index) return 0;
    idx = static_cast<std::uint32_t>(regions_.size());
    regions_.emplace_back();
  }
  Region& r = regions_[idx];
  r.base = static_cast<std::uint8_t*>(addr);
  r.to_base = base;
  r.len = len;
  r.pd = pd;
  r.access = access;
  r.key = next_key(r.key);
  r.registered = true;
  r.valid = true;
  return (idx << 8) | r.key;
}

const StagTable::Region* StagTable::find(stag_t s) const {
  const std::uint32_t idx = s >> 8;
  if (idx == 0 || idx >= regions_.size()) return nullptr;
  const Region& r = regions_[idx];
  if (!r.registered || r.key != (s & 0xff)) return nullptr;
  return &r;
}

StagTable::Region* StagTable::find(stag_t s) {
  return const_cast<Region*>(static_cast<const StagTable*>(this)->find(s));
}

int StagTable::deregister(stag_t s) {
  Region* r = find(s);
  if (r == nullptr) return EINVAL;
  r->registered = false;
  r->valid = false;
  free_.push_back(s >> 8);
  return 0;
}

int StagTable::move(stag_t s, void* mem) {
  Region* r = find(s);
  if (r == nullptr || mem == nullptr) return EINVAL;
  r->base = static_cast<std::uint8_t*>(mem);
  return 0;
}

int StagTable::invalidate(stag_t s) {
  Region* r = find(s);
  if (r == nullptr || !r->valid) return EINVAL;
  r->valid = false;
  return 0;
}

int StagTable::invalidate(stag_t s, std::uint32_t pd) {
  Region* r = find(s);
  if (r == nullptr || !r->valid) return EINVAL;
  if (r->pd != pd) return EACCES;
  if ((r->access & (access_remote_read | access_remote_write | access_remote_atomic)) == 0)
    return EACCES;
  r->valid = false;
  return 0;
}

StagTable::Check StagTable::check(stag_t s, std::uint32_t pd, std::uint32_t access,
                                  std::uint64_t to, std::uint32_t len, std::uint8_t** where) const {
  const Region* r = find(s);
  if (r == nullptr || !r->valid) return Check::invalid_stag;
  if (r->pd != pd) return Check::wrong_pd;
  if ((r->access & access) != access) return Check::access;
  if (to > UINT64_MAX - len) return Check::to_wrap;
  // Overflow-safe: off = to - to_base only once to >= to_base; then off + len <= r->len.
  if (to < r->to_base) return Check::bounds;
  const std::uint64_t off = to - r->to_base;
  if (len > r->len || off > r->len - len) return Check::bounds;
  if (where != nullptr) *where = r->base + off;
  return Check::ok;
}

std::size_t StagTable::live_regions() const {
  std::size_t n = 0;
  for (const Region& r : regions_) n += r.registered ? 1 : 0;
  return n;
}

}  // namespace esock::ddp
