// A scripted peer for one Tcb: inject segments as the remote host, pop what the TCB emits,
// move a manual clock. Each test reads like a packetdrill script.
#pragma once

#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tcp/engine/tcb.h"

namespace esock::tcp::test {

struct Emitted {
  TcpRepr hdr;
  std::vector<std::uint8_t> payload;
  std::uint32_t len() const { return static_cast<std::uint32_t>(payload.size()); }
};

class RecordingSink : public SegmentSink {
 public:
  bool emit(Instant, const FourTuple&, const TcpRepr& hdr,
            std::span<const TxPiece> payload) override {
    if (refuse) return false;
    Emitted e{hdr, {}};
    for (const TxPiece& p : payload)
      e.payload.insert(e.payload.end(), p.data.begin(), p.data.end());
    out.push_back(std::move(e));
    return true;
  }
  std::deque<Emitted> out;
  bool refuse = false;  // the device is full
};

class RecordingUser : public TcbUser {
 public:
  void on_established() override { ++established; }
  void on_readable() override { ++readable; }
  void on_writable() override { ++writable; }
  void on_acked(std::uint32_t n) override { acked += n; }
  void on_closed(CloseReason r) override { closed = r; }
  bool on_out_of_order(std::uint32_t seq, bytes_view data, const BufRef&) override {
    if (!place_ooo) return false;
    placed.push_back({seq, static_cast<std::uint32_t>(data.size())});
    return true;
  }
  void on_range_delivered(std::uint32_t seq, std::uint32_t len) override {
    delivered.push_back({seq, len});
  }
  int established = 0, readable = 0, writable = 0;
  std::uint64_t acked = 0;
  std::optional<CloseReason> closed;
  bool place_ooo = false;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> placed, delivered;
};

struct PeerOptions {
  bool timestamps = true;
  bool sack = true;
  std::optional<std::uint8_t> wscale = 7;
  std::uint16_t mss = 1460;
};

class TcbScript : public ::testing::Test {
 protected:
  static constexpr std::uint32_t iss = 1000;
  static constexpr std::uint32_t peer_iss = 500000;

  TcbScript() {
    cfg.mss = 1460;
    cfg.rcv_buf = 256 * 1024;
    cfg.snd_buf = 256 * 1024;
    clock.set(Instant{1'000'000'000});
  }

  void make() {
    tuple = FourTuple{Ipv4Addr::from_octets(10, 0, 0, 1), Ipv4Addr::from_octets(10, 0, 0, 2), 40000,
                      80};
    tcb = std::make_unique<Tcb>(cfg, tuple, sink, &user);
  }
  Instant now() const { return clock.now(); }

  // Moves time forward in small steps, running every timer that falls due.
  void advance(Duration d) {
    Instant end = now() + d;
    for (int guard = 0; guard < 100000; ++guard) {
      Instant next = tcb->next_deadline();
      if (next > end) break;
      clock.set(std::max(next, now()));
      tcb->on_timer(now());
    }
    clock.set(end);
  }

  std::uint32_t peer_tsval() const {
    return 77000 + static_cast<std::uint32_t>(now().ns / 1'000'000);
  }

  // A segment from the peer. Timestamps are added when the peer negotiated them.
  TcpRepr seg(std::uint8_t flags, std::uint32_t seq, std::uint32_t ack,
              std::uint16_t window = 65535) const {
    TcpRepr r;
    r.src_port = tuple.remote_port;
    r.dst_port = tuple.local_port;
    r.seq = seq;
    r.ack = ack;
    r.flags = flags;
    r.window = window;
    if (peer.timestamps) r.options.timestamps = TcpTimestamps{peer_tsval(), last_tsval};
    return r;
  }
  TcpRepr syn_options(TcpRepr r) const {
    r.options.mss = peer.mss;
    r.options.wscale = peer.wscale;
    r.options.sack_permitted = peer.sack;
    return r;
  }
  void inject(const TcpRepr& r, const std::vector<std::uint8_t>& payload = {}) {
    std::uint8_t* mem = nullptr;
    BufRef ref = HeapBuf::make(payload.size(), &mem);
    if (!payload.empty()) std::copy(payload.begin(), payload.end(), mem);
    tcb->on_segment(now(), r, bytes_view(mem, payload.size()), ref);
  }
  // Data from the peer at the peer's next sequence number (or `seq`).
  void inject_data(std::uint32_t len, std::optional<std::uint32_t> seq = std::nullopt,
                   std::uint8_t extra = 0) {
    std::uint32_t s = seq.value_or(peer_nxt);
    std::vector<std::uint8_t> p(len);
    for (std::uint32_t i = 0; i < len; ++i) p[i] = static_cast<std::uint8_t>((s + i) * 7);
    inject(seg(tcp_flag::ack | extra, s, tcb->snd_nxt(), peer_window), p);
    if (!seq || s == peer_nxt) peer_nxt = s + len;
  }
  void ack_up_to(std::uint32_t ack, std::vector<SackBlock> sacks = {}) {
    TcpRepr r = seg(tcp_flag::ack, peer_nxt, ack, peer_window);
    r.options.sack_count = static_cast<std::uint8_t>(sacks.size());
    for (std::size_t i = 0; i < sacks.size(); ++i) r.options.sacks[i] = sacks[i];
    inject(r);
  }

  Emitted pop() {
    EXPECT_FALSE(sink.out.empty()) << "expected a segment from the TCB";
    if (sink.out.empty()) return {};
    Emitted e = std::move(sink.out.front());
    sink.out.pop_front();
    if (e.hdr.options.timestamps) last_tsval = e.hdr.options.timestamps->tsval;
    return e;
  }
  std::vector<Emitted> pop_all() {
    std::vector<Emitted> v;
    while (!sink.out.empty()) v.push_back(pop());
    return v;
  }
  bool idle() const { return sink.out.empty(); }

  // Three-way handshakes; leave the connection ESTABLISHED with nothing pending.
  void establish_active() {
    make();
    tcb->open_active(now(), iss, 0);
    Emitted syn = pop();
    ASSERT_TRUE(syn.hdr.has(tcp_flag::syn));
    inject(syn_options(seg(tcp_flag::syn | tcp_flag::ack, peer_iss, iss + 1, peer_window)));
    Emitted ack = pop();
    ASSERT_EQ(ack.hdr.flags, tcp_flag::ack);
    ASSERT_EQ(tcb->state(), TcpState::established);
    peer_nxt = peer_iss + 1;
  }
  void establish_passive() {
    make();
    TcpRepr syn = syn_options(seg(tcp_flag::syn, peer_iss, 0, peer_window));
    if (peer.timestamps) syn.options.timestamps->tsecr = 0;
    tcb->open_passive(now(), iss, 0, syn);
    Emitted synack = pop();
    ASSERT_EQ(synack.hdr.flags, tcp_flag::syn | tcp_flag::ack);
    inject(seg(tcp_flag::ack, peer_iss + 1, iss + 1, peer_window));
    ASSERT_EQ(tcb->state(), TcpState::established);
    peer_nxt = peer_iss + 1;
  }
  // Sends `n` bytes of pattern data from the application.
  void app_send(std::size_t n) {
    std::vector<std::uint8_t> d(n);
    for (std::size_t i = 0; i < n; ++i) d[i] = static_cast<std::uint8_t>(i);
    ASSERT_EQ(tcb->send(now(), d), n);
  }

  TcpConfig cfg;
  PeerOptions peer;
  std::uint16_t peer_window = 65535;
  ManualClock clock;
  RecordingSink sink;
  RecordingUser user;
  FourTuple tuple;
  std::unique_ptr<Tcb> tcb;
  std::uint32_t peer_nxt = 0;
  std::uint32_t last_tsval = 0;
};

}  // namespace esock::tcp::test
