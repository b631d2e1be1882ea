// Two Qps joined back to back in memory: segments handed out by one side are copied (as
// the kernel-socket transport does) and fed to the other, in order or shuffled.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "ddp/qp.h"

namespace esock::ddp::testing {

using Bytes = std::vector<std::uint8_t>;

// One ULPDU built by hand: header (DdpHeader::length() octets) then payload.
inline Bytes seg(const DdpHeader& h, bytes_view payload = {}) {
  Bytes b(h.length());
  emit(h, b);
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

inline DdpHeader write_hdr(stag_t s, std::uint64_t to) {
  DdpHeader h;
  h.tagged = true;
  h.opcode = RdmapOpcode::write;
  h.stag = s;
  h.to = to;
  return h;
}

// An untagged Send header on QN 0.
inline DdpHeader send_hdr(std::uint32_t msn, std::uint32_t mo = 0, bool last = true) {
  DdpHeader h;
  h.msn = msn;
  h.mo = mo;
  h.last = last;
  return h;
}

// A Read Request on QN 1 (RFC 5040 section 4.4) with its header.
inline Bytes rr_seg(std::uint32_t msn, const ReadRequest& rr, std::uint32_t mo = 0) {
  DdpHeader h;
  h.opcode = RdmapOpcode::read_request;
  h.qn = qn_read_request;
  h.msn = msn;
  h.mo = mo;
  Bytes body(read_request_len);
  emit(rr, body);
  return seg(h, body);
}

inline QpConfig with_pd(QpConfig c, std::uint32_t pd) {
  c.pd = pd;
  return c;
}

struct Side {
  explicit Side(QpConfig c) : qp(with_pd(c, pd), stags, scq, rcq) {}
  StagTable stags{1};  // fixed keys: runs are reproducible
  std::uint32_t pd = stags.alloc_pd();
  CompletionQueue scq{4096};
  CompletionQueue rcq{4096};
  Qp qp;

  std::vector<Completion> poll_send() { return poll(scq); }
  std::vector<Completion> poll_recv() { return poll(rcq); }
  static std::vector<Completion> poll(CompletionQueue& cq) {
    std::vector<Completion> v(cq.size());
    v.resize(cq.poll(v));
    return v;
  }
  // Everything this side has to send right now, each segment as one ULPDU.
  std::vector<Bytes> drain() {
    std::vector<Bytes> out;
    OutSegment s;
    while (qp.next_segment(s)) {
      Bytes b(s.hdr.begin(), s.hdr.begin() + static_cast<std::ptrdiff_t>(s.hdr_len));
      b.insert(b.end(), s.payload.begin(), s.payload.end());
      out.push_back(std::move(b));
    }
    return out;
  }
};

struct Wire {
  std::vector<Bytes> a_to_b, b_to_a;  // every ULPDU seen, for assertions
};

// Runs until neither side has anything to send. With a seed, each batch a side hands out
// is delivered in a shuffled order.
inline void pump(Side& a, Side& b, Wire* w = nullptr, std::optional<std::uint32_t> seed = {},
                 int max_rounds = 100000) {
  std::mt19937 rng(seed.value_or(0));
  for (int i = 0; i < max_rounds; ++i) {
    auto ab = a.drain();
    auto ba = b.drain();
    if (ab.empty() && ba.empty()) return;
    if (seed) {
      std::shuffle(ab.begin(), ab.end(), rng);
      std::shuffle(ba.begin(), ba.end(), rng);
    }
    for (auto& s : ab) {
      b.qp.on_segment(s);
      if (w) w->a_to_b.push_back(s);
    }
    for (auto& s : ba) {
      a.qp.on_segment(s);
      if (w) w->b_to_a.push_back(s);
    }
  }
}

inline std::vector<std::uint8_t> pattern(std::size_t n, std::uint32_t seed) {
  std::vector<std::uint8_t> v(n);
  std::mt19937 rng(seed);
  for (auto& x : v) x = static_cast<std::uint8_t>(rng());
  return v;
}

}  // namespace esock::ddp::testing
