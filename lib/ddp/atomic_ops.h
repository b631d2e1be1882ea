// The Responder's side of RFC 7306's atomic operations (section 5.1): the arithmetic, and
// its application to the 8 octets of a registered region. No I/O; the Qp calls apply() when
// it generates the Atomic Response (section 5.4 rule 3: only after the request was
// delivered, so in the order of the requests, section 5.4 rule 8).
//
// Memory-ordering contract (docs/sockets.md, "Atomics"): the read-modify-write is one
// sequentially consistent 64-bit atomic operation on the target, in the byte order of the
// target's memory (section 5.1.1: the host's), so it is atomic against other atomics of this
// process's queue pairs and against local threads that use atomic instructions on the same
// 8 octets (std::atomic_ref<uint64_t>, __atomic_*). Plain local stores and non-atomic RDMA
// Writes to the same octets are not ordered with it (RFC 7306 section 5.3 makes that optional).
#pragma once

#include <cstdint>

#include "ddp/wire_ext.h"

namespace esock::ddp {

// FetchAdd with field boundaries (section 5.1.1): a 1 in add_mask marks the most
// significant bit of a field, and the carry out of that bit is dropped, so each field adds
// on its own; a zero mask is one 64-bit add. Equal to the RFC's bit-serial pseudocode
// (tests/unit/ddp/atomic_ops_test.cc compares them).
constexpr std::uint64_t masked_add(std::uint64_t orig, std::uint64_t add, std::uint64_t mask) {
  // Without each field's top bit the fields cannot carry into each other; the top bit is
  // then the sum of its two bits and the carry that came into it.
  const std::uint64_t low = (orig & ~mask) + (add & ~mask);
  return low ^ ((orig ^ add) & mask);
}

// CmpSwap with masks (section 5.1.2): the swap happens when the bits the compare mask
// selects are equal, and writes only the bits the swap mask selects. nullopt-free: returns
// the value the target holds afterwards.
constexpr std::uint64_t masked_cmp_swap(std::uint64_t orig, const AtomicRequest& r) {
  if (((r.compare ^ orig) & r.compare_mask) != 0) return orig;
  return (orig & ~r.add_swap_mask) | (r.add_swap & r.add_swap_mask);
}

// The value the operation leaves at a target that held `orig`. Only for known operations.
constexpr std::uint64_t atomic_result(std::uint64_t orig, const AtomicRequest& r) {
  return r.op == static_cast<std::uint8_t>(AtomicOp::fetch_add)
             ? masked_add(orig, r.add_swap, r.add_swap_mask)
             : masked_cmp_swap(orig, r);
}

// Applies `r` to the 8-octet-aligned target and returns the Original Remote Data Value.
std::uint64_t apply_atomic(std::uint64_t* target, const AtomicRequest& r);

}  // namespace esock::ddp
