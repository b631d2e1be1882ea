#include "tcp/dev/mem_link.h"

#include <gtest/gtest.h>

#include <array>

#include "test_frames.h"

namespace esock::tcp {
namespace {

using test::CountingHolder;
using test::to_vec;
using test::TxOf;

TEST(MemLink, DeliversOnFlushBothWays) {
  MemLink link;
  auto f1 = test::tcp_frame(1, 100);
  auto f2 = test::tcp_frame(2, 0);
  ASSERT_TRUE(link.a().tx(TxOf(f1).frame));
  std::array<RxFrame, 4> rx;
  EXPECT_EQ(link.b().rx_burst(rx), 0u) << "nothing arrives before tx_flush()";
  EXPECT_EQ(link.pending_tx_a(), 1u);
  link.a().tx_flush();
  ASSERT_EQ(link.b().rx_burst(rx), 1u);
  EXPECT_EQ(to_vec(rx[0].data), f1);
  EXPECT_TRUE(rx[0].ref);
  EXPECT_EQ(rx[0].csum, 0);

  ASSERT_TRUE(link.b().tx(TxOf(f2).frame));
  link.b().tx_flush();
  ASSERT_EQ(link.a().rx_burst(rx), 1u);
  EXPECT_EQ(to_vec(rx[0].data), f2);
  EXPECT_EQ(link.a().stats().rx_frames, 1u);
  EXPECT_EQ(link.a().stats().tx_frames, 1u);
  EXPECT_EQ(link.b().stats().rx_frames, 1u);
}

TEST(MemLink, CopiesAndReleasesCallerRefsImmediately) {
  MemLink link;
  CountingHolder h;
  auto bytes = test::tcp_frame(9, 500);
  {
    TxOf t(bytes, BufRef(&h));
    ASSERT_TRUE(link.a().tx(t.frame));
    EXPECT_EQ(h.refs, 1u) << "the link must not keep the caller's ref";
  }
  EXPECT_EQ(h.released, 1);
  auto expect = bytes;
  bytes.assign(bytes.size(), 0xee);  // the caller reuses its buffer
  link.a().tx_flush();
  std::array<RxFrame, 1> rx;
  ASSERT_EQ(link.b().rx_burst(rx), 1u);
  EXPECT_EQ(to_vec(rx[0].data), expect);
}

TEST(MemLink, PreservesOrderAndSplitsBursts) {
  MemLink link;
  for (std::uint32_t i = 0; i < 10; ++i)
    ASSERT_TRUE(link.a().tx(TxOf(test::tcp_frame(i, 8)).frame));
  link.a().tx_flush();
  std::array<RxFrame, 4> rx;
  std::uint32_t next = 0;
  for (std::size_t n; (n = link.b().rx_burst(rx)) > 0;)
    for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(load_be32(rx[i].data.data() + 38), next++);
  EXPECT_EQ(next, 10u);
}

TEST(MemLink, BoundedQueuesCountDrops) {
  MemLinkConfig cfg;
  cfg.tx_queue = 3;
  cfg.rx_queue = 2;
  MemLink link(cfg);
  auto f = test::tcp_frame(1, 10);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(link.a().tx(TxOf(f).frame));
  EXPECT_FALSE(link.a().tx(TxOf(f).frame)) << "tx queue full";
  EXPECT_EQ(link.a().stats().tx_dropped, 1u);
  EXPECT_EQ(link.a().stats().tx_frames, 3u);
  link.a().tx_flush();
  EXPECT_EQ(link.pending_rx_b(), 2u);
  EXPECT_EQ(link.link_stats_b().rx_overflow, 1u);
}

TEST(MemLink, RefusesOversizeAndTooManyPiecesAndUnofferedOffload) {
  MemLinkConfig cfg;
  cfg.caps.mtu = 100;
  cfg.caps.max_tx_pieces = 1;
  MemLink link(cfg);
  EXPECT_TRUE(link.a().tx(TxOf(test::tcp_frame(1, 100 - 40)).frame));  // exactly 14 + mtu
  EXPECT_FALSE(link.a().tx(TxOf(test::tcp_frame(1, 100 - 39)).frame));
  auto f = test::tcp_frame(1, 20);
  std::array<TxPiece, 2> pieces{TxPiece{bytes_view(f).subspan(54, 10), {}},
                                TxPiece{bytes_view(f).subspan(64), {}}};
  TxFrame two{bytes_view(f).first(54), pieces, {}};
  EXPECT_FALSE(link.a().tx(two));
  TxOf off(f);
  off.frame.offload.l4_csum = true;
  EXPECT_FALSE(link.a().tx(off.frame)) << "caps() does not offer l4 checksum offload";
  EXPECT_EQ(link.link_stats_a().tx_invalid, 3u);
  EXPECT_FALSE(link.b().caps().tso);
}

TEST(MemLink, CompletesOffloadedChecksumsWhenOffered) {
  MemLinkConfig cfg;
  cfg.caps.tx_ip_csum = cfg.caps.tx_l4_csum = true;
  MemLink link(cfg);
  auto off = test::tcp_frame(5, 77, 3, true);
  TxOf t(off);
  t.frame.offload.ip_csum = t.frame.offload.l4_csum = true;
  t.frame.offload.l4_len = 20;
  ASSERT_TRUE(link.a().tx(t.frame));
  link.a().tx_flush();
  std::array<RxFrame, 1> rx;
  ASSERT_EQ(link.b().rx_burst(rx), 1u);
  EXPECT_EQ(to_vec(rx[0].data), test::tcp_frame(5, 77, 3, false));
}

TEST(MemLink, MacsAreConfigurable) {
  MemLinkConfig cfg;
  cfg.mac_a = MacAddr{{2, 1, 2, 3, 4, 5}};
  MemLink link(cfg);
  EXPECT_EQ(link.a().mac(), cfg.mac_a);
  EXPECT_EQ(link.b().mac(), MemLinkConfig{}.mac_b);
}

}  // namespace
}  // namespace esock::tcp
