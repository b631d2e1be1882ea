// The send buffer's copy blocks are sized by what is buffered: a connection that exchanges
// small messages keeps a small block, a bulk sender reaches full ones.
#include "tcp/engine/send_buffer.h"

#include <gtest/gtest.h>

#include <vector>

namespace esock::tcp {
namespace {

TEST(SendBuffer, ASmallMessageTakesASmallBlock) {
  SendBuffer b(1 << 20);
  const std::vector<std::uint8_t> msg(64, 'x');
  ASSERT_EQ(b.append_copy(msg), 64u);
  EXPECT_EQ(b.reserved_bytes(), 4096u);
  b.consume(64);
  // The block is reused while it has room: 63 more messages fit without another.
  for (int i = 0; i < 63; ++i) ASSERT_EQ(b.append_copy(msg), 64u);
  EXPECT_EQ(b.reserved_bytes(), 4096u);
}

TEST(SendBuffer, ABulkSenderReachesFullBlocksAndEveryOctetComesBackInOrder) {
  SendBuffer b(1 << 20);
  std::vector<std::uint8_t> data(300 * 1024);
  for (std::size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<std::uint8_t>(i * 7 + (i >> 9));
  for (std::size_t at = 0; at < data.size(); at += 1000)
    ASSERT_EQ(
        b.append_copy(bytes_view(data).subspan(at, std::min<std::size_t>(1000, data.size() - at))),
        std::min<std::size_t>(1000, data.size() - at));
  EXPECT_EQ(b.reserved_bytes(), 64u * 1024);
  std::vector<std::uint8_t> back;
  TxPiece pieces[64];
  for (std::size_t off = 0; off < data.size();) {
    std::size_t n = 0;
    const std::size_t got = b.gather(off, data.size() - off, pieces, &n);
    ASSERT_GT(got, 0u);
    for (std::size_t i = 0; i < n; ++i)
      back.insert(back.end(), pieces[i].data.begin(), pieces[i].data.end());
    off += got;
  }
  EXPECT_EQ(back, data);
}

}  // namespace
}  // namespace esock::tcp
