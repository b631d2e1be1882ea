// Exactly-once delivery around ranges the upper layer placed (TcbUser contract in tcb.h):
// what is offered to on_out_of_order, and how in-order data that spans placed ranges is
// handed over (data for the uncovered parts, on_range_delivered for the placed ones).
#include "tcb_script.h"

namespace esock::tcp::test {
namespace {

// An upper layer that places every offered segment and logs what it sees, in order:
// data drained from the receive queue and the ranges reported to it.
class PlacingUser : public TcbUser {
 public:
  struct Event {
    bool range;
    std::uint32_t seq, len;
    friend bool operator==(const Event&, const Event&) = default;
  };
  bool on_out_of_order(std::uint32_t seq, bytes_view data, const BufRef&) override {
    if (!place) return false;
    offered.push_back({true, seq, static_cast<std::uint32_t>(data.size())});
    return true;
  }
  void on_range_delivered(std::uint32_t seq, std::uint32_t len) override {
    drain();  // the queued octets come before the range
    events.push_back({true, seq, len});
    pos = seq + len;
  }
  void on_readable() override { drain(); }
  void drain() {
    RecvQueue& q = tcb->recv_queue();
    if (q.empty()) return;
    auto n = static_cast<std::uint32_t>(q.size());
    std::vector<std::uint8_t> buf(n);
    q.read(buf);
    for (std::uint32_t i = 0; i < n; ++i)
      EXPECT_EQ(buf[i], static_cast<std::uint8_t>((pos + i) * 7)) << "octet " << pos + i;
    if (!events.empty() && !events.back().range && events.back().seq + events.back().len == pos)
      events.back().len += n;
    else
      events.push_back({false, pos, n});
    pos += n;
  }
  Tcb* tcb = nullptr;
  bool place = true;
  std::uint32_t pos = 0;  // stream position of the next octet the user expects
  std::vector<Event> offered, events;
};

class TcbExactlyOnce : public TcbScript {
 protected:
  void SetUp() override {
    establish_active();
    u.tcb = tcb.get();
    u.pos = peer_nxt;
    tcb->set_user(&u);
    s = peer_nxt;
  }
  using Event = PlacingUser::Event;
  static Event data(std::uint32_t seq, std::uint32_t len) { return {false, seq, len}; }
  static Event range(std::uint32_t seq, std::uint32_t len) { return {true, seq, len}; }
  PlacingUser u;
  std::uint32_t s = 0;
};

TEST_F(TcbExactlyOnce, ASegmentOverlappingStoredDataIsNotOfferedOnlyItsNewPartIsStored) {
  u.place = false;
  inject_data(1000, s + 1000);  // stored as data
  u.place = true;
  inject_data(1000, s + 1500);  // overlaps: not offered, [2000, 2500) stored as data
  inject_data(500, s + 2500);   // disjoint: offered and placed
  EXPECT_EQ(u.offered, (std::vector<Event>{range(s + 2500, 500)}));
  inject_data(1000, s);
  EXPECT_EQ(u.events, (std::vector<Event>{data(s, 2500), range(s + 2500, 500)}));
  EXPECT_EQ(tcb->rcv_nxt(), s + 3000);
}

TEST_F(TcbExactlyOnce, ASegmentOverlappingAPlacedRangeIsNotOfferedAgain) {
  inject_data(1000, s + 1000);
  inject_data(1000, s + 1000);  // a duplicate of the placed segment
  inject_data(1000, s + 1500);  // a re-segmented retransmission overlapping it
  EXPECT_EQ(u.offered, (std::vector<Event>{range(s + 1000, 1000)}));
  inject_data(1000, s);
  EXPECT_EQ(u.events,
            (std::vector<Event>{data(s, 1000), range(s + 1000, 1000), data(s + 2000, 500)}));
}

TEST_F(TcbExactlyOnce, NoRoomToRememberTheRangeMeansNotOffered) {
  // The store holds a bounded number of pieces (rcv_buf / 536 here, tcb.cc). Placed ranges
  // with gaps between them do not merge, so each takes one.
  const std::uint32_t limit = cfg.rcv_buf / 536;
  for (std::uint32_t i = 0; i < limit + 3; ++i) inject_data(1, s + 2 + 2 * i);
  pop_all();
  EXPECT_EQ(u.offered.size(), limit);  // placing the rest would be forgotten: not offered
  EXPECT_EQ(tcb->reassembly().piece_count(), limit);
  EXPECT_EQ(tcb->stats().ooo_dropped, 3u);  // the peer resends them
  EXPECT_EQ(tcb->stats().ooo_placed_by_user, limit);
}

TEST_F(TcbExactlyOnce, CoalescedInOrderDataSpanningPlacedRangesDeliversEachOctetOnce) {
  inject_data(1000, s + 1000);
  inject_data(1000, s + 3000);
  ASSERT_EQ(u.offered.size(), 2u);
  inject_data(5000, s);  // the peer collapsed its retransmissions into one segment
  EXPECT_EQ(u.events,
            (std::vector<Event>{data(s, 1000), range(s + 1000, 1000), data(s + 2000, 1000),
                                range(s + 3000, 1000), data(s + 4000, 1000)}));
  EXPECT_EQ(tcb->rcv_nxt(), s + 5000);
  EXPECT_TRUE(tcb->reassembly().empty());
}

TEST_F(TcbExactlyOnce, InOrderDataEndingInsideAPlacedRangeReportsTheWholeRange) {
  inject_data(1000, s + 1000);
  inject_data(1500, s);
  EXPECT_EQ(u.events, (std::vector<Event>{data(s, 1000), range(s + 1000, 1000)}));
  EXPECT_EQ(tcb->rcv_nxt(), s + 2000);
  inject_data(1000, s + 1000);  // an old duplicate: nothing more
  EXPECT_EQ(u.events.size(), 2u);
}

TEST_F(TcbExactlyOnce, StoredDataAndPlacedRangesAfterTheSegmentFollowInOrder) {
  u.place = false;
  inject_data(500, s + 1000);  // data
  u.place = true;
  inject_data(500, s + 1500);   // placed, adjacent
  inject_data(1000, s + 2000);  // placed, adjacent: merged with the previous range
  inject_data(1000, s);
  EXPECT_EQ(u.events, (std::vector<Event>{data(s, 1500), range(s + 1500, 1500)}));
  EXPECT_EQ(tcb->rcv_nxt(), s + 3000);
}

}  // namespace
}  // namespace esock::tcp::test
