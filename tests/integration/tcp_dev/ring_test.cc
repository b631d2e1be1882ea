// DpdkDevice over two net_ring ports in one process: A's tx ring is B's rx ring, and the
// mbufs themselves travel (no copy), which makes buffer ownership observable.
#include <gtest/gtest.h>

#include <array>
#include <filesystem>

#include "eal_env.h"
#include "tcp/dpdk/dpdk_device.h"

namespace esock::tcp::dpdk {
namespace {

using test::CountingHolder;
using test::eal;
using test::test_frame;

struct RingRig {
  std::unique_ptr<DpdkDevice> a, b;
  explicit RingRig(const char* name, DpdkDeviceConfig ca = {}, DpdkDeviceConfig cb = {}) {
    (void)eal();
    RingPair p;
    std::string err;
    if (!make_ring_pair(name, 1024, &p, &err)) {
      ADD_FAILURE() << err;
      return;
    }
    a = DpdkDevice::open(static_cast<std::uint16_t>(p.a), ca, &err);
    EXPECT_TRUE(a) << err;
    b = DpdkDevice::open(static_cast<std::uint16_t>(p.b), cb, &err);
    EXPECT_TRUE(b) << err;
  }
  ~RingRig() {
    // B first: it may hold A's mbufs (net_ring moves pointers); A's pool must outlive them.
    b.reset();
    a.reset();
  }
};

TEST(DpdkRing, EalRuntimeDirUsesOurPrefix) {
  EXPECT_NE(eal().file_prefix().find("esock-"), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(eal().runtime_dir())) << eal().runtime_dir();
  EXPECT_NE(eal().runtime_dir().find(eal().file_prefix()), std::string::npos);
  std::string err;
  EXPECT_FALSE(Eal::init({}, &err));
  EXPECT_NE(err.find("already"), std::string::npos);
}

TEST(DpdkRing, FramesCrossBothWaysByteForByte) {
  DpdkDeviceConfig c;
  c.attach = Attach::always;
  RingRig r("rx1", c, c);
  ASSERT_TRUE(r.a && r.b);
  EXPECT_TRUE(r.a->link_up());
  std::array<RxFrame, 32> rx;
  std::uint32_t got = 0;
  for (std::uint32_t i = 0; i < 2000; ++i) {
    const auto f = test_frame(i, 60 + (i * 37) % 1455);
    TxFrame t;
    t.head = bytes_view(f);
    Device& from = (i % 2) ? *r.b : *r.a;
    Device& to = (i % 2) ? *r.a : *r.b;
    ASSERT_TRUE(from.tx(t));
    from.tx_flush();
    const std::size_t n = to.rx_burst(rx);
    ASSERT_EQ(n, 1u);
    EXPECT_TRUE(std::equal(f.begin(), f.end(), rx[0].data.begin(), rx[0].data.end())) << i;
    rx[0] = RxFrame{};
    ++got;
  }
  EXPECT_EQ(got, 2000u);
  EXPECT_EQ(r.a->stats().tx_frames, 1000u);
  EXPECT_EQ(r.b->stats().rx_frames, 1000u);
}

TEST(DpdkRing, RxRefsHoldMbufsUntilReleased) {
  RingRig r("rx2");
  ASSERT_TRUE(r.a && r.b);
  const unsigned before = r.a->pool_available();
  std::vector<std::vector<std::uint8_t>> sent;
  for (std::uint32_t i = 0; i < 20; ++i) {
    sent.push_back(test_frame(i, 200));
    TxFrame t;
    t.head = sent.back();
    ASSERT_TRUE(r.a->tx(t));
  }
  r.a->tx_flush();
  std::array<RxFrame, 32> rx;
  ASSERT_EQ(r.b->rx_burst(rx), 20u);
  EXPECT_EQ(r.b->dpdk_stats().rx_copied, 0u) << "single-segment mbufs are handed up as is";
  // The mbufs came from A's pool (ring ports pass pointers) and are still out.
  EXPECT_EQ(r.a->pool_available(), before - 20);
  std::vector<RxFrame> kept(rx.begin(), rx.begin() + 5);  // a second ref to five of them
  for (auto& f : rx) f = RxFrame{};
  EXPECT_EQ(r.a->pool_available(), before - 5);
  for (std::size_t i = 0; i < kept.size(); ++i)
    EXPECT_TRUE(std::equal(sent[i].begin(), sent[i].end(), kept[i].data.begin()));
  kept.clear();
  EXPECT_EQ(r.a->pool_available(), before);
}

TEST(DpdkRing, AttachedPayloadReleasedExactlyOnceAfterFrameFreed) {
  DpdkDeviceConfig c;
  c.attach = Attach::always;
  c.copy_below = 256;
  RingRig r("rx3", c, c);
  ASSERT_TRUE(r.a && r.b);
  ASSERT_TRUE(r.a->attaches());
  CountingHolder big, small;
  const auto f = test_frame(77, 54 + 1000 + 100);
  {
    // head 54 octets, a 1000-octet piece (attached), a 100-octet piece (copied).
    std::array<TxPiece, 2> pieces{TxPiece{bytes_view(f).subspan(54, 1000), BufRef(&big)},
                                  TxPiece{bytes_view(f).subspan(1054), BufRef(&small)}};
    TxFrame t{bytes_view(f).first(54), pieces, {}};
    ASSERT_TRUE(r.a->tx(t));
    EXPECT_EQ(big.refs, 2u) << "the device pins the attached piece";
    EXPECT_EQ(small.refs, 1u) << "a copied piece is not pinned";
  }
  EXPECT_EQ(small.released, 1);
  EXPECT_EQ(big.refs, 1u);
  EXPECT_EQ(r.a->dpdk_stats().tx_attached, 1u);
  r.a->tx_flush();
  EXPECT_EQ(big.released, 0) << "still in the ring";
  std::array<RxFrame, 4> rx;
  ASSERT_EQ(r.b->rx_burst(rx), 1u);
  // A chain arrives: B copies it into one buffer and frees the mbufs, which frees the
  // external buffer and unpins the piece.
  EXPECT_EQ(r.b->dpdk_stats().rx_copied, 1u);
  EXPECT_EQ(big.released, 1);
  EXPECT_EQ(big.refs, 0u);
  EXPECT_TRUE(std::equal(f.begin(), f.end(), rx[0].data.begin(), rx[0].data.end()));
  rx = {};
  EXPECT_EQ(big.released, 1) << "exactly once";
}

TEST(DpdkRing, PoolExhaustionRefusesAndLeavesRefsAlone) {
  DpdkDeviceConfig c;
  c.attach = Attach::always;
  c.pool_mbufs = 63;
  c.tx_batch = 1024;  // never flush on our own: let the pool run dry
  RingRig r("rx4", c, {});
  ASSERT_TRUE(r.a && r.b);
  CountingHolder h;
  const auto f = test_frame(1, 54 + 600);
  std::array<TxPiece, 1> piece{TxPiece{bytes_view(f).subspan(54), BufRef(&h)}};
  TxFrame t{bytes_view(f).first(54), piece, {}};
  int accepted = 0;
  while (r.a->tx(t)) ++accepted;
  EXPECT_GT(accepted, 0);
  EXPECT_EQ(r.a->dpdk_stats().tx_no_mbuf, 1u);
  EXPECT_EQ(h.refs, 1u + static_cast<unsigned>(accepted)) << "only accepted frames pin";
  r.a->tx_flush();
  std::array<RxFrame, 64> rx;
  std::size_t got = 0;
  for (std::size_t n; (n = r.b->rx_burst(rx)) > 0;) {
    got += n;
    for (auto& x : rx) x = RxFrame{};
  }
  EXPECT_EQ(got, static_cast<std::size_t>(accepted));
  EXPECT_EQ(h.refs, 1u);
  piece[0].ref = BufRef();
  EXPECT_EQ(h.released, 1);
}

TEST(DpdkRing, RefusesOffloadsThePortDoesNotOffer) {
  RingRig r("rx5");
  ASSERT_TRUE(r.a && r.b);
  const DeviceCaps caps = r.a->caps();
  if (caps.tx_l4_csum) GTEST_SKIP() << "this PMD offers l4 checksum offload";
  const auto f = test_frame(1, 100);
  TxFrame t;
  t.head = f;
  t.offload.l4_csum = true;
  EXPECT_FALSE(r.a->tx(t));
  EXPECT_EQ(r.a->dpdk_stats().tx_invalid, 1u);
  EXPECT_GE(caps.mtu, 1500);
}

}  // namespace
}  // namespace esock::tcp::dpdk
