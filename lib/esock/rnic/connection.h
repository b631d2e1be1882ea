// The software RNIC's connection engine: MPA negotiation, framing and deframing, and a DDP/RDMAP
// queue pair over one in-order byte stream. No I/O: bytes come in through on_bytes() and go out
// through output()/consume(); any transport (kernel socket, DPDK TCP, an in-memory pipe) drives it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/byte_queue.h"
#include "base/bytes.h"
#include "ddp/cq.h"
#include "ddp/qp.h"
#include "ddp/stag.h"
#include "mpa/deframer.h"
#include "mpa/framer.h"
#include "mpa/negotiator.h"

namespace esock::rnic {

struct ConnectionConfig {
  mpa::Config mpa;
  ddp::QpConfig qp;
  // Effective MSS of the transport: FPDUs are sized so one fits a segment (RFC 5044 section 9).
  std::size_t emss = 1460;
  // Stop framing new FPDUs once this much output waits for the transport (back-pressure).
  std::size_t tx_high_water = 256 * 1024;
};

struct ConnectionStats {
  std::uint64_t fpdus_tx = 0, fpdus_rx = 0;
};

class Connection {
 public:
  enum class State { negotiating, established, failed, closed };

  Connection(ConnectionConfig cfg, ddp::StagTable& stags, ddp::CompletionQueue& send_cq,
             ddp::CompletionQueue& recv_cq);

  // In-order stream octets from the transport.
  void on_bytes(bytes_view in);
  // Frames whatever the queue pair has to send, up to the high-water mark.
  void pump();
  // Octets waiting for the transport; consume() drops the first n once they are sent.
  bytes_view output() const { return out_.view(); }
  void consume(std::size_t n) { out_.consume(n); }
  // The transport's stream ended (FIN) or broke.
  void on_transport_closed(bool orderly);

  State state() const { return state_; }
  const std::string& error() const { return error_; }
  const mpa::Negotiated& negotiated() const { return negotiator_.result(); }
  ddp::Qp& qp() { return qp_; }
  const ConnectionStats& stats() const { return stats_; }

 private:
  void established();
  void fail(std::string why);
  void deframe(bytes_view in);

  ConnectionConfig cfg_;
  State state_ = State::negotiating;
  std::string error_;
  mpa::Negotiator negotiator_;
  std::optional<mpa::Framer> framer_;
  std::optional<mpa::Deframer> deframer_;
  ddp::Qp qp_;
  bool hold_tx_until_rx_ = false;
  ByteQueue out_;
  ConnectionStats stats_;
};

}  // namespace esock::rnic
