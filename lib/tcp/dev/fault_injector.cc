#include "tcp/dev/fault_injector.h"

#include <algorithm>
#include <array>

#include "tcp/dev/frame_copy.h"
#include "tcp/dev/inet_csum.h"

namespace esock::tcp {

FaultFilter longer_than(std::size_t n) {
  return [n](const FaultFrameInfo& f) { return f.length > n; };
}

FaultInjector::FaultInjector(Device& inner, const Clock& clock, FaultConfig config)
    : inner_(inner), clock_(clock), rng_(config.seed) {
  tx_.spec = std::move(config.tx);
  rx_.spec = std::move(config.rx);
}

// Held frames are our own copies; dropping them is all the cleanup there is.
FaultInjector::~FaultInjector() = default;

bool FaultInjector::chance(double p) {
  // Always draw, even for p == 0, so one spec change does not shift every later decision
  // of the other faults: a seed then names the same "random" frames across tests.
  const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
  return u < p;
}

FaultInjector::Verdict FaultInjector::decide(Lane& lane, const FaultFrameInfo& info) {
  Verdict v;
  ++lane.count.seen;
  if (lane.spec.filter && !lane.spec.filter(info)) return v;
  ++lane.count.eligible;
  v.lose = chance(lane.spec.loss);
  v.corrupt = chance(lane.spec.corrupt);
  v.duplicate = chance(lane.spec.duplicate);
  v.reorder = chance(lane.spec.reorder);
  if (v.lose) return v;
  const auto jitter = lane.spec.jitter.count();
  v.delay = lane.spec.delay;
  if (jitter > 0) v.delay += Duration(std::uniform_int_distribution<std::int64_t>(0, jitter)(rng_));
  return v;
}

FaultInjector::Frame FaultInjector::copy_tx(const TxFrame& frame) {
  FlatFrame flat = flatten(frame);
  Frame f;
  f.data = flat.data;
  f.ref = std::move(flat.ref);
  f.head_len = frame.head.size();
  f.offload = frame.offload;
  return f;
}

FaultInjector::Frame FaultInjector::copy_rx_frame(const RxFrame& frame) {
  RxFrame c = copy_rx(frame);
  Frame f;
  f.data = c.data;
  f.ref = std::move(c.ref);
  f.head_len = c.data.size();
  f.csum = c.csum;
  return f;
}

namespace {
// Where the TCP payload of an Ethernet/IPv4/TCP frame starts, or SIZE_MAX.
std::size_t tcp_payload_offset(bytes_view f) {
  constexpr std::size_t eth = 14;
  if (f.size() < eth + 20 || f[12] != 0x08 || f[13] != 0x00 || f[eth + 9] != 6) return SIZE_MAX;
  const std::size_t ip = std::size_t{static_cast<std::uint8_t>(f[eth] & 0x0f)} * 4;
  if (f.size() < eth + ip + 20) return SIZE_MAX;
  return eth + ip + std::size_t{static_cast<std::uint8_t>(f[eth + ip + 12] >> 4)} * 4;
}
}  // namespace

void FaultInjector::corrupt(Lane& lane, Frame& f) {
  const std::size_t off =
      lane.spec.corrupt_payload_only ? tcp_payload_offset(f.data) : lane.spec.corrupt_offset;
  if (off == SIZE_MAX || f.data.size() <= off || f.offload.tso_segsz != 0) {
    ++lane.count.corrupt_skipped;
    return;
  }
  // Our copy is the only user of these bytes.
  auto* bytes = const_cast<std::uint8_t*>(f.data.data());
  // Damage happens on the wire, after the NIC computed any offloaded checksum: complete
  // them first, or the corruption would be covered by a checksum computed over it.
  if (f.offload.ip_csum || f.offload.l4_csum) {
    fill_checksums(mut_bytes(bytes, f.data.size()), f.offload.l2_len, f.offload.ip_csum,
                   f.offload.l4_csum);
    f.offload.ip_csum = f.offload.l4_csum = false;
  }
  const std::size_t at = std::uniform_int_distribution<std::size_t>(off, f.data.size() - 1)(rng_);
  const int bit = std::uniform_int_distribution<int>(0, 7)(rng_);
  bytes[at] ^= static_cast<std::uint8_t>(1u << bit);
  if (lane.spec.corrupt_keeps_checksum)
    fill_checksums(mut_bytes(bytes, f.data.size()), 14, true, true);
  // A device's rx checksum verdict described the bytes before the damage.
  f.csum = 0;
  ++lane.count.corrupted;
}

bool FaultInjector::emit(Lane& lane, const Frame& f) {
  if (&lane == &rx_) {
    RxFrame r;
    r.data = f.data;
    r.ref = f.ref;
    r.csum = f.csum;
    ready_.push_back(std::move(r));
    return true;
  }
  std::array<TxPiece, 1> piece{};
  TxFrame t;
  t.head = f.data.first(f.head_len);
  t.offload = f.offload;
  if (f.data.size() > f.head_len) {
    piece[0].data = f.data.subspan(f.head_len);
    piece[0].ref = f.ref;
    t.payload = piece;
  }
  return inner_.tx(t);
}

void FaultInjector::tick(Lane& lane) {
  // Count down first, then release, so a release does not count as a later frame for the
  // frames still held (that would cascade them all out at once).
  for (Reordered& r : lane.reorder_q)
    if (r.frames_left > 0) --r.frames_left;
  while (!lane.reorder_q.empty() && lane.reorder_q.front().frames_left == 0) {
    if (!emit(lane, lane.reorder_q.front().frame)) ++lane.count.refused;
    lane.reorder_q.pop_front();
  }
}

void FaultInjector::hold_or_emit(Lane& lane, Frame f, const Verdict& v, bool first_copy) {
  if (first_copy && v.reorder) {
    ++lane.count.reordered;
    const std::uint32_t n = std::max<std::uint32_t>(lane.spec.reorder_frames, 1);
    lane.reorder_q.push_back({std::move(f), n, clock_.now() + lane.spec.reorder_timeout});
    return;
  }
  if (v.delay > Duration::zero()) {
    if (first_copy) ++lane.count.delayed;
    lane.delayed.emplace(std::make_pair(clock_.now() + v.delay, lane.delay_seq++), std::move(f));
    return;
  }
  if (!emit(lane, f)) ++lane.count.refused;
  tick(lane);
}

void FaultInjector::release_due(Lane& lane, Instant now) {
  while (!lane.delayed.empty() && lane.delayed.begin()->first.first <= now) {
    auto node = lane.delayed.extract(lane.delayed.begin());
    if (!emit(lane, node.mapped())) ++lane.count.refused;
    tick(lane);
  }
  // Reordered frames whose patience ran out (fewer than reorder_frames followed them).
  while (!lane.reorder_q.empty() && lane.reorder_q.front().deadline <= now) {
    if (!emit(lane, lane.reorder_q.front().frame)) ++lane.count.refused;
    lane.reorder_q.pop_front();
  }
}

void FaultInjector::release_all() {
  release_due(tx_, Instant::never());
  release_due(rx_, Instant::never());
}

bool FaultInjector::emit_original_tx(const TxFrame& frame) {
  if (!inner_.tx(frame)) return false;
  tick(tx_);
  return true;
}

bool FaultInjector::tx(const TxFrame& frame) {
  const FaultFrameInfo info{frame.head, frame_length(frame), tx_.index++};
  const Verdict v = decide(tx_, info);
  if (v.lose) {
    ++tx_.count.lost;
    ++stats_.tx_frames;
    return true;
  }
  const bool copy = v.corrupt || v.reorder || v.delay > Duration::zero();
  if (!copy) {
    // The common case: no copy, the inner device sees the caller's frame (and refs).
    if (!emit_original_tx(frame)) {
      ++stats_.tx_dropped;
      return false;
    }
    if (v.duplicate) {
      ++tx_.count.duplicated;
      if (!emit_original_tx(frame)) ++tx_.count.refused;
    }
    ++stats_.tx_frames;
    return true;
  }
  Frame f = copy_tx(frame);
  if (v.corrupt) corrupt(tx_, f);
  if (!v.reorder && v.delay == Duration::zero()) {
    // Only corrupted: send now and let the caller see a refusal (nothing was kept).
    if (!emit(tx_, f)) {
      ++stats_.tx_dropped;
      return false;
    }
    tick(tx_);
    if (v.duplicate) {
      ++tx_.count.duplicated;
      hold_or_emit(tx_, f, v, false);
    }
    ++stats_.tx_frames;
    return true;
  }
  if (v.duplicate) {
    ++tx_.count.duplicated;
    hold_or_emit(tx_, f, v, false);
  }
  hold_or_emit(tx_, std::move(f), v, true);
  ++stats_.tx_frames;
  return true;
}

void FaultInjector::tx_flush() {
  release_due(tx_, clock_.now());
  inner_.tx_flush();
}

std::size_t FaultInjector::rx_burst(std::span<RxFrame> out) {
  release_due(rx_, clock_.now());
  if (ready_.size() < out.size()) {
    scratch_.resize(out.size() - ready_.size());
    const std::size_t n = inner_.rx_burst(scratch_);
    for (std::size_t i = 0; i < n; ++i) {
      RxFrame& r = scratch_[i];
      const FaultFrameInfo info{r.data, r.data.size(), rx_.index++};
      const Verdict v = decide(rx_, info);
      if (v.lose) {
        ++rx_.count.lost;
      } else if (!v.corrupt && !v.reorder && v.delay == Duration::zero()) {
        // Zero copy: the duplicate shares the inner device's buffer.
        if (v.duplicate) {
          ++rx_.count.duplicated;
          ready_.push_back(r);
          tick(rx_);
        }
        ready_.push_back(std::move(r));
        tick(rx_);
      } else {
        Frame f = copy_rx_frame(r);
        if (v.corrupt) corrupt(rx_, f);
        if (v.duplicate) {
          ++rx_.count.duplicated;
          hold_or_emit(rx_, f, v, false);
        }
        hold_or_emit(rx_, std::move(f), v, true);
      }
      r = RxFrame{};  // drop the inner device's ref now
    }
  }
  std::size_t n = 0;
  while (n < out.size() && !ready_.empty()) {
    out[n++] = std::move(ready_.front());
    ready_.pop_front();
  }
  stats_.rx_frames += n;
  return n;
}

}  // namespace esock::tcp
