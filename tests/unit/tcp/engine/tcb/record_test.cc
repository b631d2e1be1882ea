// Record alignment on every transmit path (RFC 5044 section 8: with MPA over this TCP,
// every segment starts with an FPDU header, so a record that fits one segment is never
// split): retransmissions (fast retransmit, RFC 6675 NextSeg, RTO go-back-N), gather-slot
// exhaustion, SACK option room (RFC 9293 3.7.1 Eff.snd.MSS), small peer windows, window
// probes (3.8.6.1), send_record and max_record.
#include "tcb_script.h"

namespace esock::tcp::test {
namespace {

class TcbRecord : public TcbScript {
 protected:
  // One record of `size` octets in `parts` pieces, each referenced (its own heap block)
  // or copied. Byte i of the stream (counted from ISS + 1) is pattern(i).
  bool send_rec(std::uint32_t size, int parts = 1, bool by_ref = true) {
    std::vector<TxPiece> pv;
    std::uint32_t done = 0;
    for (int k = 0; k < parts; ++k) {
      std::uint32_t n = k + 1 == parts ? size - done : size / static_cast<std::uint32_t>(parts);
      std::uint8_t* mem = nullptr;
      BufRef ref = HeapBuf::make(n, &mem);
      for (std::uint32_t i = 0; i < n; ++i) mem[i] = pattern(queued + done + i);
      pv.push_back(TxPiece{bytes_view(mem, n), by_ref ? ref : BufRef()});
      keep.push_back(ref);  // copied parts must outlive the call only
      done += n;
    }
    if (!tcb->send_record(now(), pv)) return false;
    queued += size;
    return true;
  }
  static std::uint8_t pattern(std::uint32_t i) { return static_cast<std::uint8_t>(i * 7 + 3); }
  // Every emitted data segment starts at a multiple of `rec` from ISS + 1 and carries the
  // pattern bytes of its offsets.
  void expect_aligned(const std::vector<Emitted>& out, std::uint32_t rec) {
    for (const Emitted& e : out) {
      if (e.len() == 0) continue;
      std::uint32_t off = e.hdr.seq - (iss + 1);
      EXPECT_EQ(off % rec, 0u) << "segment at offset " << off << " starts inside a record";
      for (std::uint32_t i = 0; i < e.len(); ++i) ASSERT_EQ(e.payload[i], pattern(off + i));
    }
  }
  std::uint32_t queued = 0;
  std::vector<BufRef> keep;
};

TEST_F(TcbRecord, MaxRecordIsTheSmssOnceEstablished) {
  make();
  EXPECT_EQ(tcb->max_record(), 536u);  // RFC 9293 3.7.1 default before the handshake
  peer.mss = 1000;
  establish_active();
  EXPECT_EQ(tcb->max_record(), 988u);  // the peer's MSS less the timestamp option
}

TEST_F(TcbRecord, SendRecordQueuesAllPartsBeforeTransmitting) {
  cfg.nodelay = true;
  establish_active();
  ASSERT_TRUE(send_rec(1000, 5, false));
  ASSERT_TRUE(send_rec(1000, 3, true));
  std::vector<Emitted> out = pop_all();
  ASSERT_EQ(out.size(), 2u);  // one segment per record, not one per part
  EXPECT_EQ(out[0].len(), 1000u);
  EXPECT_EQ(out[1].len(), 1000u);
  expect_aligned(out, 1000);
  // All or nothing: a record larger than the free space is refused whole.
  EXPECT_FALSE(send_rec(static_cast<std::uint32_t>(tcb->send_space()) + 1));
  EXPECT_EQ(tcb->unsent(), 0u);
}

TEST_F(TcbRecord, NewRenoFastRetransmitAndPartialAckRetransmitWholeRecords) {
  peer.sack = false;
  cfg.nodelay = true;
  establish_active();
  ack_up_to(iss + 1);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(send_rec(1000));
  ASSERT_EQ(pop_all().size(), 10u);
  std::uint32_t una = iss + 1;
  ack_up_to(una);
  ack_up_to(una);
  ack_up_to(una);
  Emitted fr = pop();
  EXPECT_EQ(fr.hdr.seq, una);
  EXPECT_EQ(fr.len(), 1000u);  // min(SMSS, flight) = 1448 cut at the record boundary
  pop_all();
  ack_up_to(una + 3000);  // partial ACK (RFC 6582 3.2 step 5)
  std::vector<Emitted> r = pop_all();
  ASSERT_FALSE(r.empty());
  EXPECT_EQ(r[0].hdr.seq, una + 3000);
  EXPECT_EQ(r[0].len(), 1000u);
  expect_aligned(r, 1000);
}

TEST_F(TcbRecord, SackNextSegRetransmissionsEndOnRecordBoundaries) {
  cfg.nodelay = true;
  establish_active();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(send_rec(1000));
  ASSERT_EQ(pop_all().size(), 10u);
  std::uint32_t una = iss + 1;
  auto blk = [&](std::uint32_t from, std::uint32_t to) {
    return SackBlock{una + from * 1000, una + to * 1000};
  };
  // Records 2 and 3 lost: the hole is 2000 octets, NextSeg offers SMSS of it.
  ack_up_to(una + 2000, {blk(4, 5)});
  ack_up_to(una + 2000, {blk(4, 6)});
  ack_up_to(una + 2000, {blk(4, 7)});
  std::vector<Emitted> r = pop_all();
  ack_up_to(una + 2000, {blk(4, 8)});
  ack_up_to(una + 2000, {blk(4, 9)});
  for (Emitted& e : pop_all()) r.push_back(std::move(e));
  ASSERT_GE(r.size(), 2u);
  EXPECT_EQ(r[0].hdr.seq, una + 2000);
  EXPECT_EQ(r[0].len(), 1000u);
  EXPECT_EQ(r[1].hdr.seq, una + 3000);
  expect_aligned(r, 1000);
}

TEST_F(TcbRecord, RtoGoBackNDoesNotSplitARecordToFillTheWindow) {
  cfg.nodelay = true;
  establish_active();
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(send_rec(1000));
  ASSERT_EQ(pop_all().size(), 6u);
  advance(201ms);
  // cwnd = 1 SMSS (1448): one whole record, not 1448 octets ending inside the second.
  std::vector<Emitted> r = pop_all();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].hdr.seq, iss + 1);
  EXPECT_EQ(r[0].len(), 1000u);
  ack_up_to(iss + 1001);
  r = pop_all();
  ASSERT_FALSE(r.empty());
  expect_aligned(r, 1000);
}

TEST_F(TcbRecord, RunningOutOfGatherSlotsCutsAtARecordBoundary) {
  cfg.nodelay = true;
  establish_active();
  // 9 referenced parts per record (an FPDU with markers): two records need 18 slots.
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(send_rec(450, 9));
  std::vector<Emitted> out = pop_all();
  ASSERT_EQ(out.size(), 3u);
  for (const Emitted& e : out) EXPECT_EQ(e.len(), 450u);  // not 800 (16 x 50) + 650
  expect_aligned(out, 450);
}

class TcbRecordSack : public TcbRecord {
 protected:
  // Three out-of-order segments from the peer: our segments carry three SACK blocks.
  void three_sack_blocks() {
    s = peer_nxt;
    inject_data(100, s + 1000);
    inject_data(100, s + 3000);
    inject_data(100, s + 5000);
    pop_all();
  }
  std::uint32_t s = 0;
};

TEST_F(TcbRecordSack, ARecordBoundedSegmentDropsSackBlocksInsteadOfData) {
  cfg.nodelay = true;
  establish_active();
  three_sack_blocks();
  ASSERT_TRUE(send_rec(1430));  // + 28 octets for 3 blocks > SMSS, + 12 for 1 block fits
  Emitted e = pop();
  EXPECT_EQ(e.len(), 1430u);
  ASSERT_EQ(e.hdr.options.sack_count, 1);
  // RFC 2018 4: the block kept is the first, holding the most recent segment.
  EXPECT_EQ(e.hdr.options.sacks[0], (SackBlock{s + 5000, s + 5100}));
  ASSERT_TRUE(send_rec(1448));  // a full-SMSS record: no room for any block
  Emitted f = pop();
  EXPECT_EQ(f.len(), 1448u);
  EXPECT_EQ(f.hdr.options.sack_count, 0);
}

TEST_F(TcbRecordSack, APlainByteStreamStillGivesUpDataForSackBlocks) {
  cfg.nodelay = true;
  establish_active();
  three_sack_blocks();
  app_send(1448);
  Emitted e = pop();
  EXPECT_EQ(e.hdr.options.sack_count, 3);
  EXPECT_EQ(e.len(), 1448u - 28);  // Eff.snd.MSS with 3 blocks (RFC 9293 3.7.1)
}

TEST_F(TcbRecord, SmallWindowWaitsForTheWholeRecordAndProbesForTheWindow) {
  peer.wscale = std::nullopt;  // windows in octets
  cfg.nodelay = true;
  establish_active();  // the SYN-ACK offered 65535: MAX.SND.WND is large
  peer_window = 600;
  ack_up_to(iss + 1);
  ASSERT_TRUE(send_rec(1000));
  EXPECT_TRUE(idle());  // 600 octets would split the record
  // Nothing in flight: the persist timer asks for the window (RFC 9293 3.8.6.1).
  ASSERT_NE(tcb->next_deadline(), Instant::never());
  clock.set(tcb->next_deadline());
  tcb->on_timer(now());
  Emitted probe = pop();
  EXPECT_EQ(probe.hdr.seq, iss);  // SND.UNA - 1, zero length
  EXPECT_EQ(probe.len(), 0u);
  ack_up_to(iss + 1);  // still 600: keep waiting, the timer backs off
  EXPECT_TRUE(idle());
  Instant second = tcb->next_deadline();
  EXPECT_GT(second - now(), 300ms);
  peer_window = 1000;
  ack_up_to(iss + 1);
  Emitted d = pop();
  EXPECT_EQ(d.hdr.seq, iss + 1);
  EXPECT_EQ(d.len(), 1000u);
  EXPECT_EQ(tcb->stats().window_probes, 1u);
}

TEST_F(TcbRecord, ARecordLargerThanAnyWindowEverOfferedIsSplit) {
  peer.wscale = std::nullopt;
  peer_window = 600;  // the SYN-ACK offers 600 and the peer never offers more
  cfg.nodelay = true;
  establish_active();
  ASSERT_TRUE(send_rec(1000));
  Emitted a = pop();
  EXPECT_EQ(a.len(), 600u);  // waiting would wait forever
  ack_up_to(iss + 601);
  Emitted b = pop();
  EXPECT_EQ(b.hdr.seq, iss + 601);
  EXPECT_EQ(b.len(), 400u);
}

TEST_F(TcbRecord, ZeroWindowProbesCarryNoRecordOctets) {
  cfg.nodelay = true;
  establish_active();
  peer_window = 0;
  ack_up_to(iss + 1);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(send_rec(1000));
  EXPECT_TRUE(idle());
  for (int i = 0; i < 3; ++i) {
    clock.set(tcb->next_deadline());
    tcb->on_timer(now());
    Emitted probe = pop();
    EXPECT_EQ(probe.hdr.seq, iss);
    EXPECT_EQ(probe.len(), 0u);  // not one octet of the first record
    ack_up_to(iss + 1);
  }
  peer_window = 65535;
  ack_up_to(iss + 1);
  std::vector<Emitted> out = pop_all();
  ASSERT_EQ(out.size(), 3u);
  for (const Emitted& e : out) EXPECT_EQ(e.len(), 1000u);
  expect_aligned(out, 1000);
}

}  // namespace
}  // namespace esock::tcp::test
