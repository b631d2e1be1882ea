// Timers: retransmission (RFC 6298), persist (RFC 9293 3.8.6.1), keepalive (3.8.4),
// delayed ACK (3.8.6.3), TIME-WAIT (3.4.2) and the orphaned FIN-WAIT-2 bound.
#include <algorithm>

#include "base/seq32.h"
#include "tcp/engine/tcb.h"

namespace esock::tcp {

Instant Tcb::next_deadline() const {
  if (state_ == TcpState::closed) return Instant::never();
  return std::min(
      {rto_deadline_, delack_deadline_, persist_deadline_, keepalive_deadline_, close_deadline_});
}

void Tcb::on_timer(Instant now) {
  if (state_ == TcpState::closed) return;
  if (close_deadline_ <= now) {
    close_deadline_ = Instant::never();
    finish(CloseReason::normal);
    return;
  }
  if (rto_deadline_ <= now) on_rto(now);
  if (persist_deadline_ <= now) on_persist(now);
  if (keepalive_deadline_ <= now) on_keepalive(now);
  if (state_ == TcpState::closed) return;
  if (delack_deadline_ <= now) {
    delack_deadline_ = Instant::never();
    ack_now_ = true;
  }
  output(now);
}

// RFC 6298 5.1: started when data is sent and the timer is not running.
void Tcb::arm_rto(Instant now) {
  if (rto_deadline_ == Instant::never()) arm(rto_deadline_, now + rtt_.rto());
}

void Tcb::on_rto(Instant now) {
  rto_deadline_ = Instant::never();
  ++stats_.rto_expirations;
  if (state_ == TcpState::syn_sent || state_ == TcpState::syn_received) {
    if (++retries_ > cfg_.syn_retries) {
      finish(CloseReason::timeout);
      return;
    }
    rtt_.backoff();  // 5.5
    send_syn(now);
    return;
  }
  if (snd_una_ == snd_max_) return;  // nothing outstanding (e.g. only a persist probe)
  if (++retries_ > cfg_.max_retries) {
    // R2 reached (3.8.3): give up on the connection.
    finish(CloseReason::timeout);
    return;
  }
  cc_->on_rto(now, flight_size());
  rtt_.backoff();
  // RFC 2018 8 / RFC 6675 5.1: after a timeout, SACK information may be reneged on, so
  // the scoreboard starts again, and recovery is over: "recover" = highest octet sent
  // (RFC 6582 4) so duplicate ACKs for the old window do not trigger another reduction.
  if (sack_ok_) sb_.reset();
  in_recovery_ = false;
  newreno_inflation_ = 0;
  dupacks_ = 0;
  recovery_point_ = snd_max_;
  rtt_timing_ = false;
  snd_nxt_ = snd_una_;  // go back N: the window (now one segment) resends from SND.UNA
  send_new_data(now, false);
  arm_rto(now);
}

// Window probe (RFC 9293 3.8.6.1). The RFC's probe carries one octet of new data; ours
// carries none and the old sequence number SND.UNA - 1 (as Linux's tcp_xmit_probe_skb
// does), for two reasons. Alignment: when the head of the unsent data is an upper-layer
// record (an MPA FPDU), an accepted one-octet probe would make every later segment start
// one octet into a record (RFC 5044 section 8 alignment lost for good), and a probe
// for a small non-zero window must not split the record either. Liveness: the segment is
// outside the receive window, so the receiver must answer it with an ACK carrying its
// current window (3.10.7.4), and the probe never becomes data we could time out on
// (MUST-26: probing continues as long as the peer answers; probes_unanswered_ counts only
// silence).
void Tcb::on_persist(Instant now) {
  persist_deadline_ = Instant::never();
  if (unsent() == 0 || snd_una_ != snd_max_) return;
  if (++probes_unanswered_ > cfg_.max_retries) {
    finish(CloseReason::timeout);
    return;
  }
  ++stats_.window_probes;
  send_segment(now, snd_una_ - 1, 0, 0);
  persist_backoff_ = std::min(persist_backoff_ + 1, 16u);
  Duration next = rtt_.rto() * (1 << std::min(persist_backoff_, 10u));
  arm(persist_deadline_, now + std::min(next, cfg_.persist_max));
}

void Tcb::arm_keepalive(Instant now) {
  if (cfg_.keepalive) arm(keepalive_deadline_, now + cfg_.keepalive_idle);
}

// 3.8.4: after keepalive_idle without hearing from the peer, probe with SEG.SEQ =
// SND.NXT - 1 and no data; after keepalive_probes unanswered probes, the peer is gone.
void Tcb::on_keepalive(Instant now) {
  keepalive_deadline_ = Instant::never();
  if (!cfg_.keepalive || (state_ != TcpState::established && state_ != TcpState::close_wait))
    return;
  if (now - last_rx_ < cfg_.keepalive_idle) {
    arm(keepalive_deadline_, last_rx_ + cfg_.keepalive_idle);
    probes_unanswered_ = 0;
    return;
  }
  if (probes_unanswered_ >= cfg_.keepalive_probes) {
    finish(CloseReason::timeout);
    return;
  }
  ++probes_unanswered_;
  ++stats_.keepalive_probes;
  send_segment(now, snd_max_ - 1, 0, 0);  // SND.MAX: see send_ack
  arm(keepalive_deadline_, now + cfg_.keepalive_interval);
}

void Tcb::enter_time_wait(Instant now) {
  set_state(TcpState::time_wait);
  // Everything we sent is acknowledged and the peer's FIN came in order: neither buffer can
  // be needed again, so a connection waiting out 2 MSL holds its TCB only (the soak held
  // 8,500 TIME-WAIT connections at 69 KiB each, mostly the 64 KiB copy block).
  sndbuf_.release_memory();
  ooo_.release_memory();
  charge_rx_budget();
  rto_deadline_ = persist_deadline_ = keepalive_deadline_ = Instant::never();
  arm(close_deadline_, now + 2 * cfg_.msl);
}

}  // namespace esock::tcp
