#include "tcp/dev/fault_injector.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <deque>

#include "tcp/dev/mem_link.h"
#include "test_frames.h"

namespace esock::tcp {
namespace {

using test::CountingHolder;
using test::to_vec;
using test::TxOf;

std::uint32_t seq_of(bytes_view f) {
  return load_be32(f.data() + 38);
}

// Drains b into a list of frame copies.
std::vector<std::vector<std::uint8_t>> drain(Device& d) {
  std::vector<std::vector<std::uint8_t>> out;
  std::array<RxFrame, 16> rx;
  for (std::size_t n; (n = d.rx_burst(rx)) > 0;)
    for (std::size_t i = 0; i < n; ++i) out.push_back(to_vec(rx[i].data));
  return out;
}

std::vector<std::uint32_t> seqs(const std::vector<std::vector<std::uint8_t>>& frames) {
  std::vector<std::uint32_t> s;
  for (const auto& f : frames) s.push_back(seq_of(f));
  return s;
}

FaultFilter only_index(std::uint64_t k) {
  return [k](const FaultFrameInfo& f) { return f.index == k; };
}

struct TxRig {
  ManualClock clock;
  MemLink link;
  FaultInjector fi;
  explicit TxRig(FaultConfig cfg) : fi(link.a(), clock, std::move(cfg)) {}
  void send(std::uint32_t seq, std::size_t len = 20) {
    ASSERT_TRUE(fi.tx(TxOf(test::tcp_frame(seq, len)).frame));
    fi.tx_flush();
  }
  std::vector<std::uint32_t> got() { return seqs(drain(link.b())); }
};

// Runs n frames through a tx injector and returns what arrived, in order.
std::vector<std::vector<std::uint8_t>> run_stats(const FaultConfig& cfg, int n, FaultCounters* c) {
  TxRig rig(cfg);
  std::vector<std::vector<std::uint8_t>> all;
  for (int i = 0; i < n; ++i) {
    rig.send(static_cast<std::uint32_t>(i), 100);
    rig.clock.advance(std::chrono::microseconds(1));
    for (auto& f : drain(rig.link.b())) all.push_back(std::move(f));
  }
  rig.fi.release_all();
  rig.fi.tx_flush();
  for (auto& f : drain(rig.link.b())) all.push_back(std::move(f));
  *c = rig.fi.tx_counters();
  return all;
}

void expect_near_p(std::uint64_t count, std::uint64_t n, double p) {
  const double sd = std::sqrt(static_cast<double>(n) * p * (1 - p));
  EXPECT_NEAR(static_cast<double>(count), static_cast<double>(n) * p, 5 * sd + 1)
      << "p=" << p << " n=" << n;
}

FaultConfig mixed(std::uint64_t seed) {
  FaultConfig cfg;
  cfg.seed = seed;
  cfg.tx.loss = 0.10;
  cfg.tx.duplicate = 0.05;
  cfg.tx.corrupt = 0.02;
  cfg.tx.reorder = 0.03;
  cfg.tx.reorder_frames = 2;
  return cfg;
}

TEST(FaultInjector, StatisticsMatchProbabilities) {
  constexpr int n = 20000;
  FaultCounters c;
  auto got = run_stats(mixed(42), n, &c);
  EXPECT_EQ(c.seen, std::uint64_t{n});
  EXPECT_EQ(c.eligible, std::uint64_t{n});
  expect_near_p(c.lost, n, 0.10);
  // Faults after loss apply to the frames that survived it.
  const std::uint64_t kept = n - c.lost;
  expect_near_p(c.duplicated, kept, 0.05);
  expect_near_p(c.corrupted, kept, 0.02);
  expect_near_p(c.reordered, kept, 0.03);
  EXPECT_EQ(c.corrupt_skipped, 0u);
  EXPECT_EQ(got.size(), kept + c.duplicated);
  // Every corrupted frame differs from the original in exactly one payload bit.
  std::uint64_t damaged = 0;
  for (const auto& f : got) {
    const auto orig = test::tcp_frame(seq_of(f), 100);
    if (f != orig) ++damaged;
  }
  EXPECT_GE(damaged, c.corrupted);  // a corrupted frame may also be duplicated
  EXPECT_LE(damaged, 2 * c.corrupted);
}

TEST(FaultInjector, DeterministicForSeed) {
  FaultCounters c1, c2, c3;
  auto a = run_stats(mixed(7), 3000, &c1);
  auto b = run_stats(mixed(7), 3000, &c2);
  auto d = run_stats(mixed(8), 3000, &c3);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, d);
}

TEST(FaultInjector, ReorderReleasesAfterNFrames) {
  FaultConfig cfg;
  cfg.tx.reorder = 1.0;
  cfg.tx.reorder_frames = 2;
  cfg.tx.filter = only_index(1);
  TxRig rig(cfg);
  for (std::uint32_t i = 0; i < 6; ++i) rig.send(i);
  EXPECT_EQ(rig.got(), (std::vector<std::uint32_t>{0, 2, 3, 1, 4, 5}));
  EXPECT_EQ(rig.fi.tx_counters().reordered, 1u);
  EXPECT_EQ(rig.fi.held_tx(), 0u);
}

TEST(FaultInjector, ReorderTimesOutWithoutLaterFrames) {
  FaultConfig cfg;
  cfg.tx.reorder = 1.0;
  cfg.tx.reorder_frames = 5;
  cfg.tx.reorder_timeout = std::chrono::microseconds(100);
  TxRig rig(cfg);
  rig.send(0);
  EXPECT_TRUE(rig.got().empty());
  EXPECT_EQ(rig.fi.held_tx(), 1u);
  rig.clock.advance(std::chrono::microseconds(99));
  rig.fi.tx_flush();
  EXPECT_TRUE(rig.got().empty());
  rig.clock.advance(std::chrono::microseconds(1));
  rig.fi.tx_flush();
  EXPECT_EQ(rig.got(), (std::vector<std::uint32_t>{0}));
}

TEST(FaultInjector, DuplicateDeliversTwice) {
  FaultConfig cfg;
  cfg.tx.duplicate = 1.0;
  cfg.tx.filter = only_index(2);
  TxRig rig(cfg);
  for (std::uint32_t i = 0; i < 4; ++i) rig.send(i);
  EXPECT_EQ(rig.got(), (std::vector<std::uint32_t>{0, 1, 2, 2, 3}));
}

TEST(FaultInjector, CorruptFlipsOneBitBeyondOffset) {
  FaultConfig cfg;
  cfg.seed = 3;
  cfg.tx.corrupt = 1.0;
  TxRig rig(cfg);
  for (std::uint32_t i = 0; i < 200; ++i) {
    const auto orig = test::tcp_frame(i, 64);
    ASSERT_TRUE(rig.fi.tx(TxOf(orig).frame));
    rig.fi.tx_flush();
    auto got = drain(rig.link.b());
    ASSERT_EQ(got.size(), 1u);
    int bits = 0;
    for (std::size_t k = 0; k < orig.size(); ++k) {
      const auto x = static_cast<unsigned>(orig[k] ^ got[0][k]);
      if (x) {
        EXPECT_GE(k, test::hdr_len);
      }
      bits += __builtin_popcount(x);
    }
    EXPECT_EQ(bits, 1);
    EXPECT_FALSE(checksums_ok(got[0], 14));
  }
  rig.send(1000, 0);  // no payload: nothing beyond the offset to damage
  EXPECT_EQ(rig.fi.tx_counters().corrupt_skipped, 1u);
  EXPECT_EQ(rig.fi.tx_counters().corrupted, 200u);
}

TEST(FaultInjector, CorruptionThatKeepsTheChecksumPassesIt) {
  FaultConfig cfg;
  cfg.seed = 5;
  cfg.tx.corrupt = 1.0;
  cfg.tx.corrupt_keeps_checksum = true;
  TxRig rig(cfg);
  for (std::uint32_t i = 0; i < 50; ++i) {
    const auto orig = test::tcp_frame(i, 64);
    ASSERT_TRUE(rig.fi.tx(TxOf(orig).frame));
    rig.fi.tx_flush();
    auto got = drain(rig.link.b());
    ASSERT_EQ(got.size(), 1u);
    int payload_bits = 0;
    for (std::size_t k = test::hdr_len; k < orig.size(); ++k)
      payload_bits += __builtin_popcount(static_cast<unsigned>(orig[k] ^ got[0][k]));
    EXPECT_EQ(payload_bits, 1);
    EXPECT_TRUE(checksums_ok(got[0], 14)) << "only an end-to-end CRC can see this damage";
  }
}

// A segment whose TCP header carries 12 octets of options (timestamps): corruption that
// keeps the checksum, limited to the payload, never touches the header (found by the soak:
// a changed TSval passed every check and PAWS then refused the rest of the connection).
TEST(FaultInjector, PayloadOnlyCorruptionSkipsTheTcpOptions) {
  FaultConfig cfg;
  cfg.seed = 9;
  cfg.tx.corrupt = 1.0;
  cfg.tx.corrupt_keeps_checksum = true;
  cfg.tx.corrupt_payload_only = true;
  TxRig rig(cfg);
  constexpr std::size_t headers = 14 + 20 + 32;
  for (std::uint32_t i = 0; i < 200; ++i) {
    auto orig = test::tcp_frame(i, 12 + 3);  // 12 octets of options, 3 of payload
    orig[14 + 20 + 12] = 8 << 4;             // data offset: 32 octets
    fill_checksums(orig, 14, true, true);
    ASSERT_TRUE(rig.fi.tx(TxOf(orig).frame));
    rig.fi.tx_flush();
    auto got = drain(rig.link.b());
    ASSERT_EQ(got.size(), 1u);
    for (std::size_t k = 0; k < headers; ++k) {
      if (k == 14 + 20 + 16 || k == 14 + 20 + 17) continue;  // the TCP checksum
      ASSERT_EQ(orig[k], got[0][k]) << "header octet " << k << " in frame " << i;
    }
    EXPECT_TRUE(checksums_ok(got[0], 14));
  }
  EXPECT_EQ(rig.fi.tx_counters().corrupted, 200u);
  auto bare = test::tcp_frame(1000, 12);  // options only, no payload: skipped
  bare[14 + 20 + 12] = 8 << 4;
  fill_checksums(bare, 14, true, true);
  ASSERT_TRUE(rig.fi.tx(TxOf(bare).frame));
  EXPECT_EQ(rig.fi.tx_counters().corrupt_skipped, 1u);
}

TEST(FaultInjector, CorruptionHappensAfterOffloadedChecksums) {
  MemLinkConfig lc;
  lc.caps.tx_ip_csum = lc.caps.tx_l4_csum = true;
  ManualClock clock;
  MemLink link(lc);
  FaultConfig cfg;
  cfg.tx.corrupt = 1.0;
  FaultInjector fi(link.a(), clock, cfg);
  const auto off = test::tcp_frame(1, 300, 0, true);
  TxOf t(off);
  t.frame.offload.ip_csum = t.frame.offload.l4_csum = true;
  ASSERT_TRUE(fi.tx(t.frame));
  fi.tx_flush();
  auto got = drain(link.b());
  ASSERT_EQ(got.size(), 1u);
  const auto full = test::tcp_frame(1, 300, 0, false);
  int bits = 0;
  for (std::size_t k = 0; k < full.size(); ++k)
    bits += __builtin_popcount(static_cast<unsigned>(full[k] ^ got[0][k]));
  EXPECT_EQ(bits, 1) << "checksums are those of the undamaged frame";
  EXPECT_FALSE(checksums_ok(got[0], 14));
}

TEST(FaultInjector, DelayWithManualClock) {
  FaultConfig cfg;
  cfg.tx.delay = std::chrono::microseconds(10);
  TxRig rig(cfg);
  rig.send(0);
  rig.clock.advance(std::chrono::microseconds(5));
  rig.send(1);
  EXPECT_TRUE(rig.got().empty());
  rig.clock.advance(std::chrono::microseconds(4));
  rig.fi.tx_flush();
  EXPECT_TRUE(rig.got().empty());
  rig.clock.advance(std::chrono::microseconds(1));
  rig.fi.tx_flush();
  EXPECT_EQ(rig.got(), (std::vector<std::uint32_t>{0}));
  rig.clock.advance(std::chrono::microseconds(5));
  rig.fi.tx_flush();
  EXPECT_EQ(rig.got(), (std::vector<std::uint32_t>{1}));
  EXPECT_EQ(rig.fi.tx_counters().delayed, 2u);
}

TEST(FaultInjector, JitterStaysWithinBoundsAndReleasesAll) {
  FaultConfig cfg;
  cfg.seed = 11;
  cfg.tx.delay = std::chrono::microseconds(20);
  cfg.tx.jitter = std::chrono::microseconds(30);
  TxRig rig(cfg);
  for (std::uint32_t i = 0; i < 100; ++i) rig.send(i);
  rig.clock.advance(std::chrono::microseconds(19));
  rig.fi.tx_flush();
  EXPECT_TRUE(rig.got().empty());
  rig.clock.advance(std::chrono::microseconds(31));
  rig.fi.tx_flush();
  auto got = rig.got();
  EXPECT_EQ(got.size(), 100u);
  EXPECT_FALSE(std::is_sorted(got.begin(), got.end())) << "jitter reorders";
}

TEST(FaultInjector, FilterDropsExactlyTheThirdDataSegment) {
  FaultConfig cfg;
  cfg.tx.loss = 1.0;
  int data_segments = 0;
  cfg.tx.filter = [&data_segments](const FaultFrameInfo& f) {
    return f.length > test::hdr_len && ++data_segments == 3;
  };
  TxRig rig(cfg);
  // seq: 0 ack, 1 data, 2 ack, 3 data, 4 data (the 3rd), 5 data
  const std::size_t lens[] = {0, 10, 0, 10, 10, 10};
  for (std::uint32_t i = 0; i < 6; ++i) rig.send(i, lens[i]);
  EXPECT_EQ(rig.got(), (std::vector<std::uint32_t>{0, 1, 2, 3, 5}));
  EXPECT_EQ(rig.fi.tx_counters().lost, 1u);
  EXPECT_EQ(rig.fi.tx_counters().eligible, 1u);
}

TEST(FaultInjector, HeldTxFramesAreCopiesCallerRefsUntouched) {
  FaultConfig cfg;
  cfg.tx.delay = std::chrono::microseconds(10);
  ManualClock clock;
  MemLink link;
  FaultInjector fi(link.a(), clock, cfg);
  CountingHolder h;
  auto bytes = test::tcp_frame(3, 200);
  const auto expect = bytes;
  {
    TxOf t(bytes, BufRef(&h));
    ASSERT_TRUE(fi.tx(t.frame));
    EXPECT_EQ(h.refs, 1u);
  }
  EXPECT_EQ(h.released, 1);
  bytes.assign(bytes.size(), 0);
  clock.advance(std::chrono::microseconds(10));
  fi.tx_flush();
  auto got = drain(link.b());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], expect);
}

// An inner device that hands out frames whose refs we can watch.
class StubRx final : public Device {
 public:
  std::deque<RxFrame> q;
  MacAddr mac() const override { return {}; }
  DeviceCaps caps() const override { return {}; }
  std::size_t rx_burst(std::span<RxFrame> out) override {
    std::size_t n = 0;
    for (; n < out.size() && !q.empty(); ++n) {
      out[n] = std::move(q.front());
      q.pop_front();
    }
    return n;
  }
  bool tx(const TxFrame&) override { return true; }
  void tx_flush() override {}
  DeviceStats stats() const override { return {}; }
};

TEST(FaultInjector, RxHeldFramesReleaseInnerBuffersAndPassThroughIsZeroCopy) {
  StubRx stub;
  ManualClock clock;
  FaultConfig cfg;
  cfg.rx.delay = std::chrono::microseconds(5);
  cfg.rx.filter = only_index(0);
  FaultInjector fi(stub, clock, cfg);
  const auto f0 = test::tcp_frame(0, 30), f1 = test::tcp_frame(1, 30);
  CountingHolder h0, h1;
  stub.q.push_back({f0, BufRef(&h0), rx_csum::l4_good});
  stub.q.push_back({f1, BufRef(&h1), rx_csum::l4_good});
  std::array<RxFrame, 4> rx;
  ASSERT_EQ(fi.rx_burst(rx), 1u);
  EXPECT_EQ(seq_of(rx[0].data), 1u);
  EXPECT_EQ(rx[0].ref.holder(), &h1) << "undamaged frames keep the inner buffer";
  EXPECT_EQ(rx[0].csum, rx_csum::l4_good);
  EXPECT_EQ(h0.released, 1) << "the delayed frame is a copy";
  EXPECT_EQ(fi.held_rx(), 1u);
  rx = {};
  EXPECT_EQ(h1.released, 1);
  clock.advance(std::chrono::microseconds(5));
  ASSERT_EQ(fi.rx_burst(rx), 1u);
  EXPECT_EQ(to_vec(rx[0].data), f0);
  EXPECT_EQ(rx[0].csum, rx_csum::l4_good);
}

TEST(FaultInjector, RxLossDuplicateAndCorrupt) {
  StubRx stub;
  ManualClock clock;
  FaultConfig cfg;
  cfg.seed = 5;
  cfg.rx.loss = 0.2;
  cfg.rx.duplicate = 0.1;
  cfg.rx.corrupt = 0.1;
  FaultInjector fi(stub, clock, cfg);
  std::vector<std::vector<std::uint8_t>> got;
  std::deque<std::vector<std::uint8_t>> storage;  // the stub's frames point into these
  std::array<RxFrame, 8> rx;
  for (std::uint32_t i = 0; i < 5000; ++i) {
    const auto& f = storage.emplace_back(test::tcp_frame(i, 40));
    stub.q.push_back({f, {}, rx_csum::l4_good});
    for (std::size_t n = fi.rx_burst(rx), k = 0; k < n; ++k) {
      got.push_back(to_vec(rx[k].data));
      if (got.back() != test::tcp_frame(seq_of(rx[k].data), 40)) {
        EXPECT_EQ(rx[k].csum, 0);
      }
    }
  }
  const FaultCounters& c = fi.rx_counters();
  expect_near_p(c.lost, 5000, 0.2);
  expect_near_p(c.duplicated, 5000 - c.lost, 0.1);
  expect_near_p(c.corrupted, 5000 - c.lost, 0.1);
  EXPECT_EQ(got.size(), 5000 - c.lost + c.duplicated);
  EXPECT_EQ(fi.stats().rx_frames, got.size());
}

}  // namespace
}  // namespace esock::tcp
