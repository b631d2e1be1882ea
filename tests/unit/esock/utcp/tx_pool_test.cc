// utcp::TxPool (tx_pool.h): segments are done when their last pin is back, and what the
// owner hands it to keep (a copy-on-write's copy) lives until the orphaned pool goes, after
// the last pin (ASan reports the copy leaked, or read after free, if not).
#include "esock/utcp/tx_pool.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>

namespace esock::utcp {
namespace {

TEST(TxPool, KeptMemoryOutlivesTheOwnerUntilTheLastPin) {
  TxPool* pool = TxPool::create();
  auto copy = std::make_unique<std::uint8_t[]>(4096);
  std::memset(copy.get(), 0x5a, 4096);
  const std::uint8_t* seen = copy.get();
  BufRef pin = pool->pin(1);  // a frame still points into the copy
  pool->done(2);
  EXPECT_EQ(pool->released_through(), 0u);
  pool->keep(std::move(copy));
  pool->orphan();  // the endpoint is gone; the pool is not
  EXPECT_EQ(seen[4095], 0x5a) << "still readable while pinned";
  pin = BufRef{};  // the last pin: the pool and the copy go (ASan checks the free)
}

TEST(TxPool, AnOrphanWithNothingOutGoesAtOnceWithWhatItKept) {
  TxPool* pool = TxPool::create();
  pool->keep(std::make_unique<std::uint8_t[]>(64));
  pool->orphan();  // nothing out: freed now (LeakSanitizer would report the 64 octets)
}

}  // namespace
}  // namespace esock::utcp
