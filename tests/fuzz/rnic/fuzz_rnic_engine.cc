// The software RNIC's receive side (lib/esock/rnic/engine_rx.cc) against a hostile peer: an
// established engine with posted receives and a remote-writable region is driven by an
// arbitrary interleaving of in-order octets (feed), segments offered ahead of a hole at any
// stream position (place_out_of_order), placed ranges reaching their turn (skip_placed) and
// transmits. Every region is its own exact-size heap block so ASan sees any octet placed
// out of bounds; nothing may crash whatever the octets.
//
// Input: octet 0 = mode (bit 0 Markers, bit 1 CRC), then ops, each an op octet o:
//   o % 4 == 0: feed n (1 octet) octets
//   o % 4 == 1: place_out_of_order at rx_position() + d (2 octets), n octets; remembered
//               when placed
//   o % 4 == 2: skip_placed of the oldest remembered range, or of n octets when none
//   o % 4 == 3: transmit, and re-post a receive
// With o & 0x80 the octets are taken from a valid FPDU stream the peer engine framed (so the
// fuzzer reaches placement without computing CRCs), else from the input.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "esock/rnic/engine.h"

using namespace esock;
using namespace esock::rnic;

namespace {

class Sink final : public Transport {
 public:
  bool send_frame(bytes_view f) override {
    out.insert(out.end(), f.begin(), f.end());
    return true;
  }
  std::size_t max_fpdu(bool) const override { return 1460; }
  bool can_send(std::size_t) const override { return out.size() < (1u << 20); }
  bool send_fpdu(std::span<const mpa::FramePiece> pieces, std::uint64_t) override {
    for (const auto& p : pieces) out.insert(out.end(), p.bytes.begin(), p.bytes.end());
    return true;
  }
  std::vector<std::uint8_t> out;
};

EngineConfig config(bool initiator, std::uint8_t mode) {
  EngineConfig c;
  c.mpa.initiator = initiator;
  c.mpa.markers = mode & 1 ? mpa::Policy::require : mpa::Policy::refuse;
  c.mpa.crc = mode & 2 ? mpa::Policy::require : mpa::Policy::refuse;
  c.cq_depth = 64;
  c.qp.rq_depth = 8;
  c.place_aligned_segments = true;
  c.out_of_order_placement = true;
  return c;
}

struct Peers {
  explicit Peers(std::uint8_t mode)
      : a(config(true, mode), ca, ta), b(config(false, mode), cb, tb) {
    a.start();
    feed_all(b, ta.out);
    ta.out.clear();
    feed_all(a, tb.out);
    tb.out.clear();
    wk = cb.reg_mr(wmem.data(), wmem.size(), ddp::access_remote_write | ddp::access_local_write);
    lk = cb.reg_mr(rx.data(), rx.size(), ddp::access_local_write);
    for (std::size_t k = 0; k < 4; ++k) post_recv(k);
    // What a valid peer sends: Sends and RDMA Writes into b's regions.
    const ddp::stag_t sk = ca.reg_mr(src.data(), src.size(), 0);
    for (std::uint32_t i = 0; i < 6; ++i) {
      const ddp::Sge s{src.data() + 100 * i, 100 + 50 * i, sk};
      a.post_send(i, {&s, 1});
      const ddp::Sge w{src.data(), 700, sk};
      a.post_write(10 + i, {&w, 1}, wk, reinterpret_cast<std::uint64_t>(wmem.data()) + 64 * i);
    }
    a.transmit();
  }
  static void feed_all(Engine& e, bytes_view v) {
    while (!v.empty()) {
      const std::size_t n = e.feed(v);
      if (n == 0) return;
      v = v.subspan(n);
    }
  }
  void post_recv(std::size_t k) {
    const ddp::Sge s{rx.data() + 256 * (k % 4), 256, lk};
    b.post_recv(k, {&s, 1});
  }

  Context ca, cb;
  Sink ta, tb;
  Engine a, b;
  std::vector<std::uint8_t> wmem = std::vector<std::uint8_t>(1024);
  std::vector<std::uint8_t> rx = std::vector<std::uint8_t>(1024);
  std::vector<std::uint8_t> src = std::vector<std::uint8_t>(2048, 0x5a);
  ddp::stag_t wk = 0, lk = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  Peers p(data[0]);
  const std::vector<std::uint8_t>& valid = p.ta.out;  // the peer's FPDU stream
  std::size_t valid_at = 0;
  std::deque<std::uint32_t> placed;
  std::size_t i = 1;
  auto take = [&](std::size_t n, bool from_valid) -> bytes_view {
    if (from_valid) {
      n = std::min(n, valid.size() - valid_at);
      const bytes_view v(valid.data() + valid_at, n);
      valid_at += n;
      return v;
    }
    n = std::min(n, size - i);
    const bytes_view v(data + i, n);
    i += n;
    return v;
  };
  std::size_t reposts = 4;
  while (i < size) {
    const std::uint8_t o = data[i++];
    const bool from_valid = (o & 0x80) != 0;
    const std::size_t n = i < size ? data[i++] + 1u : 1u;
    switch (o % 4) {
      case 0:
        Peers::feed_all(p.b, take(n, from_valid));
        break;
      case 1: {
        std::size_t d = 0;
        if (i + 1 < size) {
          d = static_cast<std::size_t>(data[i]) << 8 | data[i + 1];
          i += 2;
        }
        const bytes_view seg = take(n, from_valid);
        if (!seg.empty() && p.b.place_out_of_order(p.b.rx_position() + d, seg))
          placed.push_back(static_cast<std::uint32_t>(seg.size()));
        break;
      }
      case 2:
        if (!placed.empty()) {
          p.b.skip_placed(placed.front());
          placed.pop_front();
        } else {
          p.b.skip_placed(static_cast<std::uint32_t>(n));
        }
        break;
      case 3:
        p.b.transmit();
        p.tb.out.clear();
        p.post_recv(reposts++);
        break;
    }
  }
  ddp::Completion c[64];
  while (p.b.poll_recv_cq(c) > 0) {
  }
  return 0;
}
