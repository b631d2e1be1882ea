// The software RNIC over a plain in-order byte stream (a kernel TCP socket, an in-memory
// pipe): the engine's FPDUs are copied into an output queue that the owner writes to its
// stream, and the octets it reads are fed back. No I/O.
#pragma once

#include <cstddef>

#include "base/byte_queue.h"
#include "esock/rnic/engine.h"

namespace esock::rnic {

struct ByteStreamConfig {
  EngineConfig engine;
  // Effective MSS of the stream: FPDUs are sized so one fits a segment (RFC 5044 section 9).
  std::size_t emss = 1460;
  // Stop framing new FPDUs once this much output waits for the stream (back-pressure).
  std::size_t tx_high_water = 256 * 1024;
};

class ByteStreamEngine final : private Transport {
 public:
  // The initiator's MPA Request is in output() at once (RFC 5044 section 7.1).
  ByteStreamEngine(ByteStreamConfig cfg, Context& ctx);

  // In-order stream octets, any amount.
  void on_bytes(bytes_view in);
  // Frames what the queue pair has to send, up to the high-water mark.
  void pump() { engine_.transmit(); }
  // Octets waiting for the stream; consume() drops the first n once they are written.
  bytes_view output() const { return out_.view(); }
  void consume(std::size_t n) { out_.consume(n); }
  // The stream ended (FIN) or broke.
  void on_transport_closed(bool orderly) { engine_.on_transport_closed(orderly); }

  Engine& engine() { return engine_; }
  const Engine& engine() const { return engine_; }
  Engine::State state() const { return engine_.state(); }
  const std::string& error() const { return engine_.error(); }
  const mpa::Negotiated& negotiated() const { return engine_.negotiated(); }
  ddp::Qp& qp() { return engine_.qp(); }
  const EngineStats& stats() const { return engine_.stats(); }

 private:
  // Transport
  bool send_frame(bytes_view frame) override;
  std::size_t max_fpdu(bool) const override { return emss_; }
  bool can_send(std::size_t) const override { return out_.size() < high_water_; }
  bool send_fpdu(std::span<const mpa::FramePiece> pieces, std::uint64_t seg_id) override;

  std::size_t emss_, high_water_;
  ByteQueue out_;
  Engine engine_;
};

}  // namespace esock::rnic
