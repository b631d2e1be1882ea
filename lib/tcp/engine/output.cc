// What to send and when: segmentation at SMSS (or at upper-layer record boundaries), the
// sender's silly-window avoidance and Nagle (RFC 9293 3.8.6.2.1, 3.7.4), the receiver's
// window advertisement (3.8.6.2.2), options (RFC 7323, RFC 2018), retransmissions and the
// RFC 6675 transmission loop during SACK recovery.
#include <algorithm>
#include <array>

#include "base/seq32.h"
#include "tcp/engine/tcb.h"

namespace esock::tcp {

namespace {
// Shortens a gathered piece list to its first `len` bytes; returns the pieces kept.
std::size_t trim_pieces(std::span<TxPiece> p, std::size_t n, std::size_t len) {
  std::size_t k = 0, covered = 0;
  for (; k < n && covered < len; ++k) {
    if (p[k].data.size() > len - covered) p[k].data = p[k].data.first(len - covered);
    covered += p[k].data.size();
  }
  return k;
}
}  // namespace

std::uint32_t Tcb::ts_now(Instant now) const {
  // RFC 7323 5.4: a 1 ms clock, offset per connection so TSval leaks no host uptime.
  return static_cast<std::uint32_t>(now.ns / 1'000'000) + ts_offset_;
}

std::uint32_t Tcb::receive_window() const {
  std::size_t held = rcvq_.size() + ooo_.bytes_held();
  return held >= cfg_.rcv_buf ? 0 : static_cast<std::uint32_t>(cfg_.rcv_buf - held);
}

bool Tcb::window_update_due() const {
  std::uint32_t promised = seq_gt(rcv_adv_, rcv_nxt_) ? rcv_adv_ - rcv_nxt_ : 0;
  std::uint32_t wnd = receive_window();
  // Worth a segment of its own once the right edge can move by two segments or half the
  // buffer (whichever is smaller): the receiver's side of SWS avoidance.
  return wnd > promised && wnd - promised >= std::min<std::uint32_t>(cfg_.rcv_buf / 2, 2u * smss_);
}

std::uint16_t Tcb::window_field(bool syn) {
  std::uint32_t promised = seq_gt(rcv_adv_, rcv_nxt_) ? rcv_adv_ - rcv_nxt_ : 0;
  std::uint32_t wnd = receive_window();
  // 3.8.6.2.2: move the right edge only by at least min(RCV.BUFF / 2, SMSS)...
  if (wnd > promised && wnd - promised < std::min<std::uint32_t>(cfg_.rcv_buf / 2, smss_))
    wnd = promised;
  // ...and never shrink it (3.8.6: a receiver SHOULD NOT shrink the window).
  wnd = std::max(wnd, promised);
  std::uint8_t shift = (syn || !ws_ok_) ? 0 : rcv_wscale_;  // never scaled in a SYN (7323 2.2)
  std::uint32_t field = std::min<std::uint32_t>(wnd >> shift, 65535);
  if ((field << shift) < promised && field < 65535) ++field;  // rounding must not shrink
  // A SYN cannot express more than 65535; the peer learns the rest from the first ACK,
  // so count the whole window as promised rather than send an update just for that.
  std::uint32_t edge = rcv_nxt_ + (syn ? wnd : (field << shift));
  if (seq_gt(edge, rcv_adv_) || rcv_adv_ == 0) rcv_adv_ = edge;
  return static_cast<std::uint16_t>(field);
}

void Tcb::fill_options(TcpRepr& r, bool syn) const {
  TcpOptions& o = r.options;
  if (syn) {
    bool active = state_ == TcpState::syn_sent;  // else we answer what the peer offered
    o.mss = cfg_.mss;
    if (active ? cfg_.window_scaling : ws_ok_) o.wscale = rcv_wscale_;
    o.sack_permitted = active ? cfg_.sack : sack_ok_;
    if (active ? cfg_.timestamps : ts_ok_) o.timestamps = TcpTimestamps{0, ts_recent_};
    return;
  }
  if (ts_ok_) o.timestamps = TcpTimestamps{0, ts_recent_};
  if (sack_ok_ && !ooo_.empty()) {
    // RFC 2018 3: with timestamps (12 octets) at most 3 blocks fit in 40 octets.
    std::size_t room = ts_ok_ ? 3 : 4;
    o.sack_count =
        static_cast<std::uint8_t>(ooo_.sack_blocks(std::span<SackBlock>(o.sacks.data(), room)));
  }
}

void Tcb::send_syn(Instant now) {
  TcpRepr r;
  r.src_port = tuple_.local_port;
  r.dst_port = tuple_.remote_port;
  r.seq = iss_;
  r.flags = tcp_flag::syn;
  if (state_ == TcpState::syn_received) {
    r.flags |= tcp_flag::ack;
    r.ack = rcv_nxt_;
  }
  r.window = window_field(true);
  fill_options(r, true);
  if (r.options.timestamps) r.options.timestamps->tsval = ts_now(now);
  sink_.emit(now, tuple_, r, {});
  ++stats_.segs_out;
  last_ack_sent_ = rcv_nxt_;
  if (snd_max_ == iss_) {
    snd_nxt_ = snd_max_ = iss_ + 1;
    rtt_timing_ = true;
    rtt_start_ = now;
    rtt_seq_ = iss_;
  } else {
    syn_retransmitted_ = true;
    ++stats_.retransmits;
  }
  arm_rto(now);
}

std::uint32_t Tcb::send_segment(Instant now, std::uint32_t seq, std::uint32_t len,
                                std::uint8_t flags) {
  TcpRepr r;
  r.src_port = tuple_.local_port;
  r.dst_port = tuple_.remote_port;
  r.seq = seq;
  r.ack = rcv_nxt_;
  r.flags = static_cast<std::uint8_t>(flags | tcp_flag::ack);
  r.window = window_field(false);
  fill_options(r, false);
  if (r.options.timestamps) r.options.timestamps->tsval = ts_now(now);

  std::array<TxPiece, max_segment_pieces> pieces;
  std::size_t n = 0;
  if (len > 0) {
    std::uint32_t want = len;
    fit_payload(r, seq, len, pieces, n);
    // Out of gather slots or room: the FIN waits for the segment with the last octet.
    if (len < want) r.flags &= static_cast<std::uint8_t>(~tcp_flag::fin);
    // PSH when this segment empties what the application gave us (3.9.1 SEND push).
    if (seq + len == data_end()) r.flags |= tcp_flag::psh;
  }
  // A refused segment (device full) is not sent: callers see 0 and stop, the owner calls
  // on_device_ready() once the device drains. A pure ACK that is refused is simply lost.
  device_blocked_ = !sink_.emit(now, tuple_, r, std::span<const TxPiece>(pieces.data(), n));
  if (device_blocked_) return 0;
  ++stats_.segs_out;
  last_ack_sent_ = rcv_nxt_;
  ack_now_ = false;
  segs_since_ack_ = 0;
  delack_deadline_ = Instant::never();
  last_send_ = now;
  return len;
}

// A segment without data or SYN/FIN carries SND.MAX, not SND.NXT: after an RTO rewound
// SND.NXT (go-back-N), an older sequence number would make the peer drop the segment as
// unacceptable, and with it the acknowledgement it carries (BSD does the same).
void Tcb::send_ack(Instant now) {
  send_segment(now, snd_max_, 0, 0);
}

// RFC 5961 7: challenge ACKs are rate limited so they cannot be used to amplify or probe.
// The limit is per connection (a host-wide counter is a side channel, CVE-2016-5696).
void Tcb::send_challenge_ack(Instant now) {
  if (now - challenge_window_ >= 1s) {
    challenge_window_ = now;
    challenges_in_window_ = 0;
  }
  if (challenges_in_window_ >= cfg_.challenge_ack_limit) return;
  ++challenges_in_window_;
  ++stats_.challenge_acks;
  send_ack(now);
}

void Tcb::send_rst(Instant now, std::uint32_t seq) {
  TcpRepr r;
  r.src_port = tuple_.local_port;
  r.dst_port = tuple_.remote_port;
  r.seq = seq;
  r.flags = tcp_flag::rst;
  sink_.emit(now, tuple_, r, {});
  ++stats_.segs_out;
}

// The payload of the data segment [seq, seq + len): gathered into at most
// max_segment_pieces pieces and, with the options r carries, at most Eff.snd.MSS (RFC 9293
// 3.7.1; SMSS already allows for timestamps, SACK blocks take their room from the data).
// Both limits keep record alignment (RFC 5044 section 8: with MPA, every segment starts
// with an FPDU header): out of pieces, the segment ends at the last record boundary
// gathered; short of room for SACK blocks, a record-bounded segment sends fewer blocks
// (the first, most recent one is kept longest, RFC 2018 section 4) and only a plain byte
// stream gives up data. Shortens len (and sets n) to what goes out.
void Tcb::fit_payload(TcpRepr& r, std::uint32_t seq, std::uint32_t& len, std::span<TxPiece> pieces,
                      std::size_t& n) {
  const std::size_t offset = seq - snd_una_;
  const std::uint32_t want = len;
  len = static_cast<std::uint32_t>(sndbuf_.gather(offset, len, pieces, &n));
  if (len < want) {
    len = static_cast<std::uint32_t>(sndbuf_.cut_at_record(offset, len));
    n = trim_pieces(pieces, n, len);
  }
  auto extra = [&] {
    return static_cast<std::uint32_t>(tcp_header_len(r)) - 20 - (ts_ok_ ? 12 : 0);
  };
  if (extra() == 0 || len + extra() <= smss_) return;
  if (sndbuf_.record_ends_at(offset + len)) {
    while (r.options.sack_count > 0 && len + extra() > smss_) --r.options.sack_count;
    return;
  }
  std::uint32_t room = smss_ > extra() ? smss_ - extra() : 0;
  if (room < len) {
    len = room;
    n = trim_pieces(pieces, n, len);
  }
}

// Retransmits [seq, seq + len) (fast retransmit, NewReno partial ACKs, RFC 6675 NextSeg).
// The original segments started at record boundaries; so does what follows this one,
// because len is cut at the last record boundary within it.
void Tcb::retransmit(Instant now, std::uint32_t seq, std::uint32_t len) {
  const std::uint32_t end = data_end();
  len = std::min(len, seq_lt(seq, end) ? end - seq : 0);  // the FIN is a flag, not data
  if (len > 0) len = static_cast<std::uint32_t>(sndbuf_.cut_at_record(seq - snd_una_, len));
  std::uint8_t flags = 0;
  // The FIN goes again with the last data octet (or alone) once it has been sent.
  if (fin_queued_ && seq_gt(snd_max_, fin_seq()) && seq + len == fin_seq()) flags = tcp_flag::fin;
  if (len == 0 && !flags) return;
  std::uint32_t n = send_segment(now, seq, len, flags);
  if (device_blocked_) return;  // tried again when the device has room (or at the RTO)
  ++stats_.retransmits;
  if (sack_ok_) sb_.mark_retransmitted(seq, n + (flags ? 1 : 0));
  rtt_timing_ = false;  // Karn: no sample across a retransmission
  arm_rto(now);
}

// Sends new (or, after an RTO, go-back-N) data from SND.NXT while the windows allow.
// `in_recovery`: one segment only, because RFC 6675's pipe (not cwnd) already allowed it.
bool Tcb::send_new_data(Instant now, bool in_recovery) {
  bool sent = false;
  for (;;) {
    std::uint32_t end = data_end();
    std::uint32_t unsent = seq_gt(end, snd_nxt_) ? end - snd_nxt_ : 0;
    bool fin_pending = fin_queued_ && !fin_acked_ && snd_nxt_ == end;  // FIN not yet sent
    if (unsent == 0 && !fin_pending) break;

    std::uint32_t cwnd = cc_->cwnd() + newreno_inflation_;
    std::uint32_t wnd = in_recovery ? snd_wnd_ : std::min(snd_wnd_, cwnd);
    std::uint32_t limit = snd_una_ + wnd;
    std::uint32_t usable = seq_gt(limit, snd_nxt_) ? limit - snd_nxt_ : 0;
    if (in_recovery) usable = std::min<std::uint32_t>(usable, smss_);
    bool retransmission = seq_lt(snd_nxt_, snd_max_);

    if (unsent == 0) {
      // Only the FIN is left; it occupies sequence space but needs no window.
      send_segment(now, snd_nxt_, 0, tcp_flag::fin);
      if (device_blocked_) break;
      if (retransmission) ++stats_.retransmits;
      snd_nxt_ += 1;
      snd_max_ = seq_gt(snd_nxt_, snd_max_) ? snd_nxt_ : snd_max_;
      arm_rto(now);
      sent = true;
      break;
    }
    const std::size_t offset = snd_nxt_ - snd_una_;
    // A record that fits one segment but not the usable window waits for the window
    // rather than be split (RFC 5044 section 8 alignment), unless the peer has never
    // offered a window that large: then splitting is the only way forward. With nothing in
    // flight the persist timer keeps asking for the window (update_persist).
    const std::uint32_t next_record = static_cast<std::uint32_t>(
        sndbuf_.record_ends(offset, std::min<std::uint32_t>(unsent, smss_)).first);
    if (next_record > usable && max_snd_wnd_ >= next_record) break;
    std::uint32_t len = std::min({unsent, usable, std::uint32_t{smss_}});
    if (len == 0) break;
    const std::uint32_t last_record =
        static_cast<std::uint32_t>(sndbuf_.record_ends(offset, len).last);
    bool whole_record = last_record != 0;
    if (whole_record) len = last_record;
    // Sender SWS avoidance and Nagle (3.8.6.2.1): a full segment, a whole upper-layer
    // record, everything queued when nothing is unacknowledged (or Nagle is off), at least
    // half the largest window the peer offered, or a retransmission.
    bool full = len == smss_ || whole_record;
    bool all = len == unsent && (snd_nxt_ == snd_una_ || cfg_.nodelay);
    bool half_window = max_snd_wnd_ > 0 && len >= max_snd_wnd_ / 2;
    if (!(full || all || half_window || retransmission || in_recovery)) break;

    // RFC 5681 4.1: after an idle period longer than RTO, restart from the restart window.
    if (!retransmission && snd_una_ == snd_max_ && last_send_.ns != 0 &&
        now - last_send_ > rtt_.rto())
      cc_->on_idle_restart(now, rtt_.rto());

    bool with_fin = fin_queued_ && snd_nxt_ + len == end;
    std::uint32_t n = send_segment(now, snd_nxt_, len, with_fin ? tcp_flag::fin : 0);
    if (n == 0) break;
    if (retransmission) {
      ++stats_.retransmits;
      rtt_timing_ = false;
    } else {
      stats_.bytes_out += n;
      if (!rtt_timing_) {
        rtt_timing_ = true;
        rtt_seq_ = snd_nxt_;
        rtt_start_ = now;
      }
    }
    snd_nxt_ += n + (with_fin && n == len ? 1 : 0);
    if (seq_gt(snd_nxt_, snd_max_)) snd_max_ = snd_nxt_;
    arm_rto(now);
    sent = true;
    if (in_recovery) break;
  }
  return sent;
}

// RFC 6675 5 step (C): while pipe leaves room for a segment, send what NextSeg() picks.
void Tcb::send_recovery(Instant now) {
  for (int guard = 0; guard < 1024; ++guard) {
    std::uint32_t pipe = sb_.pipe(snd_una_, snd_max_, smss_);
    std::uint32_t cwnd = cc_->cwnd();
    if (pipe >= cwnd || cwnd - pipe < smss_) return;
    std::uint32_t end = data_end();
    std::uint32_t unsent = seq_gt(end, snd_nxt_) ? end - snd_nxt_ : 0;
    std::uint32_t window_left =
        seq_gt(snd_una_ + snd_wnd_, snd_nxt_) ? snd_una_ + snd_wnd_ - snd_nxt_ : 0;
    bool have_new = unsent > 0 && window_left > 0;
    auto s = sb_.next_seg(snd_una_, snd_nxt_, snd_max_, smss_, have_new,
                          std::min<std::uint32_t>(unsent, smss_));
    if (!s) return;
    if (s->new_data) {
      if (!send_new_data(now, true)) return;
    } else {
      retransmit(now, s->seq, s->len);
      if (device_blocked_) return;
    }
  }
}

void Tcb::output(Instant now) {
  switch (state_) {
    case TcpState::closed:
    case TcpState::syn_sent:
    case TcpState::syn_received:
      // Nothing but the SYN (sent by open and the timer) before the handshake completes.
      return;
    case TcpState::time_wait:
      if (ack_now_) send_ack(now);
      return;
    default:
      break;
  }
  bool sent = false;
  if (in_recovery_ && sack_ok_) {
    std::uint64_t before = stats_.segs_out;
    send_recovery(now);
    sent = stats_.segs_out != before;
  } else {
    sent = send_new_data(now, false);
  }
  if (!sent && (ack_now_ || window_update_due())) send_ack(now);

  update_persist(now);
}

// RFC 9293 3.8.6.1: with data waiting and nothing in flight, no ACK will come to open the
// window, so the persist timer asks for it. That covers a zero window and also a window
// too small for the next record (send_new_data waits rather than split it) or for a
// segment worth sending (SWS avoidance). The deadline and its back-off survive ACKs that
// do not let us send (on_persist re-arms it); they reset once data is in flight again.
void Tcb::update_persist(Instant now) {
  if (unsent() == 0 || snd_una_ != snd_max_ || device_blocked_) {
    persist_deadline_ = Instant::never();
    persist_backoff_ = 0;
    return;
  }
  if (persist_deadline_ == Instant::never()) {
    arm(persist_deadline_, now + rtt_.rto());
    rto_deadline_ = Instant::never();
  }
}

}  // namespace esock::tcp
