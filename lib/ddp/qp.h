// The queue pair engine: RDMAP (RFC 5040) over DDP (RFC 5041), no I/O. The LLP side pulls
// outgoing DDP segments with next_segment() and pushes received, CRC-checked ULPDUs with
// on_segment(); the verbs side posts work requests and polls the completion queues.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <vector>

#include "base/bytes.h"
#include "ddp/coverage.h"
#include "ddp/cq.h"
#include "ddp/stag.h"
#include "ddp/terminate.h"
#include "ddp/tripwire.h"
#include "ddp/wire.h"
#include "ddp/wire_ext.h"

namespace esock::ddp {

struct Sge {
  std::uint8_t* addr;
  std::uint32_t length;
  stag_t lkey;
};

struct QpConfig {
  std::uint32_t pd = 0;  // from StagTable::alloc_pd (0 is none: every STag check fails)
  std::uint16_t ird = 16, ord = 16;
  std::uint32_t mulpdu = 1024;
  std::uint32_t sq_depth = 256, rq_depth = 256;
  // RFC 7306's messages (Immediate Data, Atomic Request and Response): both ends agreed to
  // them (RFC 7306 section 1.1). Off, they are an unexpected opcode and cannot be posted.
  bool rdmap_ext = false;
};

// One outgoing DDP segment (= one ULPDU for MPA): header bytes owned by the struct plus a
// payload view into registered memory (or the Qp's Terminate buffer) that stays valid
// until the segment is framed (or, with complete_on_ack, until it is acknowledged).
struct OutSegment {
  std::array<std::uint8_t, 80> hdr;  // up to an Atomic Request: 18 + 52 octets
  std::size_t hdr_len;
  bytes_view payload;
  std::uint64_t id = 0;  // 1, 2, 3, ... in hand-out order; see on_acked()
};

// RDMAP stream states (RFC 5040 section 5 and the verbs QP states it refers to):
// idle until the LLP is up, rts while streaming, closing after a ULP close request,
// terminate while a Terminate is waiting to go out, error once the stream is dead.
enum class QpState { idle, rts, closing, terminate, error };

// RFC 6581 section 3: the zero-length operation that carries the Ready-To-Receive message
// (the negotiated type itself is mpa::Rtr, which also has "none").
enum class RtrOp : std::uint8_t { send, write, read };

// Smallest MULPDU the engine accepts: a Terminate with both header copies must fit in one
// segment (RFC 5040 section 4.8).
inline constexpr std::uint32_t min_mulpdu = 72;
inline constexpr std::size_t max_sge = 16;

class Qp {
 public:
  Qp(QpConfig, StagTable&, CompletionQueue& send_cq, CompletionQueue& recv_cq);

  void set_mulpdu(std::uint32_t);  // clamped to [min_mulpdu, 65535]
  void set_ird_ord(std::uint16_t ird, std::uint16_t ord);
  int rts();    // idle -> rts once the LLP is established; EINVAL otherwise
  int close();  // rts -> closing: no new WRs, queued ones still go out

  // Verbs. 0 or errno: EINVAL bad arguments (too many SGEs, an SGE failing its lkey
  // check, send+write both zero), ENOMEM queue full, ENOTCONN wrong state.
  int post_send(std::uint64_t wr_id, std::span<const Sge> sg, bool solicited = false,
                stag_t invalidate = 0);
  int post_recv(std::uint64_t wr_id, std::span<const Sge> sg);
  int post_write(std::uint64_t wr_id, std::span<const Sge> sg, stag_t rkey,
                 std::uint64_t remote_to);
  // Each sink SGE becomes one RDMA Read Request (one Data Sink STag/TO per request,
  // RFC 5040 section 4.4) reading consecutive source bytes; each uses one ORD slot.
  int post_read(std::uint64_t wr_id, std::span<const Sge> sink, stag_t rkey,
                std::uint64_t remote_to);

  // RFC 7306 (qp_ext.cc). EOPNOTSUPP unless set_rdmap_ext(true); otherwise as above.
  void set_rdmap_ext(bool on) { cfg_.rdmap_ext = on; }
  bool rdmap_ext() const { return cfg_.rdmap_ext; }
  // Immediate Data (section 6): 8 octets, the value big-endian, into one of the peer's
  // receive buffers; with solicited, Immediate Data with Solicited Event.
  int post_send_imm(std::uint64_t wr_id, std::uint64_t imm, bool solicited = false);
  // An RDMA Write followed by Immediate Data: section 7 orders the Immediate Data's
  // completion at the peer after the Write's placement (verbs' Write with Immediate). One
  // work request, one completion (Opcode::write_imm, byte_len the Write's length).
  int post_write_imm(std::uint64_t wr_id, std::span<const Sge> sg, stag_t rkey,
                     std::uint64_t remote_to, std::uint64_t imm, bool solicited = false);
  // An Atomic Request (section 5.2.1) on the peer's region req.stag at req.to, with req.op,
  // the data and masks from `req` (req_id is assigned here). The Original Remote Data Value
  // lands in `result` (8 octets of a region with local write, host byte order) when the
  // Atomic Response arrives. Takes an ORD slot, as a Read does (section 5.2).
  int post_atomic(std::uint64_t wr_id, const Sge& result, const AtomicRequest& req);

  // Tripwires (tripwire.h) fed by this queue pair's in-order RDMA Write path; nullptr: none.
  void set_tripwires(TripwireSet* t) { tripwires_ = t; }

  // RFC 6581: the initiator sends a zero-length message as its first FPDU; the responder
  // sends nothing until it arrives (a Read RTR is answered with a zero-length Read
  // Response). RTRs never reach the application.
  void send_rtr(RtrOp);
  void expect_rtr(RtrOp);

  // LLP side. Segments are at most mulpdu octets (header + payload); a segment never
  // spans two SGEs. Send/Write WRs complete when their last segment is handed out, or,
  // after set_complete_on_ack(true), when on_acked() covers that segment's id.
  bool next_segment(OutSegment& out);
  bool tx_pending() const;
  void set_complete_on_ack(bool on) { complete_on_ack_ = on; }
  void on_acked(std::uint64_t seg_id);

  // One complete, CRC-checked ULPDU. Segments may arrive in any order (see README).
  void on_segment(bytes_view ulpdu);

  // Placement apart from delivery, RFC 5041 section 5: Placement may happen in any order,
  // Delivery happens in order. Used for segments ahead of a hole and for aligned in-order
  // segments placed straight from the received frame. place_payload() validates a data segment
  // (tagged RDMA Write or Read Response, or an untagged Send on QN 0, payload non-empty) against
  // the current state exactly as on_segment() would now, and on success copies its payload to the
  // target with no other state change. False (nothing written, nothing changed) for any
  // other segment or any failing check: the caller then keeps the segment and hands it to
  // on_segment() at its place in the stream.
  // header: exactly the DDP(+RDMAP) header octets (DdpHeader::length()); payload: the
  // payload as gather pieces in order (MPA Markers already stepped over), any split.
  bool place_payload(bytes_view header, std::span<const bytes_view> payload);
  // Later, at the segment's place in the stream: everything on_segment(header + payload)
  // would do (checks, MSN bookkeeping, completions, Send with Invalidate, Terminate),
  // except copying the payload again. Only for segments place_payload() accepted; any other
  // header is a caller bug and ends the stream with an RDMAP Local Catastrophic Error.
  void on_placed_segment(bytes_view header, std::uint32_t payload_len);
  void llp_error(TerminateCause);  // MPA/TCP error: send Terminate, then error
  void llp_closed();               // orderly close: flush WRs; idle if nothing was pending

  QpState state() const { return state_; }
  std::optional<TerminateCause> terminate_cause() const { return cause_; }
  bool terminate_received() const { return term_received_; }
  std::size_t outstanding_reads() const { return orq_.size(); }  // ours, against ORD
  std::size_t incoming_reads() const;                            // peer's, against IRD

  // Whether this queue pair may still read the memory of region `stag` once its owner has
  // deregistered (or invalidated) it: octets it handed to the transport by reference
  // (complete_on_ack) that the transport has not released yet (TCP may retransmit them).
  // Nothing else can read it: every segment sourced from registered memory re-checks its
  // region when it is built (a Read Response against RFC 5040 section 4.4's checks, a
  // Send/Write against its lkey), since the owner may take the memory back mid-message (an
  // ESTP writer released by RDMADONE, esock_dereg_mr, RAWMODE close). The owner must not
  // reuse the memory until this is false.
  bool reads_from(stag_t stag) const;
  // Copy-on-write (StagTable::move): the region's memory changes now. Returns the last
  // segment handed out by reference from the old memory that the transport has not
  // released yet (0: none), for reads_from(stag, held); segments from the new memory are
  // counted apart from it.
  std::uint64_t seal_sourced(stag_t stag);
  // Whether segments up to `held` (seal_sourced's answer) from region `stag` are still held
  // by the transport: the old memory may still be read.
  bool reads_from(stag_t stag, std::uint64_t held) const;

 private:
  struct SqWr {
    std::uint64_t wr_id = 0;
    Opcode op = Opcode::send;
    std::vector<Sge> sg;
    bool solicited = false;
    stag_t inv = 0;
    stag_t rkey = 0;
    std::uint64_t remote_to = 0;
    std::uint32_t total = 0;
    bool silent = false;           // completes without a completion (the Write of a write_imm)
    std::uint64_t imm = 0;         // send_imm, write_imm
    AtomicRequest atomic{};        // fetch_add, cmp_swap: the request (stag/to are the peer's)
    std::size_t reads_issued = 0;  // Read Requests sent (post_read)
    std::size_t reads_left = 0;    // Read Responses not yet fully placed
    bool started = false;
    bool handed_out = false;  // last segment handed to the LLP
    std::uint64_t last_seg_id = 0;
    bool done = false;
    Status status = Status::success;
  };
  struct RecvWr {
    std::uint64_t wr_id = 0;
    std::vector<Sge> sg;
    std::uint64_t capacity = 0;
    std::uint64_t placed = 0;
    std::uint64_t total = 0;
    bool last_seen = false;
    RdmapOpcode opcode = RdmapOpcode::send;
    stag_t inv = 0;
    Status status = Status::success;  // set when this WR is the cause of a failure
    Coverage placed_ranges{};         // which octets (by MO): a second placement is refused
  };
  struct OrqEntry {      // one of our outstanding Read Requests (or Atomic Requests)
    SqWr* wr = nullptr;  // nullptr: the Read RTR
    stag_t sink_stag = 0;
    std::uint64_t sink_to = 0;
    std::uint32_t size = 0;
    std::uint64_t placed = 0;
    bool last_seen = false;
    Coverage placed_ranges{};  // which octets (by offset in the sink)
    bool atomic = false;       // sink: the 8-octet result; answered on QN 3
    std::uint32_t req_id = 0;
    std::uint32_t resp_msn = 0;  // the QN 3 MSN of its Atomic Response
  };
  // The largest request QN 1 carries, as received: the Terminate copies it.
  static constexpr std::size_t qn1_request_max = untagged_hdr_len + atomic_request_len;
  struct IrqEntry {  // a peer's Read Request (or Atomic Request) being answered
    ReadRequest rr;
    std::uint32_t sent = 0;
    // The request as received: the Terminate copies it if the source goes away mid-response.
    std::array<std::uint8_t, qn1_request_max> bytes{};
    std::uint32_t ulpdu_len = 0;
    bool atomic = false;
    AtomicRequest ar{};
  };
  struct Sourced {  // segments handed out by reference from one region, not yet released
    std::uint64_t last_seg_id = 0;
    stag_t stag = 0;
    bool sealed = false;  // seal_sourced: later segments of the region start a new run
  };
  struct PendingRr {  // a Read (or Atomic) Request that arrived ahead of a lower MSN
    ReadRequest rr;
    std::array<std::uint8_t, qn1_request_max> bytes{};
    std::uint32_t ulpdu_len = 0;
    bool atomic = false;
    AtomicRequest ar{};
  };
  struct Cursor {  // the message being segmented; messages never interleave on the wire
    enum class Kind : std::uint8_t { none, sq, resp } kind = Kind::none;
    std::size_t sge = 0;
    std::uint32_t sge_off = 0;
    std::uint32_t msg_off = 0;
  };

  // The send-queue operations that take an ORD slot: RFC 7306 section 5.2 puts Atomic
  // Requests on the Read Request queue and under the same ORD/IRD limits.
  static constexpr bool uses_ord(Opcode op) {
    return op == Opcode::read || op == Opcode::fetch_add || op == Opcode::cmp_swap;
  }
  int check_sges(std::span<const Sge> sg, std::uint32_t access, std::uint64_t& total) const;
  bool can_post_sq() const;
  int queue_sq(SqWr wr, std::span<const Sge> sg, std::uint32_t access);
  // tx
  void start_segment(OutSegment& out, const DdpHeader& h);
  bool emit_sq(OutSegment& out);
  bool emit_resp(OutSegment& out);
  void note_sourced(stag_t stag, std::uint64_t seg_id);
  void emit_read_request(OutSegment& out, SqWr& wr);
  void emit_atomic_request(OutSegment& out, SqWr& wr);
  bool emit_atomic_response(OutSegment& out);
  void emit_immediate(OutSegment& out, SqWr& wr);
  // rx. One received segment: its header, the raw octets a Terminate copies from (the
  // whole ULPDU, or only the header when the payload was placed early), its length, and
  // the payload to place (empty when place_payload() already placed it).
  struct Rx {
    DdpHeader h;
    bytes_view raw;
    std::size_t ulpdu_len = 0;
    std::uint32_t len = 0;  // payload octets
    std::span<const bytes_view> pieces;
    bool placed = false;
    bytes_view payload() const { return raw.subspan(h.length()); }  // only when !placed
  };
  // Where a data segment goes, or why it may not go there: the checks on_segment makes,
  // split from the state change so place_payload() can run them alone.
  struct Target {
    std::optional<TerminateCause> cause;
    std::uint8_t* dst = nullptr;  // tagged
    std::size_t index = 0;        // rq_[index] (Send) or orq_[index] (Read Response)
    bool length_error = false;    // the receive WR completes with local_length_error
  };
  void dispatch(const Rx& s);
  Target check_write(const DdpHeader& h, std::uint32_t len) const;
  Target check_read_response(const DdpHeader& h, std::uint32_t len) const;
  Target check_send(const DdpHeader& h, std::uint32_t len) const;
  void rx_write(const Rx& s);
  void rx_read_response(const Rx& s);
  void rx_send(const Rx& s);
  void rx_read_request(const Rx& s);
  void rx_terminate(const Rx& s);
  bool rx_rtr(const Rx& s);
  void accept_request(const PendingRr& p);
  bool parse_qn1_request(const Rx& s, PendingRr& p);
  void rx_atomic_response(const Rx& s);
  std::uint64_t immediate_of(const RecvWr& wr) const;
  void deliver_sends(const Rx& s);
  void complete_reads();
  // errors and completion
  void fail(TerminateCause c, bytes_view offending) { fail(c, offending, offending.size()); }
  void fail_rx(TerminateCause c, const Rx& s) { fail(c, s.raw, s.ulpdu_len); }
  // offending: the segment's header octets at least; seg_len: its whole length (header +
  // payload) for the Terminate's DDP Segment Length.
  void fail(TerminateCause c, bytes_view offending, std::size_t seg_len);
  void flush(std::optional<Status> first_started);
  void drain_sq();

  QpConfig cfg_;
  StagTable& stags_;
  CompletionQueue& scq_;
  CompletionQueue& rcq_;
  QpState state_ = QpState::idle;

  std::deque<SqWr> sq_;
  std::size_t sq_next_ = 0;  // first WR of sq_ not fully issued
  std::deque<RecvWr> rq_;
  std::deque<OrqEntry> orq_;
  std::deque<IrqEntry> irq_;
  std::deque<Sourced> sourced_;  // complete_on_ack only, in segment id order
  std::vector<std::optional<PendingRr>> rr_ahead_;
  Cursor cur_;

  std::array<std::uint32_t, 4> tx_msn_{1, 1, 1, 1};  // next MSN per QN (RFC 5041 6.3)
  std::uint32_t rq_msn_ = 1;                         // MSN of rq_.front() (QN 0)
  std::uint32_t rr_msn_ = 1;                         // next in-order Read Request MSN (QN 1)
  std::uint32_t ar_msn_ = 1;                         // QN 3 MSN of the next Atomic Request's answer
  std::uint32_t next_req_id_ = 1;                    // Atomic Request Identifiers
  TripwireSet* tripwires_ = nullptr;

  std::optional<RtrOp> rtr_to_send_;
  std::optional<RtrOp> rtr_expected_;

  bool complete_on_ack_ = false;
  std::uint64_t next_seg_id_ = 1;

  std::optional<TerminateCause> cause_;
  bool term_pending_ = false;
  bool term_received_ = false;
  std::array<std::uint8_t, terminate_max_len> term_buf_{};
  std::size_t term_len_ = 0;
};

}  // namespace esock::ddp
