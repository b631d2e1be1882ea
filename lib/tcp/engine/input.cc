// SEGMENT ARRIVES (RFC 9293 3.10.7.3 for SYN-SENT, 3.10.7.4 for the other states), with
// PAWS (RFC 7323 5) and the RFC 5961 checks on RST and SYN. Every path that discards a
// segment, or its text, without processing it counts one DropReason (drop_reason.h).
#include <algorithm>
#include <cstring>

#include "base/seq32.h"
#include "tcp/engine/tcb.h"

namespace esock::tcp {

namespace {
// RFC 7323 5.5: a TS.Recent older than 24 days may have wrapped; it is no longer used.
constexpr Duration paws_idle_limit = std::chrono::hours(24 * 24);

// What is left of a segment once its ACK was used: text or a FIN that would be lost if
// the connection closed under it.
bool has_text_or_fin(const TcpRepr& seg, bytes_view payload) {
  return !payload.empty() || seg.has(tcp_flag::fin);
}
}  // namespace

void Tcb::on_segment(Instant now, const TcpRepr& seg, bytes_view payload, const BufRef& ref) {
  ++stats_.segs_in;
  last_rx_ = now;
  switch (state_) {
    case TcpState::closed:
      // The owner answers segments for closed connections (3.10.7.1, the stack's
      // no_connection); one that still reaches the TCB is dropped here.
      count_drop(DropReason::conn_closed);
      return;
    case TcpState::syn_sent:
      segment_syn_sent(now, seg, payload, ref);
      output(now);
      return;
    default:
      break;
  }

  // Simultaneous open (RFC 9293 figure 8): the peer's SYN-ACK reaches us in SYN-RECEIVED.
  // Its SYN repeats what we have; its ACK completes our side. Process it as that ACK.
  if (state_ == TcpState::syn_received && !passive_ && seg.has(tcp_flag::syn) &&
      seg.has(tcp_flag::ack) && !seg.has(tcp_flag::rst) && seg.seq == irs_ && payload.empty()) {
    TcpRepr ack = seg;
    ack.flags = static_cast<std::uint8_t>(seg.flags & ~tcp_flag::syn);
    ack.seq = irs_ + 1;
    on_segment(now, ack, payload, ref);
    ack_now_ = true;
    output(now);
    return;
  }

  // First: PAWS (RFC 7323 5.3 R1-R2) runs before the sequence number check
  // (check_timestamps counts ts_missing or paws).
  if (!check_timestamps(now, seg)) {
    output(now);
    return;
  }

  // First (3.10.7.4): the sequence number test. Unacceptable segments get an ACK (unless
  // they carry RST) and are dropped; this is also how window probes and keepalives are
  // answered.
  if (!acceptable(seg, payload.size())) {
    if (seg.has(tcp_flag::rst)) {
      // RFC 5961 3.2 (and 3.10.7.4 first): an RST outside the window is dropped without
      // an answer, so a blind attacker learns nothing from it.
      count_drop(DropReason::rst_out_of_window);
    } else {
      // Starting before RCV.NXT: a duplicate, a keepalive or a window probe (3.8.4,
      // 3.8.6.1), answered with the ACK below. Otherwise it starts past the window (or
      // carries data into a zero window): the sender overran what we offered.
      count_drop(seq_lt(seg.seq, rcv_nxt_) ? DropReason::old_sequence : DropReason::beyond_window);
      // A retransmitted SYN from a peer whose SYN-ACK was lost: answer it again.
      if (state_ == TcpState::syn_received && seg.has(tcp_flag::syn) && seg.seq == irs_)
        send_syn(now);
      else
        ack_now_ = true;
      // A retransmitted FIN in TIME-WAIT restarts the 2 MSL timeout (3.10.7.4 eighth).
      if (state_ == TcpState::time_wait && seg.has(tcp_flag::fin))
        arm(close_deadline_, now + 2 * cfg_.msl);
    }
    output(now);
    return;
  }

  // Second: RST (RFC 5961 3.2). Only an exact match resets; any other in-window RST is
  // answered with a challenge ACK, so a blind attacker must guess RCV.NXT exactly.
  if (seg.has(tcp_flag::rst)) {
    if (seg.seq == rcv_nxt_) {
      // SYN-RECEIVED from a passive open "returns to LISTEN": the listener still exists,
      // so closing this half-open connection is that.
      finish(CloseReason::reset);
    } else {
      // RFC 5961 3.2: in the window but not exactly RCV.NXT: a challenge ACK (rate
      // limited, RFC 5961 7) lets a real peer resend its RST with the right number; the
      // segment is dropped either way.
      count_drop(DropReason::rst_inexact);
      send_challenge_ack(now);
    }
    return;
  }

  // Fourth: SYN in a synchronized state (RFC 5961 4.2, replacing 3.10.7.4's reset):
  // challenge ACK, drop. A restarted peer answers the ACK with an RST at RCV.NXT.
  if (seg.has(tcp_flag::syn)) {
    count_drop(DropReason::syn_in_window);
    send_challenge_ack(now);
    return;
  }

  // Fifth: the ACK field. 3.10.7.4: "if the ACK bit is off, drop the segment and return"
  // (once synchronized, every segment carries an acknowledgment, 3.4).
  if (!seg.has(tcp_flag::ack)) {
    count_drop(DropReason::no_ack);
    return;
  }
  if (state_ == TcpState::syn_received) {
    if (!(seq_lt(snd_una_, seg.ack) && seq_leq(seg.ack, snd_max_))) {
      // 3.10.7.4 fifth, SYN-RECEIVED: an ACK outside (SND.UNA, SND.NXT] does not
      // acknowledge our SYN: <SEQ=SEG.ACK><CTL=RST>, drop.
      count_drop(DropReason::handshake_bad_ack);
      send_rst(now, seg.ack);
      return;
    }
    snd_wnd_ = std::uint32_t{seg.window} << snd_wscale_;
    max_snd_wnd_ = std::max(max_snd_wnd_, snd_wnd_);
    snd_wl1_ = seg.seq;
    snd_wl2_ = seg.ack;
    // Our SYN is acknowledged: SND.UNA moves over it (data follows below).
    if (!syn_acked(now, iss_ + 1)) {
      // The user closed the connection from on_established: its text has no reader.
      if (has_text_or_fin(seg, payload)) count_drop(DropReason::conn_closed);
      return;
    }
  }
  // process_ack counts ack_unsent or ack_too_old when it refuses the segment.
  if (!process_ack(now, seg, payload.size())) {
    output(now);
    return;
  }
  if (state_ == TcpState::closed) {
    // The ACK finished the connection (LAST-ACK, or a user that closed from a callback):
    // whatever else the segment carries has nowhere to go.
    if (has_text_or_fin(seg, payload)) count_drop(DropReason::conn_closed);
    return;
  }
  update_ts_recent(now, seg);

  // Seventh: segment text (sixth, URG, is not supported: urgent data arrives inline, the
  // pointer is ignored).
  if (!payload.empty()) {
    if (orphan_) {
      // Nobody will read this: RFC 2525 2.17 says reset rather than let data vanish.
      count_drop(DropReason::orphan_data);
      abort(now);
      return;
    }
    process_text(now, seg, payload, ref);  // counts what it discards
  }

  // Eighth: FIN.
  if (seg.has(tcp_flag::fin))
    process_fin(now, seg.seq + static_cast<std::uint32_t>(payload.size()));
  output(now);
}

void Tcb::segment_syn_sent(Instant now, const TcpRepr& seg, bytes_view payload, const BufRef& ref) {
  bool ack_ok = false;
  if (seg.has(tcp_flag::ack)) {
    // 3.10.7.3 first: an ACK outside (ISS, SND.NXT] is not for our SYN (an old
    // connection's segment): answered with a reset unless it is one, and dropped.
    if (seq_leq(seg.ack, iss_) || seq_gt(seg.ack, snd_max_)) {
      count_drop(DropReason::handshake_bad_ack);
      if (!seg.has(tcp_flag::rst)) send_rst(now, seg.ack);
      return;
    }
    ack_ok = true;
  }
  if (seg.has(tcp_flag::rst)) {
    // Second: only a RST that acknowledges our SYN counts (RFC 5961 3.2 keeps this); one
    // without an ACK cannot be told from a blind attack: drop it.
    if (ack_ok)
      finish(CloseReason::refused);
    else
      count_drop(DropReason::syn_sent_rst_no_ack);
    return;
  }
  // Fifth: "if neither of the SYN or RST bits is set, then drop the segment and return".
  if (!seg.has(tcp_flag::syn)) {
    count_drop(DropReason::syn_sent_no_syn);
    return;
  }

  irs_ = seg.seq;
  rcv_nxt_ = seg.seq + 1;
  rcv_adv_ = rcv_nxt_ + receive_window();  // what our SYN offered (see window_field)
  take_options(seg);
  if (ts_ok_) {
    ts_recent_ = seg.options.timestamps->tsval;
    ts_recent_time_ = now;
  }
  snd_wnd_ = seg.window;  // unscaled in a SYN (RFC 7323 2.2)
  max_snd_wnd_ = snd_wnd_;
  snd_wl1_ = seg.seq;
  snd_wl2_ = seg.ack;

  if (ack_ok) {
    ack_now_ = true;
    if (!syn_acked(now, seg.ack)) {
      // The user closed the connection from on_established: its text has no reader.
      if (has_text_or_fin(seg, payload)) count_drop(DropReason::conn_closed);
      return;
    }
    if (!payload.empty()) process_text(now, seg, payload, ref);
    if (seg.has(tcp_flag::fin))
      process_fin(now, seg.seq + 1 + static_cast<std::uint32_t>(payload.size()));
  } else {
    // Simultaneous open: SYN-RECEIVED, answer with SYN-ACK (same ISS and options).
    // 3.10.7.4 fourth would queue text in the SYN until ESTABLISHED; we keep none (no TCP
    // Fast Open), so the peer sends it again once our SYN-ACK acknowledges only its SYN.
    if (has_text_or_fin(seg, payload)) count_drop(DropReason::syn_data);
    set_state(TcpState::syn_received);
    send_syn(now);
  }
}

// Our SYN is acknowledged (either side of the handshake): ESTABLISHED. False when the
// user closed the connection from on_established.
bool Tcb::syn_acked(Instant now, std::uint32_t ack) {
  snd_una_ = ack;
  // RFC 6298: a sample from the SYN only if it was never retransmitted (Karn); after a
  // retransmitted SYN with no sample, 5.7 sets the RTO to 3 s for the data phase.
  if (rtt_timing_ && !syn_retransmitted_) rtt_.on_sample(now - rtt_start_);
  if (syn_retransmitted_) rtt_.on_syn_loss_established();
  rtt_timing_ = false;
  retries_ = 0;
  rto_deadline_ = Instant::never();
  set_state(TcpState::established);
  arm_keepalive(now);
  if (user_) user_->on_established();
  if (state_ == TcpState::closed) return false;
  if (fin_queued_) set_state(TcpState::fin_wait_1);
  return true;
}

// RFC 7323 3.2 and 5.3. Returns false when the segment must be dropped.
bool Tcb::accepts_new_incarnation(const TcpRepr& syn) const {
  if (state_ != TcpState::time_wait || !syn.has(tcp_flag::syn) ||
      syn.has(tcp_flag::ack | tcp_flag::rst))
    return false;
  const bool seq_beyond = seq_gt(syn.seq, rcv_nxt_);
  // "If TCP Timestamps would be enabled for the new incarnation": both incarnations use
  // them, so the timestamp decides (an equal one with a higher sequence number too).
  if (ts_ok_ && cfg_.timestamps && syn.options.timestamps) {
    const std::uint32_t tsval = syn.options.timestamps->tsval;
    return seq_gt(tsval, ts_recent_) || (tsval == ts_recent_ && seq_beyond);
  }
  return seq_beyond;  // the sequence number alone, with or without timestamps before
}

bool Tcb::check_timestamps(Instant now, const TcpRepr& seg) {
  if (!ts_ok_) return true;
  if (!seg.options.timestamps) {
    // 3.2: once negotiated, a non-RST segment without TSopt SHOULD be dropped (silently:
    // no ACK, the peer is broken or the segment forged).
    if (seg.has(tcp_flag::rst)) return true;
    count_drop(DropReason::ts_missing);
    return false;
  }
  if (seg.has(tcp_flag::rst)) return true;  // R1 applies to non-RST segments only
  std::uint32_t tsval = seg.options.timestamps->tsval;
  if (seq_lt(tsval, ts_recent_) && now - ts_recent_time_ <= paws_idle_limit) {
    // R1: an old duplicate from an earlier incarnation of the sequence space (or of this
    // connection, past a wrap): acknowledge (5.3 R1 says send an ACK) and drop it.
    count_drop(DropReason::paws);
    ack_now_ = true;
    return false;
  }
  return true;
}

// RFC 7323 4.3 / 5.3 R3: remember TSval of the segment that covers the last ACK we sent.
void Tcb::update_ts_recent(Instant now, const TcpRepr& seg) {
  if (!ts_ok_ || !seg.options.timestamps) return;
  if (seq_leq(seg.seq, last_ack_sent_) && seq_geq(seg.options.timestamps->tsval, ts_recent_)) {
    ts_recent_ = seg.options.timestamps->tsval;
    ts_recent_time_ = now;
  }
}

// The four cases of 3.10.7.4 "first".
bool Tcb::acceptable(const TcpRepr& seg, std::size_t payload_len) const {
  std::uint32_t len = static_cast<std::uint32_t>(payload_len) + (seg.has(tcp_flag::syn) ? 1 : 0) +
                      (seg.has(tcp_flag::fin) ? 1 : 0);
  std::uint32_t wnd = seq_gt(rcv_adv_, rcv_nxt_) ? rcv_adv_ - rcv_nxt_ : 0;
  wnd = std::max(wnd, receive_window());
  if (len == 0) {
    if (wnd == 0) return seg.seq == rcv_nxt_;
    return seq_in_range(seg.seq, rcv_nxt_, rcv_nxt_ + wnd);
  }
  if (wnd == 0) return false;
  return seq_in_range(seg.seq, rcv_nxt_, rcv_nxt_ + wnd) ||
         seq_in_range(seg.seq + len - 1, rcv_nxt_, rcv_nxt_ + wnd);
}

void Tcb::process_text(Instant now, const TcpRepr& seg, bytes_view payload, const BufRef& ref) {
  if (state_ != TcpState::established && state_ != TcpState::fin_wait_1 &&
      state_ != TcpState::fin_wait_2) {
    // 3.10.7.4 seventh: in CLOSE-WAIT, CLOSING, LAST-ACK and TIME-WAIT "this should not
    // occur, since a FIN has been received": the peer sent text past its FIN; ignore it.
    count_drop(DropReason::data_after_fin);
    return;
  }
  std::uint32_t seq = seg.seq + (seg.has(tcp_flag::syn) ? 1 : 0);
  bytes_view data = payload;
  // Trim what we already have, and what lies beyond the window we offered.
  if (seq_lt(seq, rcv_nxt_)) {
    std::uint32_t skip = rcv_nxt_ - seq;
    if (skip >= data.size()) {
      // Acceptable only for its FIN or its ACK, its text all before RCV.NXT (3.10.7.4
      // first): a duplicate. ACK so the sender learns where we are.
      count_drop(DropReason::old_sequence);
      ack_now_ = true;
      return;
    }
    data = data.subspan(skip);
    seq = rcv_nxt_;
  }
  std::uint32_t right = rcv_nxt_ + std::max(receive_window(), rcv_adv_ - rcv_nxt_);
  if (seq_geq(seq, right)) {
    // The text starts at or past the right edge we offered (3.10.7.4 first: segments
    // are trimmed to the window; here nothing is left). ACK to show the window.
    count_drop(DropReason::beyond_window);
    ack_now_ = true;
    return;
  }
  if (seq_gt(seq + static_cast<std::uint32_t>(data.size()), right)) data = data.first(right - seq);
  if (!data.empty() && over_rx_memory(data.size())) {
    // The stack's receive memory is at its bound and this connection holds its share:
    // keep nothing (the window stays as offered; the peer retransmits, RFC 9293 3.10.7.4).
    count_drop(DropReason::rx_memory);
    ack_now_ = true;
    return;
  }

  stats_.bytes_in += data.size();
  if (seq == rcv_nxt_) {
    // RFC 5681 4.2: ACK at once when a segment fills (part of) a hole.
    bool filled = !ooo_.empty();
    deliver_in_order(data, ref);
    charge_rx_budget();
    if (peer_fin_seq_ && *peer_fin_seq_ == rcv_nxt_) deliver_fin(now);
    ++segs_since_ack_;
    // RFC 5681 4.2 / RFC 9293 3.8.6.3: ACK at least every second full-sized segment, and
    // at once when the receiver asks for quick ACKs or a hole was filled.
    if (filled || cfg_.quickack || segs_since_ack_ >= 2)
      ack_now_ = true;
    else if (delack_deadline_ == Instant::never())
      arm(delack_deadline_, now + cfg_.delayed_ack);
    if (user_) user_->on_readable();
    return;
  }

  // Ahead of a hole. Offered to the upper layer only when TCP can keep its promise for it
  // (see TcbUser): the range overlaps nothing stored (else part of it may already be
  // queued or placed, and placing it would hand those octets over twice) and there is room
  // to remember it as a range-only piece (else a placed segment would be forgotten and the
  // peer's retransmission handed over again). Otherwise only its new parts are stored.
  ++stats_.ooo_segments;
  const auto len = static_cast<std::uint32_t>(data.size());
  bool placed =
      user_ && ooo_.can_store_range_only(seq, len) && user_->on_out_of_order(seq, data, ref);
  if (placed) ++stats_.ooo_placed_by_user;
  // The store at its byte or piece bound (ARCHITECTURE.md: every peer-controlled
  // allocation is bounded) keeps nothing of it; the peer sends it again.
  bytes_view keep = placed ? bytes_view{} : data;
  BufRef keep_ref = ref;
  if (!placed) copy_if_frame_bound(keep, keep_ref);
  if (!ooo_.insert(rcv_nxt_, seq, len, keep, keep_ref)) count_drop(DropReason::ooo_queue_full);
  charge_rx_budget();
  stats_.peak_ooo_bytes = std::max<std::uint64_t>(stats_.peak_ooo_bytes, ooo_.bytes_held());
  // RFC 5681 4.2: an out-of-order segment SHOULD be acknowledged at once (a duplicate ACK
  // carrying SACK blocks, RFC 2018 4).
  ack_now_ = true;
}

// In-order data at RCV.NXT. What the reassembly store already holds inside its range wins
// over its bytes (RFC 9293 3.10.7.4 lets a receiver keep either copy): stored data is
// queued from the store, and a range-only piece, whose octets the upper layer consumed
// when they arrived out of order, is reported once through on_range_delivered and never
// queued (a peer that re-segments or coalesces its retransmissions, like Linux's
// tcp_retrans_try_collapse, sends in-order segments that span placed ranges).
void Tcb::deliver_in_order(bytes_view data, const BufRef& ref) {
  for (;;) {
    const std::optional<std::uint32_t> next = ooo_.first_seq();
    auto take = static_cast<std::uint32_t>(data.size());
    if (next && seq_lt(*next, rcv_nxt_ + take)) take = *next - rcv_nxt_;
    rcvq_.push(data.first(take), ref);
    rcv_nxt_ += take;
    data = data.subspan(take);
    if (!next || *next != rcv_nxt_) return;
    const std::uint32_t before = rcv_nxt_;
    ooo_.pop_ready(rcv_nxt_, [&](std::uint32_t s, bytes_view d, const BufRef& r, std::uint32_t n) {
      if (d.empty()) {
        if (user_) user_->on_range_delivered(s, n);
      } else {
        rcvq_.push(d, r);
      }
    });
    charge_rx_budget();
    data = data.subspan(std::min<std::size_t>(data.size(), rcv_nxt_ - before));
    if (data.empty()) return;
  }
}

void Tcb::copy_if_frame_bound(bytes_view& data, BufRef& ref) {
  if (data.empty() || rcvq_.may_pin(data.size(), ref, ooo_.piece_count())) return;
  std::uint8_t* mem = nullptr;
  BufRef copy = HeapBuf::make(data.size(), &mem);
  std::memcpy(mem, data.data(), data.size());
  if (ref) rcvq_.count_copy();
  data = bytes_view(mem, data.size());
  ref = std::move(copy);
}

// What an out-of-order piece costs besides its octets (its record, and the heap block of a
// copied one): charged too, so 1-octet segments above a hole weigh what they hold.
constexpr std::size_t ooo_piece_cost = 128;

void Tcb::charge_rx_budget() {
  RxFrameBudget* b = rcvq_.budget();
  const std::size_t now = ooo_.piece_count();
  const std::size_t bytes = rcvq_.size() + ooo_.bytes_held() + now * ooo_piece_cost;
  if (b != nullptr) {
    b->held = b->held + now - ooo_charged_;
    b->bytes_held = b->bytes_held + bytes - bytes_charged_;
  }
  ooo_charged_ = now;
  bytes_charged_ = bytes;
}

bool Tcb::over_rx_memory(std::size_t len) const {
  const RxFrameBudget* b = rcvq_.budget();
  if (b == nullptr || b->bytes_held + len <= b->bytes_limit) return false;
  return bytes_charged_ + len > cfg_.rx_memory_min;
}

void Tcb::process_fin(Instant now, std::uint32_t fin_seq) {
  if (seq_lt(fin_seq, rcv_nxt_)) {
    // A retransmitted FIN. Not counted: the acceptability test has already dropped (as
    // old_sequence) any segment that ends before RCV.NXT; this is only a guard.
    ack_now_ = true;
    if (state_ == TcpState::time_wait) arm(close_deadline_, now + 2 * cfg_.msl);
    return;
  }
  if (fin_seq != rcv_nxt_) {
    peer_fin_seq_ = fin_seq;  // wait for the hole before it
    return;
  }
  deliver_fin(now);
}

// The FIN is in sequence: RCV.NXT moves over it (3.10.7.4 eighth).
void Tcb::deliver_fin(Instant now) {
  if (fin_rcvd_) return;
  peer_fin_seq_.reset();
  fin_rcvd_ = true;
  rcv_nxt_ += 1;
  ack_now_ = true;
  switch (state_) {
    case TcpState::syn_received:
    case TcpState::established:
      set_state(TcpState::close_wait);
      break;
    case TcpState::fin_wait_1:
      // Our FIN not yet acknowledged (else process_ack moved us to FIN-WAIT-2).
      set_state(TcpState::closing);
      break;
    case TcpState::fin_wait_2:
      enter_time_wait(now);
      break;
    default:
      break;
  }
  if (user_) user_->on_readable();
}

}  // namespace esock::tcp
