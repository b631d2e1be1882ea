// The software RNIC of one connection: MPA negotiation (RFC 5044 section 7, RFC 6581), FPDU
// framing and deframing with Markers and CRC32c (RFC 5044 sections 4-6), placement of
// received segments (in order, and ahead of a hole when the transport offers them, RFC 5044
// section 8 / RFC 5041 section 5) and the DDP/RDMAP queue pair (lib/ddp) with its
// completion queues. No I/O: every transport drives the same engine.
//
// * Receive: the transport feeds in-order octets (feed), and optionally segments that lie
//   ahead of a hole (place_out_of_order) together with, later, the in-order arrival of the
//   ranges it placed (skip_placed). Stream positions count FPDU-stream octets from the end
//   of the peer's MPA Request/Reply (0), as Markers do (RFC 5044 section 5).
// * Transmit: transmit() frames what the queue pair has into FPDUs sized to the transport's
//   segment (RFC 5044 section 9) and hands each to Transport::send_fpdu whole.
// * Verbs: post_* hand work requests to the queue pair and transmit at once.
//
// One thread owns an engine (ARCHITECTURE.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/bytes.h"
#include "ddp/cq.h"
#include "ddp/qp.h"
#include "esock/rnic/context.h"
#include "esock/rnic/placed_fpdus.h"
#include "esock/rnic/transport.h"
#include "mpa/deframer.h"
#include "mpa/framer.h"
#include "mpa/negotiator.h"
#include "mpa/segment_scan.h"

namespace esock::rnic {

struct EngineConfig {
  mpa::Config mpa;  // mpa.initiator says the role
  // qp.pd: 0 for the context's default PD, or one from Context::alloc_pd (which a peer of
  // this connection is then confined to).
  ddp::QpConfig qp;
  std::size_t cq_depth = 4096;
  // A Send/Write completes when the transport reports its octets acknowledged (on_acked),
  // not when they are framed: for transports that send registered memory by reference.
  bool complete_on_ack = false;
  // Place a received segment that starts at an FPDU boundary and holds whole, verified
  // FPDUs straight from the transport's buffer (one copy per payload octet); otherwise
  // every octet goes through the deframer, which stages FPDUs that carry Markers.
  bool place_aligned_segments = false;
  // Accept segments ahead of a hole for early placement (place_out_of_order).
  bool out_of_order_placement = false;
};

struct EngineStats {
  std::uint64_t fpdus_tx = 0;
  std::uint64_t fpdus_rx = 0;            // processed in stream order
  std::uint64_t fpdus_rx_direct = 0;     // of those: placed straight from the segment
  std::uint64_t fpdus_placed_early = 0;  // placed out of order, completed in order
  std::uint64_t ooo_segments = 0;        // offered ahead of a hole
  std::uint64_t ooo_segments_placed = 0;
  // Offered segments left to the in-order path, by why (mpa::ScanResult and the queue pair):
  std::uint64_t ooo_not_self_describing = 0;  // neither CRC nor Marker to verify them with
  std::uint64_t ooo_not_whole_fpdus = 0;      // start or end inside an FPDU, or too many
  std::uint64_t ooo_crc_errors = 0;           // fatal once the in-order path reaches them
  std::uint64_t ooo_framing_errors = 0;       // bad ULPDU_Length or Marker: likewise fatal
  std::uint64_t ooo_not_placeable = 0;        // not a data segment, no target known yet
  std::uint64_t placed_bytes = 0;             // payload octets placed out of order
  std::uint64_t tx_payload_bytes = 0;         // given to the transport by reference
  std::uint64_t tx_copied_bytes = 0;          // MPA frames, headers, Markers, pad, CRC
};

class Engine {
 public:
  enum class State { negotiating, established, failed, closed };

  Engine(EngineConfig cfg, Context& ctx, Transport& tx);
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // The transport is connected: the initiator sends its MPA Request (RFC 5044 section 7.1).
  void start();

  // Receive (engine_rx.cc). In-order octets at the current stream position; returns how
  // many were taken: while negotiating at most the rest of the peer's MPA frame (feed the
  // remainder again: it is FPDU stream), else all (dropped once failed or closed).
  std::size_t feed(bytes_view in);
  // The transport reached, in order, a range of len octets whose FPDUs place_out_of_order
  // placed: the deframer steps over it and the queue pair completes them in stream order.
  // False if that is impossible (a local error; the engine has failed).
  bool skip_placed(std::uint32_t len);
  // A segment at stream position pos, ahead of what feed() has reached: placed now when it
  // is whole, verified FPDUs with known targets (RFC 5044 section 8), all or nothing. True:
  // the transport keeps only the range and reports it with skip_placed in order.
  bool place_out_of_order(std::uint64_t pos, bytes_view data);
  // Stream position of the next octet feed() expects (valid once established).
  std::uint64_t rx_position() const { return rx_pos_; }

  // Transmit (engine_tx.cc): frames what the queue pair has while the transport has room.
  // True when an FPDU went out.
  bool transmit();
  // Segments up to seg_id are no longer needed by the transport (complete_on_ack).
  void on_acked(std::uint64_t seg_id);

  // The transport's stream ended: orderly (FIN after everything) or broken, with why.
  void on_transport_closed(bool orderly, const std::string& why = {});
  // Orderly close of the queue pair (RFC 5040 section 5): what is queued is framed by the
  // next transmit(), and the transport sends FIN once tx_pending() is false.
  void close();

  // Verbs: 0 or an errno value (ddp::Qp); posting transmits at once.
  int post_send(std::uint64_t wr_id, std::span<const ddp::Sge> sg, bool solicited = false,
                ddp::stag_t invalidate = 0);
  int post_recv(std::uint64_t wr_id, std::span<const ddp::Sge> sg);
  int post_write(std::uint64_t wr_id, std::span<const ddp::Sge> sg, ddp::stag_t rkey,
                 std::uint64_t remote_to);
  int post_read(std::uint64_t wr_id, std::span<const ddp::Sge> sink, ddp::stag_t rkey,
                std::uint64_t remote_to);
  // RFC 7306 (ddp::Qp's post_send_imm, post_write_imm, post_atomic): posted, then transmitted.
  int posted(int rc) {
    if (rc == 0) transmit();
    return rc;
  }
  // The connection's tripwires (ddp/tripwire.h): the queue pair feeds them from the first
  // use on, so a connection that never arms one pays nothing per Write.
  ddp::TripwireSet& tripwires() {
    qp_.set_tripwires(&tripwires_);
    return tripwires_;
  }
  std::size_t poll_send_cq(std::span<ddp::Completion> out) { return send_cq_.poll(out); }
  std::size_t poll_recv_cq(std::span<ddp::Completion> out) { return recv_cq_.poll(out); }
  ddp::CompletionQueue& send_cq() { return send_cq_; }
  ddp::CompletionQueue& recv_cq() { return recv_cq_; }

  State state() const { return state_; }
  // The queue pair has FPDUs to frame, or the engine holds them back (RTR, RFC 6581).
  bool tx_pending() const { return qp_.tx_pending(); }
  // A Terminate was sent or received (RFC 5040 section 5.3): the stream ends as by a reset.
  bool terminated() const { return qp_.state() == ddp::QpState::error; }
  const std::string& error() const { return error_; }
  const mpa::Negotiated& negotiated() const { return negotiator_.result(); }
  bool initiator() const { return cfg_.mpa.initiator; }
  ddp::Qp& qp() { return qp_; }
  const ddp::Qp& qp() const { return qp_; }
  Context& context() { return ctx_; }
  const EngineStats& stats() const { return stats_; }
  std::size_t placed_pending() const { return placed_.size(); }

 private:
  void established();
  void fail(std::string why);
  void deframe(bytes_view in);
  bool place_aligned(bytes_view in);
  enum class Placement { placed, scan_failed, not_placeable };
  Placement scan_and_place(bytes_view data, std::uint64_t pos, std::span<PlacedFpdu> rec,
                           std::size_t* n, mpa::ScanResult* scan);
  void count_scan_failure(mpa::ScanResult scan);
  void completed_in_order(const PlacedFpdu& f);
  bool frame_one();
  void local_error(const char* why);

  EngineConfig cfg_;
  Context& ctx_;
  Transport& tx_;
  ddp::CompletionQueue send_cq_, recv_cq_;
  State state_ = State::negotiating;
  std::string error_;
  mpa::Negotiator negotiator_;
  std::optional<mpa::Framer> framer_;
  std::optional<mpa::Deframer> deframer_;
  ddp::Qp qp_;
  // RFC 5044 section 7.1 / RFC 6581 section 3: a responder sends no FPDU before the
  // initiator's first one arrived (no RTR negotiated).
  bool hold_tx_until_rx_ = false;
  std::uint64_t rx_pos_ = 0;
  PlacedFpdus placed_;
  ddp::TripwireSet tripwires_;
  // Framing buffers, sized once for the largest FPDU (mpa::Framer::scratch_size, max_pieces).
  std::vector<std::uint8_t> tx_scratch_;
  std::vector<mpa::FramePiece> tx_pieces_;
  EngineStats stats_;
};

}  // namespace esock::rnic
