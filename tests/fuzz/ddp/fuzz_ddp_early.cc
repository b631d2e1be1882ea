// Early placement against a posted state: a Qp with a remote-writable region, posted
// receive WRs (scatter lists with a zero-length SGE) and two outstanding RDMA Reads is
// driven by arbitrary interleavings of on_segment, place_payload (payload cut into
// arbitrary gather pieces) and on_placed_segment. Every region is its own exact-size heap
// block so ASan sees any octet written or read out of bounds; a refused place_payload must
// leave memory, state and completion queues untouched.
//
// Input: octet 0 = setup flags (bit 0: expect an RTR of kind (bits 1-2) % 3), then ops,
// each starting with an op octet o:
//   o & 3 == 0: on_segment       n, then n octets
//   o & 3 == 1: place_payload      hl (% 32), n, split, then hl header and n payload octets;
//                                pieces of (split & 7) + 1 octets, an empty piece before
//                                each when split & 8
//   o & 3 == 2: on_placed_segment hl (% 32), len (2 octets, big endian), then hl octets
//   o & 3 == 3: drain the Qp's output and re-post receive WR (o >> 2) & 3
// With o & 0x80, a tagged header's TO is rebased onto the writable region (o & 0x40: the
// Read sink) keeping its low 16 bits, so the fuzzer reaches placement without knowing
// addresses. STags are fixed: 0x101 write region, 0x201 read-only, 0x301 receive,
// 0x401 Read sink.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/endian.h"
#include "ddp/qp.h"

using namespace esock;
using namespace esock::ddp;

namespace {

struct State {
  std::vector<std::uint8_t> wmem = std::vector<std::uint8_t>(1024);
  std::vector<std::uint8_t> rx = std::vector<std::uint8_t>(256);
  std::vector<std::uint8_t> sink = std::vector<std::uint8_t>(512);
  StagTable stags{1};  // fixed keys: runs are reproducible
  std::uint32_t pd = stags.alloc_pd();
  stag_t wk = stags.register_mr(pd, wmem.data(), wmem.size(), access_remote_write);
  stag_t rk = stags.register_mr(pd, wmem.data(), wmem.size(), access_remote_read);
  stag_t lk = stags.register_mr(pd, rx.data(), rx.size(), access_local_write);
  stag_t sk = stags.register_mr(pd, sink.data(), sink.size(), access_local_write);
  CompletionQueue scq{64}, rcq{64};
  Qp qp{config(pd), stags, scq, rcq};

  static QpConfig config(std::uint32_t pd) {
    QpConfig c{};
    c.pd = pd;
    c.ird = 4;
    c.mulpdu = 128;
    c.rq_depth = 8;
    return c;
  }
  void post_recv(std::size_t k) {
    std::uint8_t* s = rx.data() + 64 * k;
    const Sge sg[] = {{s, 16, lk}, {s + 16, 0, lk}, {s + 16, 48, lk}};
    qp.post_recv(k, sg);
  }
};

struct Snapshot {
  std::vector<std::uint8_t> wmem, rx, sink;
  QpState state;
  std::size_t scq, rcq;
};

Snapshot snap(const State& s) {
  return {s.wmem, s.rx, s.sink, s.qp.state(), s.scq.size(), s.rcq.size()};
}

bool unchanged(const Snapshot& a, const State& s) {
  return a.wmem == s.wmem && a.rx == s.rx && a.sink == s.sink && a.state == s.qp.state() &&
         a.scq == s.scq.size() && a.rcq == s.rcq.size();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  State st;
  for (std::size_t k = 0; k < 4; ++k) st.post_recv(k);
  st.qp.rts();
  // Three Read Requests outstanding (ORD 16): Read Responses have somewhere to go.
  const Sge s1[] = {{st.sink.data(), 200, st.sk}};
  const Sge s2[] = {{st.sink.data() + 200, 100, st.sk}, {st.sink.data() + 300, 212, st.sk}};
  st.qp.post_read(1, s1, 0x1234, 0);
  st.qp.post_read(2, s2, 0x1234, 4096);
  OutSegment seg;
  for (int k = 0; k < 16 && st.qp.next_segment(seg); ++k) {
  }
  if (size == 0) return 0;
  if (data[0] & 1) st.qp.expect_rtr(static_cast<RtrOp>((data[0] >> 1) % 3));

  std::size_t off = 1;
  auto take = [&](std::size_t n) -> const std::uint8_t* {
    if (n > size - off) return nullptr;
    const std::uint8_t* p = data + off;
    off += n;
    return p;
  };
  std::vector<bytes_view> pieces;
  std::uint8_t hdr[32];
  while (off < size) {
    const std::uint8_t o = data[off++];
    const auto* a = take((o & 3) == 0 ? 1 : (o & 3) == 3 ? 0 : 3);
    if (a == nullptr) break;
    auto header = [&](std::size_t hl) -> bytes_view {
      const std::uint8_t* p = take(hl);
      if (p == nullptr) return {};
      std::copy_n(p, hl, hdr);
      if ((o & 0x80) && hl >= 14 && (hdr[0] & 0x80)) {
        const std::uint8_t* b = (o & 0x40) ? st.sink.data() : st.wmem.data();
        const auto to =
            static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(b)) + load_be16(&hdr[12]);
        store_be64(&hdr[6], to);
      }
      return bytes_view(hdr, hl);
    };
    switch (o & 3) {
      case 0: {
        const std::uint8_t* p = take(a[0]);
        if (p == nullptr) return 0;
        st.qp.on_segment(bytes_view(p, a[0]));
        break;
      }
      case 1: {
        const std::size_t hl = a[0] % 32, n = a[1], split = a[2];
        const bytes_view h = header(hl);
        const std::uint8_t* p = take(n);
        if (h.size() != hl || p == nullptr) return 0;
        pieces.clear();
        for (std::size_t i = 0; i < n;) {
          const std::size_t k = std::min<std::size_t>((split & 7) + 1, n - i);
          if (split & 8) pieces.push_back({});
          pieces.push_back(bytes_view(p + i, k));
          i += k;
        }
        const Snapshot before = snap(st);
        if (!st.qp.place_payload(h, pieces) && !unchanged(before, st)) __builtin_trap();
        // Placement never changes anything but memory.
        if (st.qp.state() != before.state || st.rcq.size() != before.rcq ||
            st.scq.size() != before.scq)
          __builtin_trap();
        break;
      }
      case 2: {
        const std::size_t hl = a[0] % 32;
        const bytes_view h = header(hl);
        if (h.size() != hl) return 0;
        st.qp.on_placed_segment(h, static_cast<std::uint32_t>(a[1] << 8 | a[2]));
        break;
      }
      default:
        for (int k = 0; k < 16 && st.qp.next_segment(seg); ++k) {
        }
        st.post_recv((o >> 2) & 3);
        break;
    }
  }
  std::vector<Completion> c(64);
  st.scq.poll(c);
  st.rcq.poll(c);
  st.qp.llp_closed();
  return 0;
}
