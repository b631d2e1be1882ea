#include "esock/ddpmode/read_async.h"

#include <algorithm>
#include <cstdint>

#include "esock/ddpmode/zcopy_pages.h"
#include "esock/process/page_flip.h"
#include "esock/process/page_guard.h"
#include "esock/process/user_memory.h"

namespace esock::sockets {

namespace {

constexpr std::size_t max_async_read = std::size_t{1} << 30;

}  // namespace

std::size_t start_async_read(Socket& s, DdpRuntime& rt, mut_bytes dst, std::size_t min_len,
                             std::size_t need) {
  if (s.conn->async_read) return 0;  // (the stream pulls one source at a time)
  estp::Stream& st = *s.conn->stream;
  const std::uintptr_t pg = page_size();
  // The unaligned head of a buffer shares its page with other data, which a no-access guard
  // would stop: such a read pulls as ESOCK_ZCOPY_SYNC does (a short read of the head alone
  // would make every later read into the same buffer short too).
  if (reinterpret_cast<std::uintptr_t>(dst.data()) % pg != 0) return 0;
  // Whole pages only; the rest of the buffer is left to the next read (a short read, as a
  // stream may return).
  const std::size_t n =
      std::min({dst.size(), st.pull_available(), max_async_read}) & ~std::size_t{pg - 1};
  if (n == 0 || n < min_len || n < need) return 0;
  std::uint8_t* p = dst.data();
  if (on_own_stack(p, n) || page_guard::overlaps(p, n)) return 0;
  // Writable now (a guard's release makes the pages writable), and memory the landing may
  // replace page by page.
  if (!user_memory_ok(p, n, true) || !page_flip::private_anonymous(p, n)) return 0;
  // The pages move out first (the staging pages keep their permissions); the emptied range
  // is then guarded.
  bool own = false;
  void* staging = page_flip::staging(p, n, &own);
  if (staging == nullptr) return 0;
  const int guard = page_guard::protect(p, n, page_guard::Access::none);
  if (guard < 0 || st.pull({static_cast<std::uint8_t*>(staging), n}) != 0) {
    page_flip::discard(staging, p, n, own);
    page_guard::release(guard);
    return 0;
  }
  s.conn->async_read =
      Conn::AsyncRead{.guard = guard, .dst = p, .staging = staging, .len = n, .own = own};
  ++s.conn->async_reads_total;
  rt.mark_due(s);  // its landing is watched every round
  s.conn->async_read_octets += n;
  // The wait hook: a touch of the pages wakes the progress thread, which lands them.
  rt.drain_async_writes_at_exit();
  return n;
}

}  // namespace esock::sockets
