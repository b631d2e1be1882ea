// The TCP/IP stack over one Device: an Interface (Ethernet, ARP, IPv4, ICMP), the
// connections (TCBs) demultiplexed by four-tuple, listeners with bounded backlogs, ISNs per
// RFC 6528, ephemeral ports, timers. This is the native API lib/mpa and lib/esock use.
//
// One Stack belongs to one thread (one polling core, ARCHITECTURE.md); nothing here locks.
// It does no waiting of its own: the owner calls poll(now) in its loop (tcp::Runtime in
// runtime/runtime.h is one that backs off when idle, dev/idle_backoff.h the policy).
//
// Connections and listeners are owned by the stack. A Connection* stays valid until the
// user releases it with close() or abort(); a connection the peer reset stays (CLOSED, with
// its error) until released.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/time.h"
#include "tcp/dev/device.h"
#include "tcp/engine/config.h"
#include "tcp/engine/isn.h"
#include "tcp/engine/tcb.h"
#include "tcp/net/interface.h"

namespace esock::tcp {

class Stack;
class Listener;

struct StackConfig {
  InterfaceConfig iface;
  TcpConfig tcp;  // defaults for every connection; mss is clamped to the interface's
  std::uint16_t ephemeral_first = 49152;  // RFC 6335 dynamic ports
  std::uint16_t ephemeral_last = 65535;
  // One stack per queue of a multi-queue port (lib/tcp/dpdk/flow_hash.h): an active open
  // takes only ephemeral ports whose flow this says the stack's queue carries, so the
  // peer's answers come back to this stack. Unset: every flow is this stack's.
  std::function<bool(const FourTuple&)> owns_flow;
  std::optional<IsnGenerator::Key> isn_key;  // unset: a random key
  Duration timer_granularity = 1ms;
  // Received frames all connections together keep pinned in their in-order queues
  // (rx_frame_budget.h); half of a DPDK port's default pool of 8191.
  std::size_t rx_pinned_frames_max = 4096;
  // Received octets all connections together may hold, in order and out of order
  // (rx_frame_budget.h, as Linux's tcp_mem); each connection keeps TcpConfig::rx_memory_min
  // whatever this says.
  std::size_t rx_memory_max = 256u << 20;
  // RFC 4987 section 3.6: with a listener's half-open backlog full, answer SYNs with SYN
  // cookies (no state) rather than dropping the oldest half-open connection.
  bool syn_cookies = true;
  // Connections the application let go that wait out TIME-WAIT (2 MSL, RFC 9293 3.6):
  // past this many, the timer scan ends the others at once (as Linux's tcp_max_tw_buckets),
  // so a peer's connection churn cannot make the stack hold unbounded memory (about 4 KiB
  // each). TIME-WAIT only guards against old duplicates; its loss costs no data.
  std::size_t time_wait_max = 16384;
};

struct StackStats {
  // Answered with RST (or dropped if RST): drops[no_connection] + drops[listen_ack].
  std::uint64_t segments_no_connection = 0;
  std::uint64_t syns_received = 0;
  std::uint64_t half_open_evicted = 0;  // SYN backlog full: the oldest half-open dropped
  // SYN backlog full: SYN-ACKs sent as SYN cookies, and connections their ACK rebuilt.
  std::uint64_t syn_cookies_sent = 0, syn_cookies_accepted = 0;
  std::uint64_t accept_queue_overflow = 0;
  std::uint64_t connections_opened = 0, connections_closed = 0;
  std::uint64_t time_wait_overflow = 0;  // TIME-WAITs ended early (time_wait_max)
  // Connections whose timers a tick looked at (their earliest deadline came): grows with
  // the timers that fire, not with the connections held.
  std::uint64_t timer_checks = 0;
  std::uint64_t time_wait_reopened = 0;  // TIME-WAITs a new SYN took over (RFC 6191)
  // Received frames the connections' in-order queues pin now (bounded by
  // StackConfig::rx_pinned_frames_max and TcpConfig::rx_pinned_frames), and the segments
  // copied instead because a bound was hit.
  std::uint64_t rx_frames_pinned = 0, rx_segments_copied = 0;
  std::uint64_t rx_bytes_held = 0;  // received octets all connections hold (rx_memory_max)
  // Every TCP segment (or its text) this stack discarded unprocessed, by reason
  // (drop_reason.h): the interface's checksum and header failures, segments without a
  // connection, and the sum over every connection's TcbStats::drops, live or freed.
  DropCounters drops;
};

class Connection final : private TcbUser {
 public:
  // Data calls, as on the TCB, at the stack's current time.
  std::size_t send(bytes_view data);
  bool send_ref(bytes_view data, const BufRef& ref, bool end_of_record = false);
  bool send_record(std::span<const TxPiece> parts);  // one whole record (Tcb::send_record)
  std::size_t recv(mut_bytes out);
  void shutdown_send();  // FIN after queued data (the RFC's CLOSE); reading goes on

  TcpState state() const { return tcb_.state(); }
  bool established() const;
  bool readable() const { return !tcb_.recv_queue().empty() || tcb_.peer_closed(); }
  bool peer_closed() const { return tcb_.peer_closed(); }
  std::size_t send_space() const { return tcb_.send_space(); }
  int error() const { return to_errno(tcb_.close_reason()); }
  const FourTuple& tuple() const { return tcb_.tuple(); }

  // Callbacks instead of polling: the hooks of TcbUser, forwarded.
  void set_user(TcbUser* user) { user_ = user; }
  void set_nodelay(bool on);
  // The engine, for upper layers that need zero-copy receive or sequence numbers.
  Tcb& tcb() { return tcb_; }
  const Tcb& tcb() const { return tcb_; }

 private:
  friend class Stack;
  Connection(Stack& stack, const TcpConfig& cfg, const FourTuple& t, Listener* parent);
  void on_established() override;
  void on_readable() override;
  void on_writable() override;
  void on_acked(std::uint32_t bytes) override;
  void on_closed(CloseReason r) override;
  bool on_out_of_order(std::uint32_t seq, bytes_view data, const BufRef& ref) override;
  void on_range_delivered(std::uint32_t seq, std::uint32_t len) override;
  void on_deadline(Instant when) override;

  Stack& stack_;
  Tcb tcb_;
  TcbUser* user_ = nullptr;
  Listener* parent_;  // set while in SYN-RECEIVED or waiting in an accept queue
  bool released_ = false;
  bool retry_queued_ = false;  // on the stack's blocked_ list (once, however often refused)
  // The stack's timer queue: this connection's earliest entry in it (never: none), and
  // what tells its entries from those of an earlier connection with the same tuple.
  Instant scheduled_ = Instant::never();
  std::uint64_t serial_ = 0;
  bool time_wait_queued_ = false;  // on the stack's time_wait_ list
};

class Listener {
 public:
  std::uint16_t port() const { return port_; }
  std::size_t pending() const { return accept_q_.size(); }
  std::size_t half_open() const { return half_open_.size(); }

 private:
  friend class Stack;
  friend class Connection;
  std::uint16_t port_ = 0;
  std::size_t backlog_ = 0;
  std::size_t syn_backlog_ = 0;
  TcpConfig cfg_;
  std::deque<Connection*> half_open_;  // oldest first
  std::deque<Connection*> accept_q_;
};

class Stack final : private TcpSink, private SegmentSink {
 public:
  Stack(Device& dev, const StackConfig& cfg, Instant now);
  ~Stack();
  Stack(const Stack&) = delete;
  Stack& operator=(const Stack&) = delete;

  // One round: receive a burst, run due timers, hand queued frames to the device.
  // Returns true if anything happened (the caller's idle back-off uses it).
  bool poll(Instant now);
  Instant now() const { return now_; }

  // Active open. Null with *err = an errno (EADDRNOTAVAIL: no ephemeral port left).
  Connection* connect(Ipv4Addr dst, std::uint16_t port, int* err, const TcpConfig* cfg = nullptr,
                      std::uint16_t local_port = 0);
  // Passive open: backlog bounds the accept queue, syn_backlog the half-open connections
  // (on overflow the oldest half-open one is dropped, so a SYN flood uses bounded memory
  // and legitimate handshakes keep completing while the flood lasts).
  Listener* listen(std::uint16_t port, std::size_t backlog, int* err, std::size_t syn_backlog = 256,
                   const TcpConfig* cfg = nullptr);
  Connection* accept(Listener* l);
  void close_listener(Listener* l);  // pending connections are reset
  // Releases a connection: orderly close (FIN after queued data); the stack keeps it
  // through FIN-WAIT/TIME-WAIT and frees it after.
  void close(Connection* c);
  void abort(Connection* c);  // RST, freed at once
  // Released connections whose close is under way (FIN-WAIT-1/2, CLOSING, LAST-ACK): an
  // exit drain waits for them to finish with the peer's help. Connections nobody closed
  // (still in an accept queue, connecting) do not count: nothing will close them.
  std::size_t unsettled() const;
  // The stack is about to stop for good (its process exits): every connection in
  // SYN-RECEIVED, ESTABLISHED, CLOSE-WAIT or FIN-WAIT-1 (no FIN sent yet, or ours not
  // acknowledged) is reset (RFC 9293 3.10.5 ABORT), as its peer would otherwise wait for
  // octets or a FIN that never come. FIN-WAIT-2 goes silently, as the kernel's orphans do
  // (its peer has everything and may still read; a reset would turn its next read into
  // ECONNRESET); so do TIME-WAIT, and CLOSING and LAST-ACK, where ABORT sends nothing (both
  // FINs were sent). At most `max` at a time, so the caller can let the device drain
  // between batches (a reset that finds the device full is lost with its connection);
  // returns how many were reset.
  std::size_t abort_unfinished(std::size_t max = SIZE_MAX);

  Interface& iface() { return iface_; }
  // A snapshot: drops sums the connections, so this walks them (for reports, not per
  // segment).
  StackStats stats() const;
  std::size_t connection_count() const { return conns_.size(); }
  std::size_t timer_queue_size() const { return timers_.size(); }  // live and stale entries
  // Connections listed as in TIME-WAIT (those whose TIME-WAIT ended leave the list from its
  // front, so it may count a few that already left).
  std::size_t time_wait_listed() const { return time_wait_.size(); }
  const TcpConfig& default_config() const { return cfg_.tcp; }

 private:
  friend class Connection;
  struct TupleHash {
    std::size_t operator()(const FourTuple& t) const {
      std::uint64_t a = (std::uint64_t{t.local_ip.v} << 32) | t.remote_ip.v;
      std::uint64_t b = (std::uint64_t{t.local_port} << 16) | t.remote_port;
      return std::hash<std::uint64_t>()(a * 0x9e3779b97f4a7c15ull ^ b);
    }
  };
  // TcpSink
  void on_tcp_segment(Instant now, Ipv4Addr src, Ipv4Addr dst, const TcpRepr& hdr,
                      bytes_view payload, const BufRef& ref) override;
  // SegmentSink
  bool emit(Instant now, const FourTuple& t, const TcpRepr& hdr,
            std::span<const TxPiece> payload) override;

  TcpConfig clamp(TcpConfig c) const;
  Connection* create(const FourTuple& t, const TcpConfig& cfg, Listener* parent);
  void on_listen_segment(Listener& l, const FourTuple& t, const TcpRepr& hdr, bytes_view payload,
                         const BufRef& ref);
  void send_syn_cookie(Listener& l, const FourTuple& t, const TcpRepr& syn);
  bool accept_syn_cookie(Listener& l, const FourTuple& t, const TcpRepr& ack, bytes_view payload,
                         const BufRef& ref);
  void send_reset_for(const FourTuple& t, const TcpRepr& hdr, std::size_t payload_len);
  void child_established(Connection* c);
  void child_gone(Connection* c);
  bool run_timers(Instant now);
  // Timers (TcbUser::on_deadline): a queue by deadline, so a round looks at the TCBs whose
  // time came, not at every TCB (4000 held connections spent a tenth of every process's
  // time in Tcb::next_deadline when each tick asked them all).
  void schedule(Connection& c, Instant when);
  void rebuild_timers();  // drops the stale entries
  void reap();            // frees the connections on reapable_
  // Frees a connection, keeping its drop counters in the stack's.
  void erase(std::unordered_map<FourTuple, std::unique_ptr<Connection>, TupleHash>::iterator it);
  std::uint16_t pick_port(Ipv4Addr dst, std::uint16_t port);

  StackConfig cfg_;
  Interface iface_;
  IsnGenerator isn_;
  Instant now_;
  Instant next_timer_scan_{};
  struct TimerEntry {
    Instant when;
    FourTuple tuple;
    std::uint64_t serial;
    bool operator>(const TimerEntry& o) const { return when > o.when; }
  };
  std::priority_queue<TimerEntry, std::vector<TimerEntry>, std::greater<TimerEntry>> timers_;
  std::uint64_t next_serial_ = 0;
  // Released connections that reached CLOSED since the last round: freed by reap().
  std::vector<std::pair<FourTuple, std::uint64_t>> reapable_;
  // Released connections in TIME-WAIT, oldest first (entries of connections that left it
  // are dropped once the list outgrows StackConfig::time_wait_max).
  std::deque<std::pair<FourTuple, std::uint64_t>> time_wait_;
  void note_released(Connection& c);  // queues c for reap() or the TIME-WAIT bound
  void bound_time_wait();
  Connection* find(const FourTuple& t, std::uint64_t serial);
  RxFrameBudget rx_frames_;  // shared by every connection's receive queue: outlives them
  static constexpr int max_rx_bursts = 8;  // per poll(), while they come full
  std::unordered_map<FourTuple, std::unique_ptr<Connection>, TupleHash> conns_;
  std::unordered_map<std::uint16_t, std::unique_ptr<Listener>> listeners_;
  std::uint32_t port_cursor_ = 0;
  std::vector<FourTuple> blocked_;  // connections whose last segment the device refused, once each
  StackStats stats_;                // drops: only those counted by the stack itself
  DropCounters retired_drops_;      // of connections already freed
};

}  // namespace esock::tcp
