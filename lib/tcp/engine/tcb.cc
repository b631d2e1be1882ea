// User calls (RFC 9293 3.10.1-3.10.6), opening and state bookkeeping.
#include <algorithm>
#include <cerrno>

#include "base/seq32.h"
#include "tcp/engine/tcb.h"

namespace esock::tcp {

const char* to_string(TcpState s) {
  switch (s) {
    case TcpState::closed:
      return "CLOSED";
    case TcpState::syn_sent:
      return "SYN-SENT";
    case TcpState::syn_received:
      return "SYN-RECEIVED";
    case TcpState::established:
      return "ESTABLISHED";
    case TcpState::fin_wait_1:
      return "FIN-WAIT-1";
    case TcpState::fin_wait_2:
      return "FIN-WAIT-2";
    case TcpState::close_wait:
      return "CLOSE-WAIT";
    case TcpState::closing:
      return "CLOSING";
    case TcpState::last_ack:
      return "LAST-ACK";
    case TcpState::time_wait:
      return "TIME-WAIT";
  }
  return "?";
}

const char* to_string(CloseReason r) {
  switch (r) {
    case CloseReason::none:
      return "none";
    case CloseReason::normal:
      return "normal";
    case CloseReason::reset:
      return "connection reset";
    case CloseReason::refused:
      return "connection refused";
    case CloseReason::timeout:
      return "timed out";
    case CloseReason::aborted:
      return "aborted";
  }
  return "?";
}

int to_errno(CloseReason r) {
  switch (r) {
    case CloseReason::reset:
      return ECONNRESET;
    case CloseReason::refused:
      return ECONNREFUSED;
    case CloseReason::timeout:
      return ETIMEDOUT;
    case CloseReason::aborted:
      return ECONNABORTED;
    default:
      return 0;
  }
}

Tcb::Tcb(const TcpConfig& cfg, const FourTuple& tuple, SegmentSink& sink, TcbUser* user)
    : cfg_(cfg),
      tuple_(tuple),
      sink_(sink),
      user_(user),
      sndbuf_(cfg.snd_buf),
      rcvq_(cfg.rx_pinned_frames),
      // One stored piece per out-of-order segment: enough pieces for a full window of
      // small (536-octet) segments, so the byte limit, not the count, is what binds.
      ooo_(cfg.rcv_buf, std::max<std::size_t>(256, cfg.rcv_buf / 536)),
      rtt_(cfg.rtt) {
  // RFC 7323 2.3: the smallest shift that lets the window cover the receive buffer.
  if (cfg_.window_scaling) {
    while (rcv_wscale_ < 14 && (cfg_.rcv_buf >> rcv_wscale_) > 65535) ++rcv_wscale_;
  }
}

Tcb::~Tcb() {
  ooo_.clear();
  rcvq_.clear();
  charge_rx_budget();  // the stack's budget outlives us
}

void Tcb::open_active(Instant now, std::uint32_t iss, std::uint32_t ts_offset) {
  iss_ = iss;
  ts_offset_ = ts_offset;
  snd_una_ = snd_nxt_ = snd_max_ = iss;
  recovery_point_ = iss;
  set_state(TcpState::syn_sent);
  send_syn(now);
}

void Tcb::open_passive(Instant now, std::uint32_t iss, std::uint32_t ts_offset,
                       const TcpRepr& syn) {
  init_passive(now, iss, ts_offset, syn);
  send_syn(now);
}

void Tcb::open_from_cookie(Instant now, std::uint32_t iss, std::uint32_t ts_offset,
                           const TcpRepr& syn) {
  init_passive(now, iss, ts_offset, syn);
  snd_nxt_ = snd_max_ = iss + 1;  // the SYN-ACK went out (statelessly)
}

void Tcb::init_passive(Instant now, std::uint32_t iss, std::uint32_t ts_offset,
                       const TcpRepr& syn) {
  passive_ = true;
  iss_ = iss;
  ts_offset_ = ts_offset;
  snd_una_ = snd_nxt_ = snd_max_ = iss;
  recovery_point_ = iss;
  irs_ = syn.seq;
  rcv_nxt_ = syn.seq + 1;
  rcv_adv_ = rcv_nxt_;
  take_options(syn);
  if (ts_ok_) {
    ts_recent_ = syn.options.timestamps->tsval;
    ts_recent_time_ = now;
  }
  // The window in a SYN is never scaled (RFC 7323 2.2).
  snd_wnd_ = syn.window;
  max_snd_wnd_ = snd_wnd_;
  snd_wl1_ = syn.seq;
  snd_wl2_ = iss;
  last_rx_ = now;
  set_state(TcpState::syn_received);
}

// Options in a SYN decide what the connection uses: each needs both sides to offer it.
void Tcb::take_options(const TcpRepr& syn) {
  const TcpOptions& o = syn.options;
  // RFC 9293 3.7.1: without an MSS option, assume 536 (IPv4).
  peer_mss_ = o.mss.value_or(536);
  ws_ok_ = cfg_.window_scaling && o.wscale.has_value();
  if (ws_ok_) {
    // RFC 7323 2.3: a shift above 14 is used as 14 (and logged by others; we clamp).
    snd_wscale_ = std::min<std::uint8_t>(*o.wscale, 14);
  } else {
    snd_wscale_ = 0;
    rcv_wscale_ = 0;
  }
  sack_ok_ = cfg_.sack && o.sack_permitted;
  ts_ok_ = cfg_.timestamps && o.timestamps.has_value();
  // SMSS: the smaller of the peer's MSS and ours, less the options every segment carries
  // (RFC 9293 3.7.1: the MSS counts only data, and options shrink what fits).
  std::uint16_t mss = std::min(peer_mss_, cfg_.mss);
  smss_ = static_cast<std::uint16_t>(mss - (ts_ok_ ? 12 : 0));
  cc_ = make_congestion_control(cfg_.congestion, smss_, cfg_.initial_window_segments * smss_);
}

void Tcb::count_drop(DropReason r) {
  ++stats_.drops[r];
  switch (r) {
    case DropReason::paws:
      ++stats_.paws_drops;
      break;
    case DropReason::ack_unsent:
    case DropReason::ack_too_old:
      ++stats_.bad_acks_dropped;
      break;
    case DropReason::ooo_queue_full:
      ++stats_.ooo_dropped;
      break;
    default:
      break;
  }
}

void Tcb::set_state(TcpState s) {
  state_ = s;
}

void Tcb::finish(CloseReason r) {
  if (state_ == TcpState::closed) return;
  set_state(TcpState::closed);
  close_reason_ = r;
  rto_deadline_ = delack_deadline_ = persist_deadline_ = Instant::never();
  keepalive_deadline_ = close_deadline_ = Instant::never();
  if (r != CloseReason::normal) {
    // RFC 9293 3.10.7.4: on RST, queued data and pending sends are flushed. Nothing is
    // retransmitted any more, so the send buffer lets go of what it holds by reference
    // now (registered memory whose owner waits for it, not for the TCB to be reaped).
    rcvq_.clear();
    ooo_.clear();
    charge_rx_budget();
    sndbuf_.consume(sndbuf_.size());
  }
  if (user_) user_->on_closed(r);
}

std::uint32_t Tcb::data_end() const {
  // Before our SYN is acknowledged the first data octet is ISS + 1.
  std::uint32_t start =
      snd_una_ + ((state_ == TcpState::syn_sent || state_ == TcpState::syn_received) ? 1 : 0);
  // Once our FIN is acknowledged SND.UNA is one past the last data octet.
  return start + static_cast<std::uint32_t>(sndbuf_.size()) - (fin_acked_ ? 1 : 0);
}

std::uint32_t Tcb::flight_size() const {
  return snd_max_ - snd_una_;
}

bool Tcb::sendable() const {
  if (fin_queued_) return false;
  switch (state_) {
    case TcpState::syn_sent:
    case TcpState::syn_received:
    case TcpState::established:
    case TcpState::close_wait:
      return true;
    default:
      return false;
  }
}

std::size_t Tcb::send_space() const {
  return sendable() ? sndbuf_.space() : 0;
}

std::size_t Tcb::unsent() const {
  std::uint32_t end = data_end();
  return seq_gt(end, snd_nxt_) ? end - snd_nxt_ : 0;
}

std::size_t Tcb::send(Instant now, bytes_view data) {
  if (!sendable()) return 0;
  std::size_t n = sndbuf_.append_copy(data);
  if (n) output(now);
  return n;
}

bool Tcb::send_ref(Instant now, bytes_view data, const BufRef& ref, bool end_of_record) {
  if (!sendable() || !sndbuf_.append_ref(data, ref, end_of_record)) return false;
  output(now);
  return true;
}

bool Tcb::send_record(Instant now, std::span<const TxPiece> parts) {
  if (!sendable() || !sndbuf_.append_record(parts)) return false;
  output(now);
  return true;
}

std::size_t Tcb::recv(Instant now, mut_bytes out) {
  std::size_t n = rcvq_.read(out);
  charge_rx_budget();
  if (n && window_update_due()) output(now);
  return n;
}

void Tcb::recv_consumed(Instant now, std::size_t n) {
  rcvq_.consume(n);
  charge_rx_budget();
  if (n && window_update_due()) output(now);
}

void Tcb::set_nodelay(Instant now, bool on) {
  cfg_.nodelay = on;
  if (on) output(now);
}

void Tcb::close(Instant now) {
  switch (state_) {
    case TcpState::closed:
      return;
    case TcpState::syn_sent:
      // 3.10.4: delete the TCB (nothing has been acknowledged yet).
      finish(CloseReason::normal);
      return;
    case TcpState::syn_received:
    case TcpState::established:
      // 3.10.4: queue the FIN behind the data; the state moves now. From SYN-RECEIVED the
      // FIN goes out once ESTABLISHED (output() sends no data before the handshake ends).
      fin_queued_ = true;
      if (state_ == TcpState::established) set_state(TcpState::fin_wait_1);
      output(now);
      return;
    case TcpState::close_wait:
      fin_queued_ = true;
      set_state(TcpState::last_ack);
      output(now);
      return;
    default:
      return;  // already closing: "error: connection closing"
  }
}

void Tcb::abort(Instant now) {
  switch (state_) {
    case TcpState::syn_received:
    case TcpState::established:
    case TcpState::fin_wait_1:
    case TcpState::fin_wait_2:
    case TcpState::close_wait:
      // 3.10.5: <SEQ=SND.NXT><CTL=RST>.
      send_rst(now, snd_nxt_);
      break;
    default:
      break;
  }
  finish(CloseReason::aborted);
}

void Tcb::set_orphan(Instant now) {
  orphan_ = true;
  user_ = nullptr;
  if (state_ == TcpState::fin_wait_2 && cfg_.orphan_fin_wait2.count() > 0)
    arm(close_deadline_, now + cfg_.orphan_fin_wait2);
}

TcbInfo Tcb::info() const {
  TcbInfo i{};
  i.state = state_;
  i.snd_una = snd_una_;
  i.snd_nxt = snd_nxt_;
  i.snd_max = snd_max_;
  i.snd_wnd = snd_wnd_;
  i.rcv_nxt = rcv_nxt_;
  i.rcv_wnd = receive_window();
  i.cwnd = cc_ ? cc_->cwnd() : 0;
  i.ssthresh = cc_ ? cc_->ssthresh() : 0;
  i.peer_mss = peer_mss_;
  i.smss = smss_;
  i.snd_wscale = ws_ok_ ? snd_wscale_ : 255;
  i.rcv_wscale = ws_ok_ ? rcv_wscale_ : 255;
  i.sack = sack_ok_;
  i.timestamps = ts_ok_;
  i.in_recovery = in_recovery_;
  i.srtt = rtt_.srtt();
  i.rto = rtt_.rto();
  i.congestion = cc_ ? cc_->name() : "";
  return i;
}

}  // namespace esock::tcp
