// Memory regions and STags (RFC 5040 and RFC 5041 glossaries: STag, Tagged Offset): the table a
// Data Sink consults before placing a tagged segment and a Data Source before answering a
// Read Request. Tagged Offsets are virtual addresses, as Linux siw and rping use them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace esock::ddp {

enum Access : std::uint32_t {
  access_local_write = 1,
  access_remote_read = 2,
  access_remote_write = 4,
  access_remote_atomic = 8,  // the target of a peer's RFC 7306 Atomic Request
};

// 24-bit index + 8-bit key (the verbs convention siw follows); 0 is never a valid STag.
using stag_t = std::uint32_t;

class StagTable {
 public:
  // Key bytes from the kernel's random source (getrandom, 64 at a time): a peer that saw
  // earlier STags cannot guess the next one of a reused index, as with an RNIC's (siw's)
  // random keys. Sequential keys repeated after 256 registrations of an index.
  StagTable();
  // Key bytes from a fixed seed instead: for deterministic tests and fuzzers.
  explicit StagTable(std::uint64_t key_seed);

  std::uint32_t alloc_pd();
  // 0 on error (len 0 or above 4 GiB - 1, address range wrapping, bad access bits, no
  // pd from alloc_pd, table full). The key byte changes on every registration of an index
  // (never to the previous one), so the STag of the region just before never matches the
  // new one; an older one matches again with probability 1/255 per reuse (the price of
  // unpredictable keys, as with an RNIC's), and freed indices are reused oldest first so
  // an index comes back as rarely as the table allows.
  stag_t register_mr(std::uint32_t pd, void* addr, std::size_t len, std::uint32_t access);
  int deregister(stag_t);  // 0 or EINVAL
  // Invalidation: the STag stays registered but no longer validates until deregistered.
  // 0, EINVAL for an unknown or already invalid STag.
  int invalidate(stag_t);  // local (the owner's own request)
  // By the peer (RFC 5040 section 4.1, Send with Invalidate): also EACCES when pd does not
  // match, or when the region has no remote access right. A local-only STag (a receive
  // buffer's) was never the peer's to use, so it is not the peer's to revoke either
  // (RFC 5042 section 5: a peer reaches only what was advertised to it).
  int invalidate(stag_t, std::uint32_t pd);
  // Copy-on-write of a source (AZ-SDP, docs/sockets.md "Zero-copy modes"): the region's
  // octets are read from `mem` from now on (a copy of them, as long as the region), at the
  // same Tagged Offsets, so an advertised STag/TO the peer reads later is answered from the
  // copy. 0, or EINVAL for an unknown STag or a null mem.
  int move(stag_t, void* mem);

  // Checks in this order: valid, protection domain, access rights, bounds (overflow-safe);
  // returns the first failure or ok and the address of octet `to`. to_wrap is reported
  // when to + len passes 2^64 (RFC 5041 "TO wrap"), bounds for any other range outside
  // the region.
  enum class Check : std::uint8_t { ok, invalid_stag, wrong_pd, access, bounds, to_wrap };
  Check check(stag_t, std::uint32_t pd, std::uint32_t access, std::uint64_t to, std::uint32_t len,
              std::uint8_t** where) const;

  std::size_t live_regions() const;

 private:
  struct Region {
    std::uint8_t* base = nullptr;  // where octet `to_base` is (move() changes it)
    std::uint64_t to_base = 0;  // the Tagged Offset of the first octet: its address at registration
    std::uint64_t len = 0;
    std::uint32_t pd = 0;
    std::uint32_t access = 0;
    std::uint8_t key = 0;
    bool registered = false;
    bool valid = false;
  };
  const Region* find(stag_t s) const;
  Region* find(stag_t s);
  std::uint8_t next_key(std::uint8_t previous);

  std::vector<Region> regions_;     // index = STag >> 8, index 0 unused
  std::deque<std::uint32_t> free_;  // recycled indices, oldest first (FIFO: see register_mr)
  std::uint32_t next_pd_ = 1;
  bool seeded_ = false;  // key bytes from seed_ (splitmix64), else getrandom
  std::uint64_t seed_ = 0;
  std::uint8_t keys_[64] = {};  // getrandom's bytes not used yet ...
  std::size_t keys_left_ = 0;   // ... how many
};

}  // namespace esock::ddp
