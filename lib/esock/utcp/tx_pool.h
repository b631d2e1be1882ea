// Completion of zero-copy FPDU transmit over lib/tcp.
//
// An FPDU goes into TCP's send buffer as one record of pieces: views of the user's
// registered memory (the payload, never copied) and a few small octets the framer produced
// (ULPDU_Length + DDP header, Markers, pad + CRC), which TCP copies. Payload pieces are
// handed over with a BufRef, and TCP (and the device, for frames still in flight) keeps it
// until the octets are ACKed and no frame points at them any more.
//
// Payload pieces reference a *pin* carrying the DDP segment id. When the last reference to
// a pin is gone, the segment's octets can no longer be needed for retransmission, and
// released_through() moves on: the endpoint passes it to ddp::Qp::on_acked(), which is when a
// Send/Write work request completes (the issue's "completes when its data can no longer be
// needed for retransmission").
//
// The pool is heap-allocated and outlives its endpoint while pins are out (TCP may hold a
// send buffer after the endpoint is gone): orphan() frees it once the last pin comes back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "base/buf_ref.h"

namespace esock::utcp {

class TxPool {
 public:
  static TxPool* create() { return new TxPool(); }
  TxPool(const TxPool&) = delete;
  TxPool& operator=(const TxPool&) = delete;

  // Ids are handed out 1, 2, 3, ... by the queue pair (ddp::OutSegment::id), one per FPDU.
  // pin(id): a reference that marks segment `id` done when its last copy is dropped.
  // done(id): a segment with nothing pinned (no payload) is done at once.
  BufRef pin(std::uint64_t id);
  void done(std::uint64_t id);
  // Every id up to this one is done (0: none yet).
  std::uint64_t released_through() const { return released_through_; }
  std::size_t pins_out() const { return pins_out_; }
  // Called when released_through() moves (a frame's last reference dropped: TCP's ACK, or
  // the device done with it, whichever came last): the owner has completions to make.
  void set_wake(void (*fn)(void*), void* ctx) {
    wake_ = fn;
    wake_ctx_ = ctx;
  }

  // The owner is gone: delete this pool as soon as no reference is out (possibly now).
  void orphan();
  // Memory pinned pieces may point into (a copy-on-write's copy, whose region is gone with
  // its owner): freed with the pool, when the last pin is back.
  // (Any owner: a copy on write's copy, an ESTP stream's send buffers.)
  void keep(std::shared_ptr<void> mem) { kept_.push_back(std::move(mem)); }

 private:
  TxPool() = default;
  ~TxPool();

  struct Pin {
    BufHolder holder;  // first member: the release hook gets a Pin*
    TxPool* pool;
    std::uint64_t id;
  };
  static void pin_released(BufHolder* h);
  void mark_done(std::uint64_t id);

  std::vector<Pin*> free_pins_;
  std::size_t pins_out_ = 0;
  // done_[i] describes id released_through_ + 1 + i.
  std::deque<bool> done_;
  std::uint64_t released_through_ = 0;
  bool orphaned_ = false;
  void (*wake_)(void*) = nullptr;
  void* wake_ctx_ = nullptr;
  std::vector<std::shared_ptr<void>> kept_;
};

}  // namespace esock::utcp
