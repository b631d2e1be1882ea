// SEGMENT ARRIVES (RFC 9293 3.10.7.3 for SYN-SENT, 3.10.7.4 for the other states), with
// PAWS (RFC 7323 5) and the RFC 5961 checks on RST and SYN.
#include <algorithm>

#include "base/seq32.h"
#include "tcp/engine/tcb.h"

namespace esock::tcp {

namespace {
// RFC 7323 5.5: a TS.Recent older than 24 days may have wrapped; it is no longer used.
constexpr Duration paws_idle_limit = std::chrono::hours(24 * 24);
}  // namespace

void Tcb::on_segment(Instant now, const TcpRepr& seg, bytes_view payload, const BufRef& ref) {
  ++stats_.segs_in;
  last_rx_ = now;
  switch (state_) {
    case TcpState::closed:
      return;  // the owner answers segments for closed connections (3.10.7.1)
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

  // First: PAWS (RFC 7323 5.3 R1-R2) runs before the sequence number check.
  if (!check_timestamps(now, seg)) {
    output(now);
    return;
  }

  // First (3.10.7.4): the sequence number test. Unacceptable segments get an ACK (unless
  // they carry RST) and are dropped; this is also how window probes and keepalives are
  // answered.
  if (!acceptable(seg, payload.size())) {
    if (!seg.has(tcp_flag::rst)) {
      // A retransmitted SYN from a peer whose SYN-ACK was lost: answer it again.
      if (state_ == TcpState::syn_received && seg.has(tcp_flag::syn) && seg.seq == irs_)
        send_syn(now);
      else
        ack_now_ = true;
      // A retransmitted FIN in TIME-WAIT restarts the 2 MSL timeout (3.10.7.4 eighth).
      if (state_ == TcpState::time_wait && seg.has(tcp_flag::fin))
        close_deadline_ = now + 2 * cfg_.msl;
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
      send_challenge_ack(now);
    }
    return;
  }

  // Fourth: SYN in a synchronized state (RFC 5961 4.2): challenge ACK, drop.
  if (seg.has(tcp_flag::syn)) {
    send_challenge_ack(now);
    return;
  }

  // Fifth: the ACK field.
  if (!seg.has(tcp_flag::ack)) return;
  if (state_ == TcpState::syn_received) {
    if (!(seq_lt(snd_una_, seg.ack) && seq_leq(seg.ack, snd_max_))) {
      // 3.10.7.4: <SEQ=SEG.ACK><CTL=RST>.
      send_rst(now, seg.ack);
      return;
    }
    snd_wnd_ = std::uint32_t{seg.window} << snd_wscale_;
    max_snd_wnd_ = std::max(max_snd_wnd_, snd_wnd_);
    snd_wl1_ = seg.seq;
    snd_wl2_ = seg.ack;
    // Our SYN is acknowledged: SND.UNA moves over it (data follows below).
    if (!syn_acked(now, iss_ + 1)) return;
  }
  if (!process_ack(now, seg, payload.size())) {
    output(now);
    return;
  }
  if (state_ == TcpState::closed) return;
  update_ts_recent(now, seg);

  // Seventh: segment text (sixth, URG, is not supported: urgent data arrives inline, the
  // pointer is ignored).
  if (!payload.empty()) {
    if (orphan_) {
      // Nobody will read this: RFC 2525 2.17 says reset rather than let data vanish.
      abort(now);
      return;
    }
    process_text(now, seg, payload, ref);
  }

  // Eighth: FIN.
  if (seg.has(tcp_flag::fin))
    process_fin(now, seg.seq + static_cast<std::uint32_t>(payload.size()));
  output(now);
}

void Tcb::segment_syn_sent(Instant now, const TcpRepr& seg, bytes_view payload, const BufRef& ref) {
  bool ack_ok = false;
  if (seg.has(tcp_flag::ack)) {
    // 3.10.7.3 first: an ACK outside (ISS, SND.NXT] is answered with a reset.
    if (seq_leq(seg.ack, iss_) || seq_gt(seg.ack, snd_max_)) {
      if (!seg.has(tcp_flag::rst)) send_rst(now, seg.ack);
      return;
    }
    ack_ok = true;
  }
  if (seg.has(tcp_flag::rst)) {
    // Second: only a RST that acknowledges our SYN counts (RFC 5961 3.2 keeps this).
    if (ack_ok) finish(CloseReason::refused);
    return;
  }
  if (!seg.has(tcp_flag::syn)) return;

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
    if (!syn_acked(now, seg.ack)) return;
    if (!payload.empty()) process_text(now, seg, payload, ref);
    if (seg.has(tcp_flag::fin))
      process_fin(now, seg.seq + 1 + static_cast<std::uint32_t>(payload.size()));
  } else {
    // Simultaneous open: SYN-RECEIVED, answer with SYN-ACK (same ISS and options).
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
bool Tcb::check_timestamps(Instant now, const TcpRepr& seg) {
  if (!ts_ok_) return true;
  if (!seg.options.timestamps) {
    // 3.2: once negotiated, a non-RST segment without TSopt SHOULD be dropped.
    return seg.has(tcp_flag::rst);
  }
  if (seg.has(tcp_flag::rst)) return true;  // R1 applies to non-RST segments only
  std::uint32_t tsval = seg.options.timestamps->tsval;
  if (seq_lt(tsval, ts_recent_) && now - ts_recent_time_ <= paws_idle_limit) {
    ++stats_.paws_drops;
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
      state_ != TcpState::fin_wait_2)
    return;  // 3.10.7.4 seventh: ignore text after the peer's FIN
  std::uint32_t seq = seg.seq + (seg.has(tcp_flag::syn) ? 1 : 0);
  bytes_view data = payload;
  // Trim what we already have, and what lies beyond the window we offered.
  if (seq_lt(seq, rcv_nxt_)) {
    std::uint32_t skip = rcv_nxt_ - seq;
    if (skip >= data.size()) {
      ack_now_ = true;  // a duplicate: ACK so the sender learns where we are
      return;
    }
    data = data.subspan(skip);
    seq = rcv_nxt_;
  }
  std::uint32_t right = rcv_nxt_ + std::max(receive_window(), rcv_adv_ - rcv_nxt_);
  if (seq_geq(seq, right)) {
    ack_now_ = true;
    return;
  }
  if (seq_gt(seq + static_cast<std::uint32_t>(data.size()), right)) data = data.first(right - seq);

  stats_.bytes_in += data.size();
  if (seq == rcv_nxt_) {
    // RFC 5681 4.2: ACK at once when a segment fills (part of) a hole.
    bool filled = !ooo_.empty();
    deliver_in_order(data, ref);
    if (peer_fin_seq_ && *peer_fin_seq_ == rcv_nxt_) deliver_fin(now);
    ++segs_since_ack_;
    // RFC 5681 4.2 / RFC 9293 3.8.6.3: ACK at least every second full-sized segment, and
    // at once when the receiver asks for quick ACKs or a hole was filled.
    if (filled || cfg_.quickack || segs_since_ack_ >= 2)
      ack_now_ = true;
    else if (delack_deadline_ == Instant::never())
      delack_deadline_ = now + cfg_.delayed_ack;
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
  if (!ooo_.insert(rcv_nxt_, seq, len, placed ? bytes_view{} : data, ref)) ++stats_.ooo_dropped;
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
    data = data.subspan(std::min<std::size_t>(data.size(), rcv_nxt_ - before));
    if (data.empty()) return;
  }
}

void Tcb::process_fin(Instant now, std::uint32_t fin_seq) {
  if (seq_lt(fin_seq, rcv_nxt_)) {
    ack_now_ = true;  // a retransmitted FIN
    if (state_ == TcpState::time_wait) close_deadline_ = now + 2 * cfg_.msl;
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
