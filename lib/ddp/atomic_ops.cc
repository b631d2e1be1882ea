#include "ddp/atomic_ops.h"

namespace esock::ddp {

std::uint64_t apply_atomic(std::uint64_t* target, const AtomicRequest& r) {
  // A compare-and-exchange loop gives every masked variant one atomic step; the plain
  // 64-bit add (the common case) is one locked add.
  if (r.op == static_cast<std::uint8_t>(AtomicOp::fetch_add) && r.add_swap_mask == 0)
    return __atomic_fetch_add(target, r.add_swap, __ATOMIC_SEQ_CST);
  std::uint64_t orig = __atomic_load_n(target, __ATOMIC_SEQ_CST);
  for (;;) {
    const std::uint64_t next = atomic_result(orig, r);
    if (next == orig) return orig;  // a failed compare writes nothing (section 5.1.2)
    if (__atomic_compare_exchange_n(target, &orig, next, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
      return orig;
  }
}

}  // namespace esock::ddp
