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
// MPA, DDP and RDMAP themselves are the software RNIC engine (rnic/engine.h); this file is the
// transport under it: TCP sequence numbers to stream positions, placed ranges, records.
// One thread owns an endpoint and its stack (ARCHITECTURE.md). Callbacks from the stack do
// only what cannot wait (out-of-order placement); everything else happens in progress(),
// which the owner calls after each Stack::poll().
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>

#include "ddp/cq.h"
#include "ddp/qp.h"
#include "esock/rnic/context.h"
#include "esock/rnic/engine.h"
#include "esock/rnic/engine_verbs.h"
#include "esock/rnic/transport.h"
#include "mpa/negotiator.h"
#include "tcp/stack/stack.h"

namespace esock::utcp {

class TxPool;

struct Options {
  mpa::Config mpa;   // initiator/responder is set by connect()/accept()
  ddp::QpConfig qp;  // pd: 0 for the context's default, or one of Context::alloc_pd
  std::size_t cq_depth = 4096;
  // Place out-of-order FPDUs early (the point of the integration). Off: every segment
  // ahead of a hole is left to TCP's reassembly, as over a kernel socket (for comparison).
  bool ooo_placement = true;
};

using Stats = rnic::EngineStats;

class Endpoint final : public rnic::EndpointVerbs, private tcp::TcbUser, private rnic::Transport {
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

  // Processes received octets, completes acknowledged work requests and frames output.
  // True when anything happened (for the caller's idle back-off).
  bool progress();
  // Orderly close: what is queued goes out, then FIN (RFC 5040 section 5: the LLP closes).
  void close();
  // Abortive close (SO_LINGER with a zero time): TCP resets at once, nothing queued goes out.
  void abort();
  // While on, octets after the MPA negotiation stay with TCP (its window pushes back), so
  // an owner can post its first receives before any peer message is processed (a Send with
  // no receive posted is an error, RFC 5040 section 7.1). Out-of-order segments are still
  // offered, and only those with a known target are placed.
  void hold_input(bool on) {
    hold_input_ = on;
    poke();
  }
  // Called whenever TCP gave this endpoint something to do (a segment, an ACK, room, a
  // state change): a stack of many endpoints progresses only those (utcp users that poll
  // every endpoint every round need not set it).
  void set_wake(void (*fn)(void*), void* ctx) {
    wake_ = fn;
    wake_ctx_ = ctx;
  }

  State state() const;
  // A peer without esock (docs/sockets.md, "Peers without esock"), while MPA negotiates:
  // its first octets are not the MPA key (RFC 5044 section 7.1) and nothing of them was
  // consumed, or it has sent nothing at all.
  bool peer_not_mpa() const { return not_mpa_; }
  bool peer_silent() const { return !received_; }
  // Gives the TCP connection up as it is (what the peer sent still in its receive queue),
  // for a user that carries it as plain TCP; the endpoint is inert afterwards. Only before
  // the engine sent anything a plain peer would take for data (a responder's, or an
  // initiator whose peer spoke first and then gets the Request it ignores).
  tcp::Connection* release_plain();
  // Memory that octets sent by reference may point into (a copy-on-write's copy): freed
  // once TCP and the device let go of every one (TxPool::keep), which may be after us.
  void keep_while_sent(std::shared_ptr<void> mem);
  const std::string& error() const { return engine_.error(); }
  const mpa::Negotiated& negotiated() const { return engine_.negotiated(); }
  const Stats& stats() const { return engine_.stats(); }
  tcp::Connection* tcp_connection() { return conn_; }
  rnic::Engine& engine() override { return engine_; }
  ddp::Qp& qp() { return engine_.qp(); }
  std::size_t placed_pending() const { return engine_.placed_pending(); }

 private:
  Endpoint(tcp::Stack& stack, tcp::Connection* conn, rnic::Context& ctx, Options opts,
           bool initiator);
  // TcbUser
  void on_established() override;
  void on_readable() override { poke(); }
  void on_writable() override { poke(); }
  void on_acked(std::uint32_t) override { poke(); }
  void poke() {
    work_ = true;
    if (wake_ != nullptr) wake_(wake_ctx_);
  }
  void on_closed(tcp::CloseReason r) override;
  bool on_out_of_order(std::uint32_t seq, bytes_view data, const BufRef& ref) override;
  void on_range_delivered(std::uint32_t seq, std::uint32_t len) override;
  // rnic::Transport (endpoint_tx.cc)
  bool send_frame(bytes_view frame) override;
  std::size_t max_fpdu(bool markers) const override;
  bool can_send(std::size_t fpdu_len) const override;
  bool send_fpdu(std::span<const mpa::FramePiece> pieces, std::uint64_t seg_id) override;

  bool receive();  // endpoint_rx.cc
  bool key_check();
  bool transmit();
  bool complete_acked();  // true when the pool released more (completions may follow)
  void release_tcp();
  bool ending() const;

  tcp::Stack& stack_;
  tcp::Connection* conn_;
  TxPool* pool_;
  rnic::Engine engine_;
  bool tcp_up_ = false;  // TCP established: MPA started
  bool work_ = true;
  void (*wake_)(void*) = nullptr;
  void* wake_ctx_ = nullptr;
  bool hold_input_ = false;
  bool fin_sent_ = false;
  bool close_requested_ = false;
  bool received_ = false;             // the peer sent an octet
  bool key_seen_ = false;             // ... and its first 16 were the MPA key
  bool not_mpa_ = false;              // ... or they were not
  std::uint64_t acked_reported_ = 0;  // highest segment id passed to Engine::on_acked

  // Receive side, in TCP sequence space. rx_seq_: sequence number of the next octet the
  // recv queue hands us; its MPA stream position is engine_.rx_position().
  std::uint32_t rx_seq_ = 0;
  struct Skip {
    std::uint32_t seq, len;
  };
  std::deque<Skip> skips_;  // placed ranges TCP delivered, in sequence order
};

}  // namespace esock::utcp
