// ACK processing (RFC 9293 3.10.7.4 "fifth", RFC 5961 5.2), RTT sampling (RFC 6298 with
// Karn's algorithm), congestion control and loss recovery: SACK-based per RFC 6675 when
// negotiated, NewReno per RFC 6582 otherwise.
#include <algorithm>

#include "base/seq32.h"
#include "tcp/engine/tcb.h"

namespace esock::tcp {

namespace {
constexpr std::uint32_t dup_thresh = 3;  // RFC 5681 / RFC 6675 DupThresh
}

// Returns false when the segment must be dropped.
bool Tcb::process_ack(Instant now, const TcpRepr& seg, std::size_t payload_len) {
  std::uint32_t ack = seg.ack;
  // RFC 5961 5.2: acceptable only if SND.UNA - MAX.SND.WND <= SEG.ACK <= SND.NXT.
  if (seq_gt(ack, snd_max_)) {
    // 3.10.7.4 fifth: "If the ACK acks something not yet sent (SEG.ACK > SND.NXT) then
    // send an ACK, drop the segment, and return" (SND.MAX here: see tcb.h).
    count_drop(DropReason::ack_unsent);
    ack_now_ = true;
    return false;
  }
  if (seq_lt(ack, snd_una_ - max_snd_wnd_)) {
    // RFC 5961 5.2: an ACK this far behind cannot come from the peer (it acknowledges
    // data the peer's window could never have held): a blind injection. Challenge ACK,
    // drop, so its text is not accepted either.
    count_drop(DropReason::ack_too_old);
    send_challenge_ack(now);
    return false;
  }

  bool sacked_new = false;
  if (sack_ok_ && seg.options.sack_count > 0 && seq_geq(ack, snd_una_)) {
    std::span<const SackBlock> blocks(seg.options.sacks.data(), seg.options.sack_count);
    sacked_new = sb_.update(ack, snd_max_, blocks) > 0;
  }

  // Window update: only from a segment newer than the one that last set the window.
  std::uint32_t old_wnd = snd_wnd_;
  if (seq_lt(snd_wl1_, seg.seq) || (snd_wl1_ == seg.seq && seq_leq(snd_wl2_, ack))) {
    snd_wnd_ = std::uint32_t{seg.window} << snd_wscale_;
    snd_wl1_ = seg.seq;
    snd_wl2_ = ack;
    max_snd_wnd_ = std::max(max_snd_wnd_, snd_wnd_);
  }
  // The persist timer is output()'s business (update_persist): it stops once data flows.
  probes_unanswered_ = 0;

  if (seq_gt(ack, snd_una_)) {
    on_new_ack(now, ack);
  } else if (ack == snd_una_ && flight_size() > 0) {
    // RFC 5681 2 "duplicate ACK": no data, no SYN/FIN, same window, data outstanding.
    // RFC 6675 5: with SACK, an ACK that SACKs new data counts too.
    bool plain_dup = payload_len == 0 && !seg.has(tcp_flag::syn) && !seg.has(tcp_flag::fin) &&
                     snd_wnd_ == old_wnd;
    if (sack_ok_ ? (sacked_new || (plain_dup && sb_.empty())) : plain_dup) {
      ++stats_.dup_acks_in;
      on_dup_ack(now);
    }
  }
  if (snd_wnd_ > old_wnd && user_) user_->on_writable();
  return true;
}

void Tcb::on_new_ack(Instant now, std::uint32_t ack) {
  std::uint32_t acked = ack - snd_una_;
  std::uint32_t flight_before = flight_size();
  std::size_t data_acked = std::min<std::size_t>(acked, sndbuf_.size());
  bool fin_acked = fin_queued_ && seq_gt(ack, fin_seq());

  // RFC 6298 with Karn: only a segment never retransmitted gives a sample.
  if (rtt_timing_ && seq_gt(ack, rtt_seq_)) {
    rtt_.on_sample(now - rtt_start_);
    rtt_timing_ = false;
  }
  sndbuf_.consume(data_acked);
  snd_una_ = ack;
  if (seq_lt(snd_nxt_, snd_una_)) snd_nxt_ = snd_una_;
  if (sack_ok_) sb_.on_cum_ack(snd_una_);
  retries_ = 0;
  dupacks_ = 0;

  if (in_recovery_) {
    if (seq_geq(ack, recovery_point_)) {
      // Full acknowledgement: recovery ends (RFC 6675 5, RFC 6582 3.2 step 3).
      in_recovery_ = false;
      newreno_inflation_ = 0;
      cc_->on_recovery_exit(now);
    } else if (!sack_ok_) {
      // RFC 6582 3.2 step 5, partial ACK: retransmit the first unacknowledged segment,
      // deflate by the amount acknowledged, add back one SMSS, and reset the timer.
      std::uint32_t deflate = std::min(newreno_inflation_, acked);
      newreno_inflation_ = newreno_inflation_ - deflate + (acked >= smss_ ? smss_ : 0);
      retransmit(now, snd_una_, std::min<std::uint32_t>(smss_, snd_max_ - snd_una_));
      arm(rto_deadline_, now + rtt_.rto());
    }
  } else {
    CcAck a;
    a.now = now;
    a.bytes_acked = static_cast<std::uint32_t>(data_acked);
    a.flight_size = flight_before;
    a.srtt = rtt_.has_sample() ? rtt_.srtt() : Duration{0};
    a.min_rtt = Duration{0};
    cc_->on_ack(a);
  }

  // RFC 6298 5.2 / 5.3: stop the timer when everything is acknowledged, else restart it.
  if (snd_una_ == snd_max_)
    rto_deadline_ = Instant::never();
  else if (!in_recovery_ || sack_ok_)
    arm(rto_deadline_, now + rtt_.rto());

  if (data_acked && user_) user_->on_acked(static_cast<std::uint32_t>(data_acked));
  if (fin_acked) {
    fin_acked_ = true;
    our_fin_acked(now);
  }
  if (data_acked && user_ && sendable()) user_->on_writable();
}

void Tcb::our_fin_acked(Instant now) {
  switch (state_) {
    case TcpState::fin_wait_1:
      set_state(TcpState::fin_wait_2);
      if (orphan_ && cfg_.orphan_fin_wait2.count() > 0)
        arm(close_deadline_, now + cfg_.orphan_fin_wait2);
      break;
    case TcpState::closing:
      enter_time_wait(now);
      break;
    case TcpState::last_ack:
      finish(CloseReason::normal);
      break;
    default:
      break;
  }
}

void Tcb::on_dup_ack(Instant now) {
  ++dupacks_;
  if (in_recovery_) {
    // RFC 6582 3.2 step 4: each further duplicate ACK inflates the window by one SMSS.
    if (!sack_ok_) newreno_inflation_ += smss_;
    return;
  }
  // RFC 6675 5: enter recovery at DupThresh duplicates or when IsLost(HighACK + 1).
  bool lost = dupacks_ >= dup_thresh || (sack_ok_ && sb_.is_lost(snd_una_, smss_));
  if (!lost) return;
  // RFC 6582 3.2 step 2 / RFC 6675 5 step 2: only when the cumulative ACK covers more
  // than the previous recovery point ("recover" is the highest octet sent then, i.e.
  // recovery_point_ - 1), so one window of losses reduces cwnd once.
  if (seq_lt(snd_una_, recovery_point_)) return;
  enter_recovery(now);
}

void Tcb::enter_recovery(Instant now) {
  ++stats_.fast_recoveries;
  in_recovery_ = true;
  recovery_point_ = snd_max_;
  cc_->on_congestion(now, flight_size());
  rtt_timing_ = false;
  if (sack_ok_) {
    // RFC 6675 5 step 4: retransmit the first segment NextSeg() chooses, then keep going
    // while pipe < cwnd (done by output()).
    auto s = sb_.next_seg(snd_una_, snd_nxt_, snd_max_, smss_, false, 0);
    std::uint32_t len = std::min<std::uint32_t>(smss_, snd_max_ - snd_una_);
    if (s && !s->new_data)
      retransmit(now, s->seq, s->len);
    else
      retransmit(now, snd_una_, len);
  } else {
    // RFC 6582 3.2 step 3: retransmit, cwnd = ssthresh + 3 * SMSS.
    newreno_inflation_ = dup_thresh * smss_;
    retransmit(now, snd_una_, std::min<std::uint32_t>(smss_, snd_max_ - snd_una_));
  }
  arm(rto_deadline_, now + rtt_.rto());
}

}  // namespace esock::tcp
