// Demultiplexing, listeners and connection lifetimes (RFC 9293 3.10.7.1-2 for segments
// without a connection), timers and the poll round.
#include "tcp/stack/stack.h"

#include <algorithm>
#include <cerrno>
#include <vector>

#include "tcp/engine/no_tcb.h"
#include "tcp/engine/syn_cookie.h"

namespace esock::tcp {

Stack::Stack(Device& dev, const StackConfig& cfg, Instant now)
    : cfg_(cfg),
      iface_(dev, cfg.iface, *this),
      isn_(cfg.isn_key ? IsnGenerator(*cfg.isn_key) : IsnGenerator::with_random_key()),
      now_(now) {
  port_cursor_ = isn_.ts_offset(FourTuple{}) % 16384;  // a keyed start, not predictable
  rx_frames_.limit = cfg.rx_pinned_frames_max;
  rx_frames_.bytes_limit = cfg.rx_memory_max;
}

Stack::~Stack() = default;

TcpConfig Stack::clamp(TcpConfig c) const {
  c.mss = std::min<std::uint16_t>(c.mss, iface_.mss());
  return c;
}

bool Stack::poll(Instant now) {
  now_ = std::max(now_, now);
  // Receive bursts while they come full, up to a bound: what a caller does per round
  // around this poll (the sockets runtime looks at every connection) is then paid per
  // several bursts, and a peer's transmit ring does not stay full behind a slow round
  // (4000 connections: a memif ring refused 1.8 million frames at 32 per round).
  bool work = false;
  for (int b = 0; b < max_rx_bursts; ++b) {
    const std::size_t n = iface_.poll(now_);
    work |= n > 0;
    if (n < Interface::rx_burst_size) break;
  }
  work |= run_timers(now_);
  if (time_wait_.size() > cfg_.time_wait_max) bound_time_wait();
  if (!reapable_.empty()) reap();
  iface_.flush();
  // Connections the device refused earlier go on now that the flush made room, until the
  // device refuses again: the rest wait for the next round rather than each building a
  // frame (headers, checksum) the full device refuses too.
  if (!blocked_.empty()) {
    std::vector<FourTuple> retry;
    retry.swap(blocked_);
    for (std::size_t i = 0; i < retry.size(); ++i) {
      auto it = conns_.find(retry[i]);
      if (it == conns_.end()) continue;
      Connection& c = *it->second;
      c.retry_queued_ = false;  // refused again: queued again, for the next round
      if (!c.tcb_.device_blocked()) continue;
      const std::uint64_t refused = iface_.stats().tx_device_full;
      c.tcb_.on_device_ready(now_);
      if (iface_.stats().tx_device_full != refused) {  // the device is full again
        for (std::size_t k = i + 1; k < retry.size(); ++k) blocked_.push_back(retry[k]);
        break;
      }
    }
    iface_.flush();
    work = true;
  }
  return work;
}

// Timers are checked at most once per granularity: RTO is at least 200 ms and the delayed
// ACK 40 ms, so a 1 ms tick costs nothing in accuracy. Each tick looks only at the
// connections whose earliest deadline came (timers_), O(log n) each.
bool Stack::run_timers(Instant now) {
  if (now < next_timer_scan_) return false;
  next_timer_scan_ = now + cfg_.timer_granularity;
  bool work = false;
  while (!timers_.empty() && timers_.top().when <= now) {
    const TimerEntry e = timers_.top();
    timers_.pop();
    Connection* c = find(e.tuple, e.serial);
    // An entry the connection has replaced by an earlier one, or of one freed since.
    if (c == nullptr || c->scheduled_ != e.when) continue;
    c->scheduled_ = Instant::never();
    ++stats_.timer_checks;
    if (c->tcb_.next_deadline() <= now) {
      c->tcb_.on_timer(now);
      work = true;
    }
    schedule(*c, c->tcb_.next_deadline());  // a deadline that was moved later, or is next
  }
  // Entries of connections that left TIME-WAIT (2 MSL over, or a new incarnation) leave
  // from the front as they go, roughly in the order they came.
  while (!time_wait_.empty()) {
    const Connection* c = find(time_wait_.front().first, time_wait_.front().second);
    if (c != nullptr && c->state() == TcpState::time_wait) break;
    time_wait_.pop_front();
  }
  iface_.on_timer(now);
  return work;
}

void Stack::schedule(Connection& c, Instant when) {
  if (when == Instant::never() || when >= c.scheduled_) return;  // an entry comes earlier
  c.scheduled_ = when;
  timers_.push(TimerEntry{when, c.tuple(), c.serial_});
  // Entries whose deadline moved later wait in the heap until their time: a connection
  // with a far deadline (keepalive, 2 h) and a busy conversation would leave one per
  // exchange. Past twice one per connection the heap is rebuilt from the live deadlines.
  if (timers_.size() > 2 * conns_.size() + 64) rebuild_timers();
}

void Stack::rebuild_timers() {
  std::vector<TimerEntry> live;
  live.reserve(conns_.size());
  for (auto& [t, c] : conns_) {
    c->scheduled_ = c->tcb_.next_deadline();
    if (c->scheduled_ != Instant::never()) live.push_back(TimerEntry{c->scheduled_, t, c->serial_});
  }
  timers_ = decltype(timers_)(std::greater<TimerEntry>(), std::move(live));
}

Connection* Stack::find(const FourTuple& t, std::uint64_t serial) {
  const auto it = conns_.find(t);
  return it != conns_.end() && it->second->serial_ == serial ? it->second.get() : nullptr;
}

void Stack::note_released(Connection& c) {
  if (!c.released_) return;
  if (c.state() == TcpState::closed) {
    reapable_.emplace_back(c.tuple(), c.serial_);
  } else if (c.state() == TcpState::time_wait && !c.time_wait_queued_) {
    c.time_wait_queued_ = true;
    time_wait_.emplace_back(c.tuple(), c.serial_);  // bounded in the round (poll)
  }
}

// StackConfig::time_wait_max: past it the oldest released TIME-WAITs end at once.
void Stack::bound_time_wait() {
  std::erase_if(time_wait_, [this](const auto& e) {
    const Connection* c = find(e.first, e.second);
    return c == nullptr || c->state() != TcpState::time_wait;
  });
  while (time_wait_.size() > cfg_.time_wait_max) {
    Connection* c = find(time_wait_.front().first, time_wait_.front().second);
    time_wait_.pop_front();
    c->tcb_.abort(now_);  // in TIME-WAIT: no RST, the TCB just goes (RFC 9293 3.10.5)
    ++stats_.time_wait_overflow;
  }
}

void Stack::reap() {
  std::vector<std::pair<FourTuple, std::uint64_t>> due;
  due.swap(reapable_);
  for (const auto& [t, serial] : due) {
    const auto it = conns_.find(t);
    if (it == conns_.end() || it->second->serial_ != serial) continue;
    const Connection& c = *it->second;
    if (c.released_ && c.state() == TcpState::closed) erase(it);
  }
  // The freed connections' entries would wait out their deadlines (2 MSL, keepalive) and
  // keep the heap's memory: rebuilt to the live ones once they outnumber them.
  if (timers_.size() > 2 * conns_.size() + 64) rebuild_timers();
}

void Stack::erase(
    std::unordered_map<FourTuple, std::unique_ptr<Connection>, TupleHash>::iterator it) {
  retired_drops_ += it->second->tcb_.stats().drops;
  conns_.erase(it);
}

StackStats Stack::stats() const {
  StackStats s = stats_;
  s.drops += retired_drops_;
  for (const auto& [t, c] : conns_) s.drops += c->tcb_.stats().drops;
  // The interface checks the checksum and header before any TCP code sees the segment
  // (RFC 9293 3.1); its counters are the only record of those drops.
  const InterfaceStats& i = iface_.stats();
  s.drops[DropReason::bad_checksum] += i.tcp_bad_csum;
  s.drops[DropReason::bad_header] += i.tcp_bad_header;
  s.rx_frames_pinned = rx_frames_.held;
  s.rx_bytes_held = rx_frames_.bytes_held;
  s.rx_segments_copied = rx_frames_.copied_segments;
  return s;
}

bool Stack::emit(Instant now, const FourTuple& t, const TcpRepr& hdr,
                 std::span<const TxPiece> payload) {
  bool ok = iface_.send_tcp(now, t.remote_ip, hdr, payload);
  if (!ok) {
    // Each connection is queued once: queued per refusal, a connection refused for its data
    // and then its ACK went on twice, each copy retried it, and the list doubled every poll
    // while the device stayed full (found by fuzz_tcp_listen).
    auto it = conns_.find(t);
    if (it != conns_.end() && !it->second->retry_queued_) {
      it->second->retry_queued_ = true;
      blocked_.push_back(t);
    }
  }
  return ok;
}

void Stack::on_tcp_segment(Instant now, Ipv4Addr src, Ipv4Addr dst, const TcpRepr& hdr,
                           bytes_view payload, const BufRef& ref) {
  now_ = std::max(now_, now);
  FourTuple t{dst, src, hdr.dst_port, hdr.src_port};
  auto it = conns_.find(t);
  // (The listener is looked up only for a SYN that found its tuple in TIME-WAIT, not for
  // every segment of an established connection.)
  if (it != conns_.end() && it->second->released_ &&
      it->second->tcb_.accepts_new_incarnation(hdr) && listeners_.count(hdr.dst_port) != 0) {
    // RFC 6191 section 2 (RFC 9293 3.10.7.4 allows it): a client reusing the 4-tuple of a
    // connection this side closed first (HTTP/1.0: the server) opens a new one at once,
    // instead of a challenge ACK, its RST and the client's SYN again a second later.
    it->second->tcb_.abort(now_);  // in TIME-WAIT: no RST, the TCB just goes
    erase(it);
    it = conns_.end();
    ++stats_.time_wait_reopened;
  }
  if (it != conns_.end() && it->second->state() != TcpState::closed) {
    it->second->tcb_.on_segment(now_, hdr, payload, ref);
    return;
  }
  auto l = listeners_.find(hdr.dst_port);
  if (l != listeners_.end()) {
    on_listen_segment(*l->second, t, hdr, payload, ref);
    return;
  }
  // 3.10.7.1: no connection and no listener (CLOSED): a reset answers anything but a reset.
  ++stats_.segments_no_connection;
  ++stats_.drops[DropReason::no_connection];
  send_reset_for(t, hdr, payload.size());
}

void Stack::send_reset_for(const FourTuple& t, const TcpRepr& hdr, std::size_t payload_len) {
  if (auto rst = reset_for(hdr, payload_len)) iface_.send_tcp(now_, t.remote_ip, *rst, {});
}

void Stack::on_listen_segment(Listener& l, const FourTuple& t, const TcpRepr& hdr,
                              bytes_view payload, const BufRef& ref) {
  switch (listen_verdict(hdr)) {
    case ListenVerdict::drop:
      // 3.10.7.2 first: an RST is ignored (nothing to reset); fourth: a segment with
      // neither SYN nor ACK cannot start or belong to a connection.
      ++stats_.drops[hdr.has(tcp_flag::rst) ? DropReason::listen_rst : DropReason::listen_no_syn];
      return;
    case ListenVerdict::reset:
      // The ACK that completes a handshake answered with a SYN cookie (RFC 4987 3.6).
      if (cfg_.syn_cookies && accept_syn_cookie(l, t, hdr, payload, ref)) return;
      // 3.10.7.2 second: an ACK to a listener acknowledges nothing it sent: reset.
      ++stats_.segments_no_connection;
      ++stats_.drops[DropReason::listen_ack];
      send_reset_for(t, hdr, payload.size());
      return;
    case ListenVerdict::syn:
      break;
  }
  ++stats_.syns_received;
  // A connection with this tuple that is CLOSED but not yet released blocks the tuple
  // until its user lets go: drop the SYN, the peer retransmits.
  if (conns_.count(t)) {
    ++stats_.drops[DropReason::listen_tuple_busy];
    return;
  }
  if (l.half_open_.size() >= l.syn_backlog_ && cfg_.syn_cookies) {
    // A SYN flood costs no memory, and every client that completes its handshake gets in.
    if (!payload.empty() || hdr.has(tcp_flag::fin)) ++stats_.drops[DropReason::syn_data];
    send_syn_cookie(l, t, hdr);
    return;
  }
  if (l.half_open_.size() >= l.syn_backlog_) {
    // Bounded memory under a SYN flood: drop the oldest half-open connection silently.
    Connection* victim = l.half_open_.front();
    l.half_open_.pop_front();
    victim->parent_ = nullptr;
    victim->released_ = true;
    erase(conns_.find(victim->tuple()));
    ++stats_.half_open_evicted;
  }
  Connection* c = create(t, l.cfg_, &l);
  l.half_open_.push_back(c);
  // Data in a SYN is not delivered before the handshake (no TCP Fast Open here; 3.10.7.2
  // would queue it): our SYN-ACK acknowledges only the SYN, so the peer retransmits it.
  if (!payload.empty() || hdr.has(tcp_flag::fin)) ++stats_.drops[DropReason::syn_data];
  c->tcb_.open_passive(now_, isn_.isn(t, now_), isn_.ts_offset(t), hdr);
}

// RFC 4987 section 3.6. The SYN-ACK is the one a connection would send (a TCB that lives
// only for this call builds it), with the cookie as ISN and, with timestamps, the
// client's window scale and SACK-permitted in TSval's low bits (syn_cookie.h). Without
// timestamps, both are left out of the handshake, since nothing could bring them back.
void Stack::send_syn_cookie(Listener& l, const FourTuple& t, const TcpRepr& syn) {
  TcpRepr offer = syn;
  if (!offer.options.timestamps) {
    offer.options.wscale.reset();
    offer.options.sack_permitted = false;
  }
  struct Capture final : SegmentSink {
    bool emit(Instant, const FourTuple&, const TcpRepr& h, std::span<const TxPiece>) override {
      hdr = h;
      return true;
    }
    TcpRepr hdr;
  } capture;
  const std::uint32_t cookie =
      syn_cookie::make(isn_, t, syn.seq, syn.options.mss.value_or(536), now_);
  Tcb tcb(clamp(l.cfg_), t, capture, nullptr);
  tcb.open_passive(now_, cookie, isn_.ts_offset(t), offer);
  TcpRepr& r = capture.hdr;
  if (r.options.timestamps)
    r.options.timestamps->tsval = syn_cookie::encode_ts(
        r.options.timestamps->tsval, {offer.options.wscale, offer.options.sack_permitted});
  iface_.send_tcp(now_, t.remote_ip, r, {});
  ++stats_.syn_cookies_sent;
}

bool Stack::accept_syn_cookie(Listener& l, const FourTuple& t, const TcpRepr& ack,
                              bytes_view payload, const BufRef& ref) {
  if (!ack.has(tcp_flag::ack) || ack.has(tcp_flag::syn) || ack.has(tcp_flag::rst)) return false;
  const std::uint32_t irs = ack.seq - 1;
  const std::uint32_t iss = ack.ack - 1;
  const std::optional<std::uint16_t> mss = syn_cookie::check(isn_, t, irs, iss, now_);
  if (!mss) return false;
  if (conns_.count(t)) return false;
  // The client's SYN as the cookie keeps it: its ISN, MSS and (with timestamps) options.
  TcpRepr syn;
  syn.src_port = ack.src_port;
  syn.dst_port = ack.dst_port;
  syn.seq = irs;
  syn.flags = tcp_flag::syn;
  syn.window = ack.window;
  syn.options.mss = *mss;
  if (ack.options.timestamps) {
    const syn_cookie::TsBits b = syn_cookie::decode_ts(ack.options.timestamps->tsecr);
    syn.options.wscale = b.wscale;
    syn.options.sack_permitted = b.sack;
    syn.options.timestamps = ack.options.timestamps;
  }
  Connection* c = create(t, l.cfg_, &l);
  l.half_open_.push_back(c);
  c->tcb_.open_from_cookie(now_, iss, isn_.ts_offset(t), syn);
  ++stats_.syn_cookies_accepted;
  c->tcb_.on_segment(now_, ack, payload, ref);  // SYN-RECEIVED -> ESTABLISHED (3.10.7.4)
  return true;
}

Connection* Stack::create(const FourTuple& t, const TcpConfig& cfg, Listener* parent) {
  auto c = std::unique_ptr<Connection>(new Connection(*this, clamp(cfg), t, parent));
  Connection* raw = c.get();
  raw->serial_ = ++next_serial_;
  conns_[t] = std::move(c);
  ++stats_.connections_opened;
  return raw;
}

void Stack::child_established(Connection* c) {
  Listener* l = c->parent_;
  auto& h = l->half_open_;
  h.erase(std::remove(h.begin(), h.end(), c), h.end());
  if (l->accept_q_.size() >= l->backlog_) {
    ++stats_.accept_queue_overflow;
    c->parent_ = nullptr;
    c->released_ = true;
    c->tcb_.abort(now_);
    return;
  }
  l->accept_q_.push_back(c);
}

void Stack::child_gone(Connection* c) {
  Listener* l = c->parent_;
  auto drop = [c](std::deque<Connection*>& q) {
    q.erase(std::remove(q.begin(), q.end(), c), q.end());
  };
  drop(l->half_open_);
  drop(l->accept_q_);
  c->parent_ = nullptr;
  c->released_ = true;  // nobody accepted it: free it
}

std::uint16_t Stack::pick_port(Ipv4Addr dst, std::uint16_t port) {
  std::uint32_t span = std::uint32_t{cfg_.ephemeral_last} - cfg_.ephemeral_first + 1;
  for (std::uint32_t i = 0; i < span; ++i) {
    std::uint16_t p = static_cast<std::uint16_t>(cfg_.ephemeral_first + (port_cursor_++ % span));
    if (listeners_.count(p)) continue;
    const FourTuple t{iface_.ip(), dst, p, port};
    if (cfg_.owns_flow && !cfg_.owns_flow(t)) continue;
    if (!conns_.count(t)) return p;
  }
  return 0;
}

Connection* Stack::connect(Ipv4Addr dst, std::uint16_t port, int* err, const TcpConfig* cfg,
                           std::uint16_t local_port) {
  std::uint16_t lp = local_port ? local_port : pick_port(dst, port);
  FourTuple t{iface_.ip(), dst, lp, port};
  if (lp == 0 || conns_.count(t)) {
    if (err) *err = lp == 0 ? EADDRNOTAVAIL : EADDRINUSE;
    return nullptr;
  }
  Connection* c = create(t, cfg ? *cfg : cfg_.tcp, nullptr);
  c->tcb_.open_active(now_, isn_.isn(t, now_), isn_.ts_offset(t));
  iface_.flush();
  return c;
}

Listener* Stack::listen(std::uint16_t port, std::size_t backlog, int* err, std::size_t syn_backlog,
                        const TcpConfig* cfg) {
  if (port == 0 || listeners_.count(port)) {
    if (err) *err = port == 0 ? EINVAL : EADDRINUSE;
    return nullptr;
  }
  auto l = std::make_unique<Listener>();
  l->port_ = port;
  l->backlog_ = std::max<std::size_t>(backlog, 1);
  l->syn_backlog_ = std::max<std::size_t>(syn_backlog, 1);
  l->cfg_ = cfg ? *cfg : cfg_.tcp;
  Listener* raw = l.get();
  listeners_[port] = std::move(l);
  return raw;
}

Connection* Stack::accept(Listener* l) {
  if (l->accept_q_.empty()) return nullptr;
  Connection* c = l->accept_q_.front();
  l->accept_q_.pop_front();
  c->parent_ = nullptr;
  return c;
}

void Stack::close_listener(Listener* l) {
  std::vector<Connection*> pending(l->half_open_.begin(), l->half_open_.end());
  pending.insert(pending.end(), l->accept_q_.begin(), l->accept_q_.end());
  for (Connection* c : pending) {
    c->parent_ = nullptr;
    c->released_ = true;
    c->tcb_.abort(now_);
  }
  listeners_.erase(l->port_);
  reap();
  iface_.flush();
}

void Stack::close(Connection* c) {
  c->released_ = true;
  c->user_ = nullptr;
  c->tcb_.close(now_);
  c->tcb_.set_orphan(now_);
  c->tcb_.set_user(c);  // the TCB's user is the Connection itself, which stays
  // The orphan's FIN-WAIT-2 bound, armed while the TCB had no user (set_orphan).
  schedule(*c, c->tcb_.next_deadline());
  note_released(*c);  // closed or in TIME-WAIT already
  iface_.flush();
}

std::size_t Stack::unsettled() const {
  std::size_t n = 0;
  for (const auto& [tuple, c] : conns_) {
    const TcpState st = c->state();
    n += c->released_ && (st == TcpState::fin_wait_1 || st == TcpState::fin_wait_2 ||
                          st == TcpState::closing || st == TcpState::last_ack);
  }
  return n;
}

std::size_t Stack::abort_unfinished(std::size_t max) {
  std::vector<Connection*> unfinished;
  for (const auto& [tuple, c] : conns_) {
    if (unfinished.size() == max) break;
    switch (c->state()) {
      case TcpState::syn_received:
      case TcpState::established:
      case TcpState::close_wait:
      case TcpState::fin_wait_1:
        unfinished.push_back(c.get());
        break;
      default:
        break;
    }
  }
  // RFC 9293 3.10.5 (ABORT): <SEQ=SND.NXT><CTL=RST> in each of these states.
  for (Connection* c : unfinished) abort(c);
  iface_.flush();
  return unfinished.size();
}

void Stack::abort(Connection* c) {
  c->released_ = true;
  c->user_ = nullptr;
  c->tcb_.abort(now_);
  note_released(*c);  // (on_closed did, unless it was closed before)
  iface_.flush();
}

}  // namespace esock::tcp
