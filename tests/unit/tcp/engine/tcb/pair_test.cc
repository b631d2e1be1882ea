// A seeded property test on two Tcbs joined by a faulty network (loss, duplication,
// reordering, and a middlebox-like coalescing of adjacent segments, as Linux's
// tcp_retrans_try_collapse produces). A sends random-sized records (some larger than
// SMSS) built from several parts; B sends a plain byte stream back, so A's data segments
// carry SACK blocks. Checked: every data segment A emits starts at a record boundary
// unless it is inside a record larger than SMSS (RFC 5044 section 8), and B's upper layer,
// placing a random subset of the out-of-order segments it is offered, sees every octet
// exactly once, in order, as data or as a placed range (TcbUser contract).
#include <algorithm>
#include <cstdio>
#include <map>
#include <random>

#include "tcb_script.h"

namespace esock::tcp::test {
namespace {

std::uint8_t pattern(std::uint64_t i, std::uint8_t salt) {
  return static_cast<std::uint8_t>(i * 7 + (i >> 9) + salt);
}

struct Packet {
  Instant at;
  std::uint64_t order;
  int to;
  TcpRepr hdr;
  std::vector<std::uint8_t> payload;
};

class PairSim;

class Host : public SegmentSink, public TcbUser {
 public:
  Host(PairSim& sim, int id) : sim_(sim), id_(id) {}
  bool emit(Instant now, const FourTuple&, const TcpRepr& hdr,
            std::span<const TxPiece> payload) override;
  bool on_out_of_order(std::uint32_t seq, bytes_view data, const BufRef&) override;
  void on_range_delivered(std::uint32_t seq, std::uint32_t len) override;
  void on_readable() override { drain_queue(); }
  void drain_queue();
  std::uint32_t off(std::uint32_t seq) const { return seq - (tcb->irs() + 1); }

  std::unique_ptr<Tcb> tcb;
  std::uint8_t peer_salt = 0;    // pattern of what the peer sends
  std::vector<std::uint8_t> st;  // per received octet: 0 nothing, 1 placed, 2 delivered
  std::uint32_t pos = 0;         // stream offset of the next octet expected
  std::uint64_t placed = 0, ranges = 0;

 private:
  PairSim& sim_;
  int id_;
};

class PairSim {
 public:
  explicit PairSim(std::uint32_t seed) : rng(seed), a(*this, 0), b(*this, 1) {
    cfg.mss = 1460;
    cfg.rcv_buf = 64 * 1024;
    cfg.snd_buf = 64 * 1024;
    cfg.nodelay = seed % 2 == 0;
    clock.set(Instant{1'000'000'000});
    a.peer_salt = 11;  // A receives B's stream
    b.peer_salt = 0;
    a.st.resize(b_total);
    // Records: mostly up to SMSS, some tiny, some larger than a segment.
    std::uint64_t total = 0;
    for (int i = 0; i < 250; ++i) {
      std::uint32_t r = uni(100);
      std::uint32_t size = r < 10 ? 1 + uni(64) : r < 15 ? 1449 + uni(3000) : 1 + uni(1448);
      rec_start.push_back(static_cast<std::uint32_t>(total));
      rec_size.push_back(size);
      total += size;
    }
    a_total = static_cast<std::uint32_t>(total);
    b.st.resize(a_total);
  }
  std::uint32_t uni(std::uint32_t n) { return static_cast<std::uint32_t>(rng() % n); }

  // A segment leaves `from`: faults apply, then it is queued for the other side.
  void transmit(int from, Instant now, const TcpRepr& hdr, std::vector<std::uint8_t> payload) {
    if (from == 0 && !payload.empty()) check_alignment(hdr.seq, payload.size());
    int copies = uni(100) < 3 ? 0 : uni(100) < 2 ? 2 : 1;
    for (int c = 0; c < copies; ++c)
      queue(Packet{now + std::chrono::microseconds(500 + uni(3000)), seq_no++, 1 - from, hdr,
                   payload});
    // Coalescing: also send [previous segment, this one) as one, when they are adjacent.
    if (from == 0 && !payload.empty()) {
      if (last_a && last_a->hdr.seq + last_a->payload.size() == hdr.seq && uni(100) < 8) {
        Packet p{now + std::chrono::microseconds(uni(4000)), seq_no++, 1, hdr, last_a->payload};
        p.hdr.seq = last_a->hdr.seq;
        p.payload.insert(p.payload.end(), payload.begin(), payload.end());
        queue(std::move(p));
        ++coalesced;
      }
      last_a = Packet{now, 0, 1, hdr, payload};
    }
  }
  void queue(Packet p) { net.push_back(std::move(p)); }

  void check_alignment(std::uint32_t seq, std::size_t len) {
    ++a_data_segments;
    std::uint32_t o = seq - (a.tcb->iss() + 1);
    auto it = std::upper_bound(rec_start.begin(), rec_start.end(), o);
    ASSERT_NE(it, rec_start.begin());
    std::size_t i = static_cast<std::size_t>(it - rec_start.begin()) - 1;
    if (rec_start[i] != o) {
      EXPECT_GT(rec_size[i], a.tcb->max_record())
          << "segment [" << o << ", +" << len << ") starts inside record " << i << " of "
          << rec_size[i];
    }
  }

  void feed_a(Instant now) {
    if (!a.tcb->sendable()) return;
    while (next_rec < rec_size.size() && a.tcb->send_space() >= rec_size[next_rec]) {
      std::uint32_t start = rec_start[next_rec], size = rec_size[next_rec];
      std::uint32_t parts = 1 + uni(5);
      std::vector<TxPiece> pv;
      std::uint32_t done = 0;
      for (std::uint32_t k = 0; k < parts && done < size; ++k) {
        std::uint32_t n = k + 1 == parts ? size - done : std::min(size - done, 1 + uni(size));
        std::uint8_t* mem = nullptr;
        BufRef ref = HeapBuf::make(n, &mem);
        for (std::uint32_t j = 0; j < n; ++j) mem[j] = pattern(start + done + j, 0);
        pv.push_back(TxPiece{bytes_view(mem, n), uni(2) ? ref : BufRef()});
        keep.push_back(ref);
        done += n;
      }
      ASSERT_TRUE(a.tcb->send_record(now, pv));
      ++next_rec;
    }
  }
  void feed_b(Instant now) {
    if (!b.tcb->sendable()) return;
    while (b_sent < b_total) {
      std::vector<std::uint8_t> d(std::min<std::uint32_t>(b_total - b_sent, 1 + uni(3000)));
      for (std::size_t j = 0; j < d.size(); ++j) d[j] = pattern(b_sent + j, 11);
      std::size_t n = b.tcb->send(now, d);
      b_sent += static_cast<std::uint32_t>(n);
      if (n < d.size()) break;
    }
  }

  void run() {
    FourTuple ta{Ipv4Addr::from_octets(10, 0, 0, 1), Ipv4Addr::from_octets(10, 0, 0, 2), 40000, 80};
    FourTuple tb{ta.remote_ip, ta.local_ip, ta.remote_port, ta.local_port};
    a.tcb = std::make_unique<Tcb>(cfg, ta, a, &a);
    b.tcb = std::make_unique<Tcb>(cfg, tb, b, &b);
    a.tcb->open_active(clock.now(), 1000 + uni(1u << 31), uni(1000));
    for (int guard = 0; guard < 2'000'000; ++guard) {
      Instant now = clock.now();
      if (a.tcb->state() == TcpState::established) feed_a(now);
      if (b.tcb->state() == TcpState::established) feed_b(now);
      if (done()) return;
      // The next event: a packet arrival or a timer.
      auto it = std::min_element(net.begin(), net.end(), [](const Packet& x, const Packet& y) {
        return x.at < y.at || (x.at == y.at && x.order < y.order);
      });
      Instant t = std::min(a.tcb->next_deadline(), b.tcb->next_deadline());
      if (it != net.end() && it->at <= t) {
        Packet p = std::move(*it);
        net.erase(it);
        clock.set(std::max(p.at, now));
        deliver(p);
      } else {
        ASSERT_NE(t, Instant::never()) << "stalled";
        clock.set(std::max(t, now));
        if (a.tcb->next_deadline() <= clock.now()) a.tcb->on_timer(clock.now());
        if (b.tcb->next_deadline() <= clock.now()) b.tcb->on_timer(clock.now());
      }
      ASSERT_LT(clock.now() - Instant{1'000'000'000}, 600s) << "no progress";
      if (::testing::Test::HasFatalFailure()) return;
    }
    FAIL() << "event budget exhausted";
  }
  void deliver(const Packet& p) {
    Host& h = p.to == 0 ? a : b;
    if (p.to == 1 && b.tcb->state() == TcpState::closed) {
      if (!p.hdr.has(tcp_flag::syn) || p.hdr.has(tcp_flag::ack)) return;
      b.tcb->open_passive(clock.now(), 700000 + uni(1u << 30), uni(1000), p.hdr);
      return;
    }
    std::uint8_t* mem = nullptr;
    BufRef ref = HeapBuf::make(p.payload.size(), &mem);
    std::copy(p.payload.begin(), p.payload.end(), mem);
    h.tcb->on_segment(clock.now(), p.hdr, bytes_view(mem, p.payload.size()), ref);
    // The application read everything from on_readable / on_range_delivered, before the
    // Tcb decided on its window update.
  }
  bool done() const { return b.pos == a_total && a.pos == b_total; }

  std::mt19937 rng;
  TcpConfig cfg;
  ManualClock clock;
  Host a, b;
  std::vector<Packet> net;
  std::optional<Packet> last_a;
  std::uint64_t seq_no = 0, coalesced = 0, a_data_segments = 0;
  std::vector<std::uint32_t> rec_start, rec_size;
  std::size_t next_rec = 0;
  std::uint32_t a_total = 0, b_total = 150'000, b_sent = 0;
  std::vector<BufRef> keep;
};

bool Host::emit(Instant now, const FourTuple&, const TcpRepr& hdr,
                std::span<const TxPiece> payload) {
  std::vector<std::uint8_t> bytes;
  for (const TxPiece& p : payload) bytes.insert(bytes.end(), p.data.begin(), p.data.end());
  sim_.transmit(id_, now, hdr, std::move(bytes));
  return true;
}

// B places a random half of what it is offered (A never places).
bool Host::on_out_of_order(std::uint32_t seq, bytes_view data, const BufRef&) {
  if (id_ == 0 || sim_.uni(2) == 0) return false;
  std::uint32_t o = off(seq);
  for (std::size_t i = 0; i < data.size(); ++i) {
    EXPECT_EQ(st[o + i], 0) << "octet " << o + i << " offered again after placement/delivery";
    EXPECT_EQ(data[i], pattern(o + i, peer_salt));
    st[o + i] = 1;
  }
  placed += data.size();
  return true;
}

void Host::on_range_delivered(std::uint32_t seq, std::uint32_t len) {
  drain_queue();  // the queued octets precede the range
  std::uint32_t o = off(seq);
  EXPECT_EQ(o, pos) << "range out of order";
  for (std::uint32_t i = 0; i < len; ++i) {
    EXPECT_EQ(st[o + i], 1) << "octet " << o + i << " reported but never placed";
    st[o + i] = 2;
  }
  pos = o + len;
  ++ranges;
}

void Host::drain_queue() {
  RecvQueue& q = tcb->recv_queue();
  while (!q.empty()) {
    bytes_view f = q.front();
    for (std::size_t i = 0; i < f.size(); ++i) {
      ASSERT_LT(pos, st.size());
      EXPECT_EQ(st[pos], 0) << "octet " << pos << " handed over again (placed or delivered)";
      EXPECT_EQ(f[i], pattern(pos, peer_salt)) << "octet " << pos;
      st[pos++] = 2;
    }
    q.consume(f.size());
  }
}

TEST(TcbPair, RecordsStayAlignedAndPlacedOctetsAreDeliveredExactlyOnce) {
  std::uint64_t placed = 0, ranges = 0, coalesced = 0, retransmits = 0, recoveries = 0;
  for (std::uint32_t seed = 1; seed <= 24; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    PairSim sim(seed);
    sim.run();
    if (::testing::Test::HasFailure()) return;
    ASSERT_TRUE(sim.done());
    for (std::uint8_t s : sim.b.st) ASSERT_EQ(s, 2);
    placed += sim.b.placed;
    ranges += sim.b.ranges;
    coalesced += sim.coalesced;
    retransmits += sim.a.tcb->stats().retransmits;
    recoveries += sim.a.tcb->stats().fast_recoveries;
  }
  // The faults did their job: placement, coalesced segments and both kinds of recovery.
  std::printf(
      "placed %llu octets, %llu ranges, %llu coalesced, %llu retransmits, %llu recoveries\n",
      static_cast<unsigned long long>(placed), static_cast<unsigned long long>(ranges),
      static_cast<unsigned long long>(coalesced), static_cast<unsigned long long>(retransmits),
      static_cast<unsigned long long>(recoveries));
  EXPECT_GT(retransmits, 0u);
  EXPECT_GT(recoveries, 0u);
  EXPECT_GT(placed, 0u);
  EXPECT_GT(ranges, 0u);
  EXPECT_GT(coalesced, 0u);
}

}  // namespace
}  // namespace esock::tcp::test
