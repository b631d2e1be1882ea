// One TCP connection: the transmission control block and its state machine (RFC 9293
// section 3.3 for the variables, 3.10 for event processing), with window scaling and
// timestamps/PAWS (RFC 7323), SACK (RFC 2018) and SACK-based loss recovery (RFC 6675),
// NewReno for peers without SACK (RFC 6582), RTO (RFC 6298), pluggable congestion control
// (CUBIC by default, RFC 9438), delayed ACKs, Nagle, keepalive, zero-window probing and the
// RFC 5961 protections against blind in-window attacks.
//
// No I/O: the owner hands it (now, segment) and user calls, and it emits segments through a
// SegmentSink. Timers are a single deadline the owner polls (next_deadline / on_timer).
// Source files: tcb.cc (user calls, opening), input.cc (segment arrival), ack.cc (ACK
// processing and loss recovery), output.cc (what to send), timers.cc.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "base/buf_ref.h"
#include "base/bytes.h"
#include "base/time.h"
#include "tcp/dev/device.h"
#include "tcp/engine/config.h"
#include "tcp/engine/congestion.h"
#include "tcp/engine/drop_reason.h"
#include "tcp/engine/reassembly.h"
#include "tcp/engine/recv_queue.h"
#include "tcp/engine/rtt_estimator.h"
#include "tcp/engine/sack_scoreboard.h"
#include "tcp/engine/send_buffer.h"
#include "tcp/wire/addr.h"
#include "tcp/wire/tcp.h"

namespace esock::tcp {

// RFC 9293 section 3.3.2.
enum class TcpState : std::uint8_t {
  closed,
  syn_sent,
  syn_received,
  established,
  fin_wait_1,
  fin_wait_2,
  close_wait,
  closing,
  last_ack,
  time_wait,
};
const char* to_string(TcpState s);

enum class CloseReason : std::uint8_t {
  none,
  normal,   // both FINs exchanged and acknowledged (or TIME-WAIT over)
  reset,    // the peer sent an acceptable RST
  refused,  // RST in answer to our SYN
  timeout,  // retransmissions, SYN retries, keepalive or persist probes exhausted
  aborted,  // the local user aborted (we sent RST)
};
const char* to_string(CloseReason r);
int to_errno(CloseReason r);  // ECONNRESET, ECONNREFUSED, ETIMEDOUT, ... 0 for none/normal

// Where a TCB's segments go (the stack, through the interface).
class SegmentSink {
 public:
  virtual ~SegmentSink() = default;
  // false: the segment could not be queued (it is then lost like any other).
  virtual bool emit(Instant now, const FourTuple& t, const TcpRepr& hdr,
                    std::span<const TxPiece> payload) = 0;
};

// What a TCB tells the layer above it. All hooks are optional.
class TcbUser {
 public:
  virtual ~TcbUser() = default;
  virtual void on_established() {}
  virtual void on_readable() {}                      // data or the peer's FIN is ready
  virtual void on_writable() {}                      // send buffer space opened
  virtual void on_acked(std::uint32_t /*bytes*/) {}  // SND.UNA moved over this many data bytes
  virtual void on_closed(CloseReason) {}
  // Out-of-order placement (DDP early placement, ARCHITECTURE.md). TCP offers a segment
  // [seq, seq + data.size()) that arrived ahead of a hole, after trimming it to the
  // window, and only when (1) the range overlaps nothing TCP has stored out of order, and
  // (2) TCP has room to remember the range without its bytes. Return true when the upper
  // layer has consumed the bytes itself: TCP then keeps only the range (for ACK and SACK)
  // and never hands those octets over as data. Return false and TCP stores the bytes
  // (subject to its limits) like any other out-of-order data. Segments that fail (1) or
  // (2) are not offered; only their new octets are stored, as data.
  //
  // Exactly once: every octet of the stream reaches the upper layer once, in sequence
  // order, either as data in recv_queue() or as part of a range reported to
  // on_range_delivered. When RCV.NXT reaches a placed range (the hole before it filled),
  // TCP calls on_range_delivered(seq, len) with seq == the stream position right after
  // the last octet pushed into recv_queue(): the octets already queued (read or not)
  // precede [seq, seq + len), and octets queued after the call follow it. Each placed
  // octet is reported once, even when in-order data arrives that spans placed ranges (a
  // peer re-segmenting or coalescing its retransmissions): the covered octets of such data
  // are dropped and the ranges reported in their place; adjacent placed ranges may be
  // reported as one. Ranges are reported from inside segment processing: the callback may
  // read and consume recv_queue() (RecvQueue::read/consume) to keep its position, but must
  // not call other Tcb members; on_readable follows once the segment is processed.
  virtual bool on_out_of_order(std::uint32_t /*seq*/, bytes_view /*data*/, const BufRef&) {
    return false;
  }
  virtual void on_range_delivered(std::uint32_t /*seq*/, std::uint32_t /*len*/) {}
  // A timer was armed for `when` (Tcb::next_deadline() may be this or earlier): a stack of
  // many TCBs keeps them in a queue by deadline instead of asking every TCB each tick.
  virtual void on_deadline(Instant /*when*/) {}
};

struct TcbStats {
  std::uint64_t segs_in = 0, segs_out = 0;
  std::uint64_t bytes_in = 0, bytes_out = 0;  // payload, first transmissions only for out
  std::uint64_t retransmits = 0;              // segments sent again
  std::uint64_t rto_expirations = 0, fast_recoveries = 0;
  std::uint64_t dup_acks_in = 0;
  std::uint64_t ooo_segments = 0, ooo_placed_by_user = 0;
  std::uint64_t challenge_acks = 0;
  std::uint64_t window_probes = 0, keepalive_probes = 0;
  std::uint64_t peak_ooo_bytes = 0;
  // Segments (or their text) discarded unprocessed, one reason each (drop_reason.h). The
  // three counters after it predate it and are kept for their readers; each is a view of
  // the same events, not another count: ooo_dropped == drops[ooo_queue_full], paws_drops
  // == drops[paws], bad_acks_dropped == drops[ack_unsent] + drops[ack_too_old].
  DropCounters drops;
  std::uint64_t ooo_dropped = 0, paws_drops = 0, bad_acks_dropped = 0;
};

// A snapshot for tools and tests (what `ss -ti` shows for a kernel socket).
struct TcbInfo {
  TcpState state;
  std::uint32_t snd_una, snd_nxt, snd_max, snd_wnd, rcv_nxt, rcv_wnd;
  std::uint32_t cwnd, ssthresh;
  std::uint16_t peer_mss, smss;
  std::uint8_t snd_wscale, rcv_wscale;  // -1 encoded as 255 when not negotiated
  bool sack, timestamps, in_recovery;
  Duration srtt, rto;
  const char* congestion;
};

class Tcb {
 public:
  Tcb(const TcpConfig& cfg, const FourTuple& tuple, SegmentSink& sink, TcbUser* user);
  ~Tcb();
  Tcb(const Tcb&) = delete;
  Tcb& operator=(const Tcb&) = delete;

  // OPEN (RFC 9293 3.10.1). iss per RFC 6528; ts_offset per RFC 7323 5.4.
  void open_active(Instant now, std::uint32_t iss, std::uint32_t ts_offset);
  // A listener got `syn` (3.10.7.2): answer SYN-ACK, enter SYN-RECEIVED.
  void open_passive(Instant now, std::uint32_t iss, std::uint32_t ts_offset, const TcpRepr& syn);
  // SYN-RECEIVED as if open_passive had sent its SYN-ACK with ISN iss: for a connection
  // rebuilt from a SYN cookie (syn_cookie.h), whose SYN-ACK the stack sent without state.
  // `syn` is the client's SYN as the cookie rebuilt it; the ACK goes to on_segment next.
  void open_from_cookie(Instant now, std::uint32_t iss, std::uint32_t ts_offset,
                        const TcpRepr& syn);

  // SEGMENT ARRIVES (3.10.7).
  void on_segment(Instant now, const TcpRepr& seg, bytes_view payload, const BufRef& ref);
  // Timers: call on_timer when now >= next_deadline().
  Instant next_deadline() const;
  void on_timer(Instant now);
  // The device refused a segment earlier (emit returned false) and has room again.
  void on_device_ready(Instant now) { output(now); }
  bool device_blocked() const { return device_blocked_; }

  // SEND (3.10.2). Copies what fits; returns the count (0 when full or not sendable).
  std::size_t send(Instant now, bytes_view data);
  // Zero-copy send: `data` stays referenced through `ref` until ACKed. All or nothing.
  // end_of_record: never start a segment in the middle of this record unless it is
  // larger than a segment (MPA's FPDU alignment, RFC 5044 section 8). The record is what
  // was queued since the previous record's end; since each call may transmit at once, a
  // record built from several calls can go out before its end is queued: use send_record.
  bool send_ref(Instant now, bytes_view data, const BufRef& ref, bool end_of_record = false);
  // A whole upper-layer record (an MPA FPDU) in one call, all or nothing: parts with a ref
  // are queued by reference, parts with an empty ref are copied (TxPiece's convention).
  // Unlike a series of send/send_ref calls, no segment can go out between the parts, so a
  // record of at most max_record() octets and max_segment_pieces parts always starts and
  // ends a segment.
  bool send_record(Instant now, std::span<const TxPiece> parts);
  // The largest record that always travels in one segment: SMSS (RFC 9293 3.7.1, the
  // peer's MSS less the options every segment carries) once the handshake is done; before
  // it, the RFC's default of 536. MPA sizes its FPDUs (MULPDU, RFC 5044 section 8) from
  // it so that every segment starts with an FPDU header. SACK blocks never shrink this:
  // a record-bounded segment drops SACK blocks rather than split the record.
  std::uint32_t max_record() const { return smss_; }
  // Most buffer pieces one segment gathers (one per send/send_ref chunk it covers; runs of
  // copied bytes share a chunk). A record needing more is split.
  static constexpr std::size_t max_segment_pieces = 16;
  // RECEIVE (3.10.3): copies out in-order data, reopening the window.
  std::size_t recv(Instant now, mut_bytes out);
  // Zero-copy receive: read recv_queue() in place, then report what was consumed.
  RecvQueue& recv_queue() { return rcvq_; }
  const RecvQueue& recv_queue() const { return rcvq_; }
  void recv_consumed(Instant now, std::size_t n);
  // True once the peer's FIN has arrived and every byte before it is in the queue.
  bool peer_closed() const { return fin_rcvd_; }

  void close(Instant now);  // CLOSE (3.10.4): FIN after what is queued
  void abort(Instant now);  // ABORT (3.10.5): RST, drop everything
  // The application let go of the connection: from now on arriving data is answered with
  // RST (RFC 2525 2.17) and FIN-WAIT-2 is bounded by orphan_fin_wait2.
  void set_orphan(Instant now);
  void set_user(TcbUser* u) { user_ = u; }
  void set_nodelay(Instant now, bool on);

  TcpState state() const { return state_; }
  CloseReason close_reason() const { return close_reason_; }
  const FourTuple& tuple() const { return tuple_; }
  bool sendable() const;
  std::size_t send_space() const;
  std::size_t unsent() const;  // queued but not yet transmitted
  std::uint16_t effective_mss() const { return smss_; }
  std::uint32_t rcv_nxt() const { return rcv_nxt_; }
  std::uint32_t snd_una() const { return snd_una_; }
  std::uint32_t snd_nxt() const { return snd_nxt_; }
  std::uint32_t irs() const { return irs_; }
  // RFC 6191 section 2: whether a SYN for this connection, found in TIME-WAIT, opens a new
  // incarnation (it cannot be an old duplicate: a newer timestamp, or a sequence number
  // beyond the last seen) instead of being answered as a segment of this one.
  bool accepts_new_incarnation(const TcpRepr& syn) const;
  std::uint32_t iss() const { return iss_; }
  TcbInfo info() const;
  const TcbStats& stats() const { return stats_; }
  // Heap kept for buffers whatever they hold: the send buffer's copy block and the
  // out-of-order store's room. Given back on entering TIME-WAIT (docs/security.md).
  std::size_t reserved_bytes() const { return sndbuf_.reserved_bytes() + ooo_.reserved_bytes(); }
  const Reassembly& reassembly() const { return ooo_; }

 private:
  // input.cc
  bool syn_acked(Instant now, std::uint32_t ack);
  void segment_syn_sent(Instant now, const TcpRepr& seg, bytes_view payload, const BufRef& ref);
  bool check_timestamps(Instant now, const TcpRepr& seg);
  bool acceptable(const TcpRepr& seg, std::size_t payload_len) const;
  void take_options(const TcpRepr& syn);
  void process_text(Instant now, const TcpRepr& seg, bytes_view payload, const BufRef& ref);
  void deliver_in_order(bytes_view data, const BufRef& ref);
  void init_passive(Instant now, std::uint32_t iss, std::uint32_t ts_offset, const TcpRepr& syn);
  // Out-of-order data keeps its frame only within the same bounds as the in-order queue
  // (recv_queue.h): else it is copied here (data and ref then name the copy).
  void copy_if_frame_bound(bytes_view& data, BufRef& ref);
  // The out-of-order store's pieces are charged to the stack's frame budget (a piece holds
  // at most one frame; copies are charged too, which only errs on the safe side), and the
  // octets both queues hold to its byte budget. Absolute: any call corrects the account.
  void charge_rx_budget();
  // The stack's received octets are at their bound and this connection has its share.
  bool over_rx_memory(std::size_t len) const;
  void process_fin(Instant now, std::uint32_t fin_seq);
  void deliver_fin(Instant now);
  void update_ts_recent(Instant now, const TcpRepr& seg);
  // ack.cc
  bool process_ack(Instant now, const TcpRepr& seg, std::size_t payload_len);
  void on_new_ack(Instant now, std::uint32_t ack);
  void on_dup_ack(Instant now);
  void enter_recovery(Instant now);
  void our_fin_acked(Instant now);
  // output.cc
  void output(Instant now);
  bool send_new_data(Instant now, bool force_one);
  void send_recovery(Instant now);
  std::uint32_t send_segment(Instant now, std::uint32_t seq, std::uint32_t len, std::uint8_t flags);
  void retransmit(Instant now, std::uint32_t seq, std::uint32_t len);
  void fit_payload(TcpRepr& r, std::uint32_t seq, std::uint32_t& len, std::span<TxPiece> pieces,
                   std::size_t& n);
  void update_persist(Instant now);
  void send_ack(Instant now);
  void send_challenge_ack(Instant now);
  void send_rst(Instant now, std::uint32_t seq);
  void send_syn(Instant now);
  void fill_options(TcpRepr& r, bool syn) const;
  std::uint32_t receive_window() const;
  std::uint16_t window_field(bool syn);
  bool window_update_due() const;
  std::uint32_t ts_now(Instant now) const;
  // timers.cc
  void arm_rto(Instant now);
  void on_rto(Instant now);
  void on_persist(Instant now);
  void on_keepalive(Instant now);
  void enter_time_wait(Instant now);
  void arm_keepalive(Instant now);
  // tcb.cc
  void count_drop(DropReason r);  // the one place TcbStats::drops (and its aliases) move
  void set_state(TcpState s);
  void finish(CloseReason r);
  // Sets one of the deadlines below and tells the user (TcbUser::on_deadline).
  void arm(Instant& deadline, Instant when) {
    deadline = when;
    if (user_) user_->on_deadline(when);
  }
  std::uint32_t data_end() const;  // sequence number after the last queued data byte
  std::uint32_t flight_size() const;
  std::uint32_t fin_seq() const { return data_end(); }

  TcpConfig cfg_;
  FourTuple tuple_;
  SegmentSink& sink_;
  TcbUser* user_;
  TcpState state_ = TcpState::closed;
  CloseReason close_reason_ = CloseReason::none;
  bool passive_ = false;

  // Send sequence space (3.3.1). snd_max: highest sequence number sent + 1 (snd_nxt goes
  // back to snd_una after an RTO, go-back-N).
  std::uint32_t iss_ = 0, snd_una_ = 0, snd_nxt_ = 0, snd_max_ = 0;
  std::uint32_t snd_wnd_ = 0, snd_wl1_ = 0, snd_wl2_ = 0;
  std::uint32_t max_snd_wnd_ = 0;  // RFC 5961 5.2 MAX.SND.WND
  // Receive sequence space.
  std::uint32_t irs_ = 0, rcv_nxt_ = 0, rcv_adv_ = 0;  // rcv_adv: right edge advertised
  // Negotiated options.
  std::uint8_t snd_wscale_ = 0, rcv_wscale_ = 0;
  bool ws_ok_ = false, sack_ok_ = false, ts_ok_ = false;
  std::uint16_t peer_mss_ = 536, smss_ = 536;
  // RFC 7323 timestamps and PAWS.
  std::uint32_t ts_offset_ = 0, ts_recent_ = 0, last_ack_sent_ = 0;
  Instant ts_recent_time_{};

  SendBuffer sndbuf_;
  RecvQueue rcvq_;
  Reassembly ooo_;
  bool fin_queued_ = false;  // CLOSE issued: a FIN follows the queued data
  bool fin_acked_ = false;   // ...and the peer has acknowledged it
  bool fin_rcvd_ = false;
  std::optional<std::uint32_t> peer_fin_seq_;  // a FIN that arrived ahead of a hole
  bool orphan_ = false;

  RttEstimator rtt_;
  std::unique_ptr<CongestionControl> cc_;
  SackScoreboard sb_;
  bool rtt_timing_ = false;
  std::uint32_t rtt_seq_ = 0;
  Instant rtt_start_{};
  bool syn_retransmitted_ = false;
  unsigned retries_ = 0;

  bool in_recovery_ = false;
  std::uint32_t recovery_point_ = 0;  // RFC 6675 RecoveryPoint / RFC 6582 "recover"
  std::uint32_t dupacks_ = 0;
  std::uint32_t newreno_inflation_ = 0;
  Instant last_send_{};

  bool ack_now_ = false;
  bool device_blocked_ = false;  // the last emit was refused: nothing more until ready
  unsigned segs_since_ack_ = 0;

  Instant rto_deadline_ = Instant::never();
  Instant delack_deadline_ = Instant::never();
  Instant persist_deadline_ = Instant::never();
  unsigned persist_backoff_ = 0;
  unsigned probes_unanswered_ = 0;
  Instant keepalive_deadline_ = Instant::never();
  Instant last_rx_{};
  Instant close_deadline_ = Instant::never();  // TIME-WAIT or orphaned FIN-WAIT-2

  Instant challenge_window_{};
  std::uint32_t challenges_in_window_ = 0;

  TcbStats stats_;
  std::size_t ooo_charged_ = 0;    // ooo_ pieces counted in the stack's RxFrameBudget
  std::size_t bytes_charged_ = 0;  // received octets (rcvq_ + ooo_) counted there
};

}  // namespace esock::tcp
