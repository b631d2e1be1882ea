// An iWARP endpoint over lib/tcp (the integrated transport, ARCHITECTURE.md): MPA, DDP and
// RDMAP on a connection of esock's own TCP stack, with the same verbs-like API as the
// kernel-socket endpoint (ksock/endpoint.h). What the integration buys:
//
// * FPDU-aligned segmentation: each FPDU is sized from the connection's largest record
//   (tcp::Tcb::max_record(), the SMSS) and handed to TCP as one record, so every segment
//   starts with an FPDU header (RFC 5044 section 9), across retransmissions too.
// * Markers by TCP sequence number: MPA stream position = TCP sequence number minus the
//   position after the MPA Request/Reply (RFC 5044 section 5), so a receiver can find FPDU
//   headers in any segment.
// * Out-of-order placement: TCP offers each segment that arrives ahead of a hole
//   (TcbUser::on_out_of_order). When it is a run of whole FPDUs whose CRC checks and whose
//   targets are known (RFC 5044 section 8), the payload goes straight into the user's
//   buffer and TCP keeps only the sequence range; when the hole fills, the deframer steps
//   over the range and the queue pair completes the messages in stream order (RFC 5041
//   section 5: placement in any order, delivery in order). Anything else stays with TCP.
// * Zero-copy transmit: payload octets go to TCP by reference to the registered memory;
//   a Send/Write completes when no copy of its octets can be needed again (tx_pool.h).
// * Receive copies each payload octet once, from the received frame into its target.
//
// One thread owns an endpoint and its stack (ARCHITECTURE.md). Callbacks from the stack do
// only what cannot wait (out-of-order placement); everything else happens in progress(),
// which the owner calls after each Stack::poll().
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "ddp/cq.h"
#include "ddp/qp.h"
#include "esock/rnic/context.h"
#include "esock/utcp/placed_fpdus.h"
#include "mpa/deframer.h"
#include "mpa/framer.h"
#include "mpa/negotiator.h"
#include "tcp/stack/stack.h"

namespace esock::utcp {

class TxPool;

struct Options {
  mpa::Config mpa;   // initiator/responder is set by connect()/accept()
  ddp::QpConfig qp;  // pd is taken from the context
  std::size_t cq_depth = 4096;
  // Place out-of-order FPDUs early (the point of the integration). Off: every segment
  // ahead of a hole is left to TCP's reassembly, as over a kernel socket (for comparison).
  bool ooo_placement = true;
};

struct Stats {
  std::uint64_t fpdus_tx = 0;
  std::uint64_t fpdus_rx = 0;            // processed in order from TCP's byte stream
  std::uint64_t fpdus_rx_direct = 0;     // of those: placed straight from the frame (1 copy)
  std::uint64_t fpdus_placed_early = 0;  // placed out of order, completed in order
  std::uint64_t ooo_segments = 0;        // offered by TCP (ahead of a hole)
  std::uint64_t ooo_segments_placed = 0;
  std::uint64_t ooo_not_self_describing = 0;  // no FPDU header found / not whole FPDUs
  std::uint64_t ooo_crc_errors = 0;           // left to the in-order path, fatal there
  std::uint64_t ooo_not_placeable = 0;        // e.g. no receive posted yet, not data
  std::uint64_t placed_bytes = 0;             // payload octets placed out of order
  std::uint64_t tx_payload_bytes = 0;         // sent by reference (zero-copy)
  std::uint64_t tx_copied_bytes = 0;          // headers, Markers, pad, CRC (copied)
};

class Endpoint final : private tcp::TcbUser {
 public:
  enum class State { connecting, negotiating, established, failed, closed };

  // Active open: TCP connect, then MPA as the initiator once TCP is up. Null with *err set
  // (an errno) when TCP cannot even start.
  static std::unique_ptr<Endpoint> connect(tcp::Stack& stack, rnic::Context& ctx, tcp::Ipv4Addr dst,
                                           std::uint16_t port, Options opts, int* err);
  // Passive open on a connection taken from Stack::accept(); MPA as the responder.
  static std::unique_ptr<Endpoint> accept(tcp::Stack& stack, tcp::Connection* conn,
                                          rnic::Context& ctx, Options opts);
  // Releases the TCP connection: orderly if everything sent was ACKed, else reset (the
  // user's registered memory must not be read after the endpoint is gone).
  ~Endpoint() override;
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  // Work requests: 0 or an errno value (see ddp::Qp).
  int post_send(std::uint64_t wr_id, std::span<const ddp::Sge> sg, bool solicited = false,
                ddp::stag_t invalidate = 0);
  int post_recv(std::uint64_t wr_id, std::span<const ddp::Sge> sg);
  int post_write(std::uint64_t wr_id, std::span<const ddp::Sge> sg, ddp::stag_t rkey,
                 std::uint64_t remote_to);
  int post_read(std::uint64_t wr_id, std::span<const ddp::Sge> sink, ddp::stag_t rkey,
                std::uint64_t remote_to);
  std::size_t poll_send_cq(std::span<ddp::Completion> out) { return send_cq_.poll(out); }
  std::size_t poll_recv_cq(std::span<ddp::Completion> out) { return recv_cq_.poll(out); }

  // Processes received octets, completes acknowledged work requests and frames output.
  // True when anything happened (for the caller's idle back-off).
  bool progress();
  // Orderly close: what is queued goes out, then FIN (RFC 5040 section 5: the LLP closes).
  void close();
  // While on, octets after the MPA negotiation stay with TCP (its window pushes back), so
  // an owner can post its first receives before any peer message is processed (a Send with
  // no receive posted is an error, RFC 5040 section 7.1). Out-of-order segments are still
  // offered, and only those with a known target are placed.
  void hold_input(bool on) {
    hold_input_ = on;
    work_ = true;
  }

  State state() const { return state_; }
  const std::string& error() const { return error_; }
  const mpa::Negotiated& negotiated() const { return negotiator_.result(); }
  const Stats& stats() const { return stats_; }
  tcp::Connection* tcp_connection() { return conn_; }
  ddp::Qp& qp() { return qp_; }
  std::size_t placed_pending() const { return placed_.size(); }

 private:
  Endpoint(tcp::Stack& stack, tcp::Connection* conn, rnic::Context& ctx, Options opts,
           bool initiator);
  // TcbUser
  void on_established() override;
  void on_readable() override { work_ = true; }
  void on_writable() override { work_ = true; }
  void on_acked(std::uint32_t) override { work_ = true; }
  void on_closed(tcp::CloseReason r) override;
  bool on_out_of_order(std::uint32_t seq, bytes_view data, const BufRef& ref) override;
  void on_range_delivered(std::uint32_t seq, std::uint32_t len) override;

  // endpoint_rx.cc
  bool receive();
  void feed(bytes_view in);
  void deframe(bytes_view in);
  bool skip_placed(std::uint32_t len);
  enum class PlaceResult { placed, crc_error, not_self_describing, not_placeable };
  PlaceResult scan_and_place(bytes_view data, std::uint64_t pos, std::span<PlacedFpdu> rec,
                             std::size_t* n);
  bool place_in_order(bytes_view v);
  std::uint64_t rx_stream_pos(std::uint32_t seq) const;
  // endpoint_tx.cc
  bool transmit();
  bool frame_one();
  void complete_acked();
  void send_copy(bytes_view b);

  void established();
  void fail(std::string why);
  void release_tcp();

  tcp::Stack& stack_;
  tcp::Connection* conn_;
  ddp::CompletionQueue send_cq_, recv_cq_;
  Options opts_;
  State state_;
  std::string error_;
  mpa::Negotiator negotiator_;
  std::optional<mpa::Framer> framer_;
  std::optional<mpa::Deframer> deframer_;
  ddp::Qp qp_;
  TxPool* pool_;
  Stats stats_;
  bool work_ = true;
  bool hold_tx_until_rx_ = false;
  bool hold_input_ = false;
  bool fin_sent_ = false;
  bool close_requested_ = false;
  std::uint64_t acked_reported_ = 0;  // highest segment id passed to Qp::on_acked

  // Receive side, in TCP sequence space. rx_seq_: sequence number of the next octet the
  // recv queue hands us. The MPA stream starts after the peer's Request/Reply.
  std::uint32_t rx_seq_ = 0;
  std::uint64_t rx_pos_ = 0;  // MPA stream position of rx_seq_ (valid once established)
  bool rx_stream_started_ = false;
  struct Skip {
    std::uint32_t seq, len;
  };
  std::deque<Skip> skips_;  // placed ranges TCP delivered, in sequence order
  PlacedFpdus placed_;
};

}  // namespace esock::utcp
