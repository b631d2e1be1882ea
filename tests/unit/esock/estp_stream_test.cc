// The ESTP engine end to end over two in-memory software RNICs: credits, buffer copy,
// rendezvous by RDMA Read (zero-copy and bounce pulls), MSGMODE boundaries, FIN, protocol
// errors. Seeded random write/read/split sizes; every octet is verified.
#include <gtest/gtest.h>

#include <cstring>
#include <deque>

#include "estp_harness.h"

namespace esock::estp::testing {
namespace {

// Feeds one byte stream into a Stream with random write sizes; rendezvous for big writes,
// up to max_out of them outstanding (pipelined), with DATA copies between them.
struct Writer {
  std::vector<std::uint8_t> data;
  std::size_t threshold = 0;
  std::size_t max_out = 1;
  std::size_t pos = 0;                // octets handed to the stream (copied or offered)
  std::deque<std::size_t> in_rndv{};  // offered and not finished, oldest first
  bool step(Stream& s, std::mt19937& rng, std::size_t max_write) {
    if (!in_rndv.empty()) {
      if (const auto done = s.rndv_finished()) {
        EXPECT_EQ(*done, in_rndv.front());
        in_rndv.pop_front();
        return true;
      }
      if (in_rndv.size() >= max_out) return false;
    }
    if (pos == data.size()) return false;
    const std::size_t n = std::min(data.size() - pos, 1 + rng() % max_write);
    const bytes_view chunk{data.data() + pos, n};
    if (threshold != 0 && n >= threshold) {
      const int rc = s.start_rndv(chunk);
      if (rc == 0) {
        in_rndv.push_back(n);
        pos += n;
      }
      EXPECT_TRUE(rc == 0 || rc == EAGAIN) << rc;
      return rc == 0;
    }
    const std::ptrdiff_t r = s.write(chunk, false);
    if (r > 0) pos += static_cast<std::size_t>(r);
    EXPECT_TRUE(r > 0 || r == -EAGAIN) << r;
    return r > 0;
  }
  bool finished() const { return pos == data.size() && in_rndv.empty(); }
};

// Drains a Stream with random read sizes and iovec splits; pulls SRCAVAILs either straight
// into its buffer or through the engine's bounce buffer.
struct Reader {
  std::vector<std::uint8_t> got;
  std::vector<std::uint8_t> zbuf;
  bool eof = false, zero_copy_pending = false;
  bool step(Stream& s, std::mt19937& rng, std::size_t max_read) {
    if (zero_copy_pending) {
      const auto r = s.pull_result();
      if (!r) return false;
      EXPECT_EQ(r->err, 0);
      got.insert(got.end(), zbuf.begin(), zbuf.begin() + static_cast<long>(r->n));
      zero_copy_pending = false;
      return true;
    }
    if (rng() % 5 == 0 && s.prefetch_needed()) {
      // Fetch ahead, as the runtime does when no reader waits (SRCAVAIL maybe not first).
      EXPECT_EQ(s.pull_bounce(), 0);
      return true;
    }
    std::vector<std::uint8_t> buf(1 + rng() % max_read);
    const std::size_t cut = rng() % buf.size();
    const mut_bytes parts[2] = {{buf.data(), cut}, {buf.data() + cut, buf.size() - cut}};
    const bool peek = rng() % 8 == 0;
    const ReadOut r = s.read(parts, peek);
    if (r.n > 0) {
      if (!peek) got.insert(got.end(), buf.begin(), buf.begin() + static_cast<long>(r.n));
      return !peek;
    }
    if (r.err == 0) {
      eof = true;
      return false;
    }
    EXPECT_EQ(r.err, EAGAIN);
    if (!s.pull_needed()) return false;
    if (rng() % 2 == 0) {
      zbuf.assign(buf.size(), 0);
      EXPECT_EQ(s.pull(zbuf), 0);
      zero_copy_pending = true;
    } else {
      EXPECT_EQ(s.pull_bounce(), 0);
    }
    return true;
  }
};

Params params(std::uint32_t R, std::uint32_t B, std::size_t T, bool msgmode = false,
              std::uint32_t max_rndv_out = 1) {
  Params p{R, B, T, msgmode};
  p.max_rndv_out = max_rndv_out;
  return p;
}

struct Case {
  std::uint32_t R, B;
  std::size_t T, total, max_write, max_read;
  std::uint32_t seed;
  std::uint32_t rndv_out = 1;  // rendezvous outstanding at once
};

class StreamTransfer : public ::testing::TestWithParam<Case> {};

TEST_P(StreamTransfer, BothDirectionsEveryOctetInOrder) {
  const Case c = GetParam();
  Pair p(params(c.R, c.B, c.T, false, c.rndv_out), params(c.R, c.B, c.T, false, c.rndv_out),
         c.seed);
  ASSERT_TRUE(p.connect());
  Writer wa{pattern(c.total, c.seed), c.T, c.rndv_out},
      wb{pattern(c.total / 2, c.seed + 1), c.T, c.rndv_out};
  Reader ra, rb;
  auto& rng = p.random();
  for (int guard = 0; guard < 2000000; ++guard) {
    const bool moved = p.step();
    bool busy = wa.step(*p.a.stream, rng, c.max_write);
    busy |= wb.step(*p.b.stream, rng, c.max_write);
    busy |= rb.step(*p.b.stream, rng, c.max_read);
    busy |= ra.step(*p.a.stream, rng, c.max_read);
    if (wa.finished() && wb.finished() && rb.got.size() == wa.data.size() &&
        ra.got.size() == wb.data.size())
      break;
    if (!moved && !busy && guard > 100 && guard % 1000 == 0) {
      // Nothing can move: a credit deadlock would show up here.
      ASSERT_TRUE(false) << "stalled: a wrote " << wa.pos << " b read " << rb.got.size()
                         << " credits a=" << p.a.stream->send_credits()
                         << " b=" << p.b.stream->send_credits();
    }
  }
  ASSERT_EQ(rb.got.size(), wa.data.size());
  EXPECT_TRUE(rb.got == wa.data);
  ASSERT_EQ(ra.got.size(), wb.data.size());
  EXPECT_TRUE(ra.got == wb.data);
  EXPECT_EQ(p.a.stream->error(), 0);
  EXPECT_EQ(p.b.stream->error(), 0);
  if (c.T != 0 && c.max_write >= c.T) {
    EXPECT_GT(p.a.stream->stats().srcavail_tx, 0u);
  }
  // Idle afterwards: no credit ping-pong between two quiet ends.
  p.run();
  const auto before = p.a.stream->stats().credit_tx + p.b.stream->stats().credit_tx;
  for (int i = 0; i < 50; ++i) p.step();
  EXPECT_EQ(p.a.stream->stats().credit_tx + p.b.stream->stats().credit_tx, before);
}

INSTANTIATE_TEST_SUITE_P(
    Estp, StreamTransfer,
    ::testing::Values(Case{4, 256, 0, 60000, 700, 300, 1},            // tiny buffers, copies only
                      Case{4, 256, 0, 60000, 50, 5000, 2},            // many small writes
                      Case{16, 4096, 0, 400000, 20000, 9000, 3},      // default-like shape
                      Case{8, 1024, 3000, 400000, 9000, 7000, 4},     // rendezvous mixed in
                      Case{4, 512, 1, 200000, 4000, 300, 5},          // every write by rendezvous
                      Case{3, 256, 0, 20000, 1000, 1000, 6},          // three buffers only
                      Case{8, 1024, 3000, 400000, 9000, 7000, 7, 4},  // 4 sources pipelined
                      Case{4, 512, 1, 200000, 4000, 300, 8, 8}));     // 8, every write

TEST(Estp, HelloRidesInMpaPrivateData) {
  Pair p(params(7, 1000, 0), params(9, 2000, 0), 11);
  ASSERT_TRUE(p.connect());
  const auto ha = parse_hello(p.b.conn->negotiated().peer_private_data);
  ASSERT_TRUE(ha);
  EXPECT_EQ(ha->recv_buffers, 7u);
  EXPECT_EQ(ha->recv_buffer_size, 1000u);
  EXPECT_EQ(p.a.stream->send_credits(), 8u);  // 9 less the initiator's first CREDIT
}

TEST(Estp, SlowReaderStopsWriterThenReleasesIt) {
  Pair p(params(4, 256, 0), params(4, 256, 0), 12);
  ASSERT_TRUE(p.connect());
  const auto data = pattern(10000, 3);
  std::size_t pos = 0;
  for (;;) {
    const auto r = p.a.stream->write({data.data() + pos, data.size() - pos}, false);
    if (r == -EAGAIN) {
      p.run();
      if (!p.a.stream->writable()) break;
      continue;
    }
    ASSERT_GT(r, 0);
    pos += static_cast<std::size_t>(r);
  }
  EXPECT_LT(pos, 4u * 240u + 1);  // at most the reader's four buffers are in flight
  EXPECT_FALSE(p.a.stream->writable());
  std::vector<std::uint8_t> got(data.size());
  std::size_t have = 0;
  while (have < data.size()) {
    const mut_bytes dst{got.data() + have, got.size() - have};
    const ReadOut r = p.b.stream->read({&dst, 1}, false);
    if (r.n > 0) have += r.n;
    const auto w = p.a.stream->write({data.data() + pos, data.size() - pos}, false);
    if (w > 0) pos += static_cast<std::size_t>(w);
    p.run();
  }
  EXPECT_TRUE(got == data);
}

// socat's shape (a relay that reads its socket only while it can write it): b stops
// reading once it cannot write; a reads everything b sends. a's reads must reach b as
// grants so b can write again: a stalled here (esock under socat EXEC:cat) when a spent its
// last credit on a DATA that carried grants, leaving none to carry the next ones, while b
// never read that DATA. Section 6: the last credit is for control messages only.
TEST(Estp, ARelayThatReadsOnlyWhenItCanWriteNeverStallsItsPeer) {
  Pair p(params(4, 256, 0), params(4, 256, 0), 17);
  ASSERT_TRUE(p.connect());
  const auto data = pattern(240, 5);
  std::size_t a_sent = 0, b_sent = 0, b_read = 0;
  std::vector<std::uint8_t> sink(4096);
  for (int round = 0; round < 2000 && b_sent < 100 * 240; ++round) {
    // a: writes whenever it can, and reads all that arrives.
    if (const auto w = p.a.stream->write({data.data(), data.size()}, false); w > 0)
      a_sent += static_cast<std::size_t>(w);
    for (;;) {
      const mut_bytes dst{sink.data(), sink.size()};
      if (p.a.stream->read({&dst, 1}, false).n == 0) break;
    }
    // b: the relay: reads (and forwards) only while it can write; writes whenever it can.
    if (p.b.stream->writable()) {
      if (const auto w = p.b.stream->write({data.data(), data.size()}, false); w > 0)
        b_sent += static_cast<std::size_t>(w);
      if (p.b.stream->writable()) {
        const mut_bytes dst{sink.data(), sink.size()};
        b_read += p.b.stream->read({&dst, 1}, false).n;
      }
    }
    p.run();
  }
  EXPECT_GE(b_sent, 100u * 240u) << "b stalled after " << b_sent << " octets (a sent " << a_sent
                                 << ", b read " << b_read << ")";
}

TEST(Estp, FinEndsTheStreamAfterTheData) {
  Pair p(params(4, 1024, 0), params(4, 1024, 0), 13);
  ASSERT_TRUE(p.connect());
  const auto data = pattern(500, 4);
  ASSERT_EQ(p.a.stream->write(data, false), 500);
  p.a.stream->shutdown_write();
  EXPECT_EQ(p.a.stream->write(data, false), -EPIPE);
  EXPECT_EQ(p.a.stream->start_rndv(data), EPIPE);
  p.run();
  std::vector<std::uint8_t> got(1000);
  const mut_bytes dst{got};
  ReadOut r = p.b.stream->read({&dst, 1}, false);
  EXPECT_EQ(r.n, 500u);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), got.begin()));
  r = p.b.stream->read({&dst, 1}, false);
  EXPECT_EQ(r.n, 0u);
  EXPECT_EQ(r.err, 0);  // end of stream
  EXPECT_TRUE(p.b.stream->peer_fin());
  EXPECT_TRUE(p.a.stream->tx_idle());
  // The other direction still works (half close).
  ASSERT_EQ(p.b.stream->write(data, false), 500);
  p.run();
  r = p.a.stream->read({&dst, 1}, false);
  EXPECT_EQ(r.n, 500u);
  // Who closed first, as the close ladder asks: a did, b's FIN came after a's arrived.
  p.b.stream->shutdown_write();
  p.run();
  EXPECT_FALSE(p.a.stream->closed_after_peer());
  EXPECT_TRUE(p.b.stream->closed_after_peer());
}

TEST(Estp, MalformedSendIsAProtocolError) {
  Pair p(params(4, 256, 0), params(4, 256, 0), 14);
  ASSERT_TRUE(p.connect());
  std::vector<std::uint8_t> junk(40, 0xab);
  const ddp::stag_t l = p.a.ctx.reg_mr(junk.data(), junk.size(), 1);
  const ddp::Sge sge{junk.data(), 40, l};
  ASSERT_EQ(p.a.conn->qp().post_send(99, {&sge, 1}), 0);
  p.run();
  EXPECT_EQ(p.b.stream->error(), EPROTO);
  std::uint8_t b[8];
  const mut_bytes dst{b};
  EXPECT_EQ(p.b.stream->read({&dst, 1}, false).err, EPROTO);
  EXPECT_EQ(p.b.stream->write(dst, false), -EPROTO);
}

TEST(Estp, TransportFailureFailsBothCalls) {
  Pair p(params(4, 256, 0), params(4, 256, 0), 15);
  ASSERT_TRUE(p.connect());
  ASSERT_EQ(p.a.stream->write(pattern(100, 1), false), 100);
  p.run();
  p.b.conn->on_transport_closed(false);
  p.b.stream->progress();
  std::vector<std::uint8_t> got(200);
  const mut_bytes dst{got};
  // Data already received is still delivered, then the error (section 8).
  EXPECT_EQ(p.b.stream->read({&dst, 1}, false).n, 100u);
  EXPECT_EQ(p.b.stream->read({&dst, 1}, false).err, ECONNRESET);
}

TEST(Estp, MsgmodeKeepsBoundariesAndTruncates) {
  Pair p(params(4, 1024, 1500, true), params(4, 1024, 1500, true), 16);
  ASSERT_TRUE(p.connect());
  auto& rng = p.random();
  std::vector<std::vector<std::uint8_t>> msgs;
  for (std::uint32_t i = 0; i < 300; ++i) msgs.push_back(pattern(i % 7 == 0 ? 0 : rng() % 4000, i));
  std::size_t sent = 0, got = 0, truncated = 0;
  bool in_rndv = false, zc = false;
  std::vector<std::uint8_t> buf;
  for (int guard = 0; guard < 1000000 && got < msgs.size(); ++guard) {
    p.step();
    Stream& w = *p.a.stream;
    if (in_rndv) {
      if (w.rndv_finished()) ++sent, in_rndv = false;
    } else if (sent < msgs.size()) {
      const auto& m = msgs[sent];
      if (m.size() >= 1500) {
        in_rndv = w.start_rndv(m) == 0;
      } else if (w.can_write_whole(m.size())) {
        ASSERT_EQ(w.write(m, true), static_cast<std::ptrdiff_t>(m.size()));
        ++sent;
      }
    }
    Stream& r = *p.b.stream;
    const auto& want = msgs[got];
    ReadOut o;
    if (zc) {
      const auto res = r.pull_result();
      if (!res) continue;
      o = *res;
      zc = false;
    } else {
      buf.assign(rng() % 4500 + 1, 0);
      const mut_bytes dst{buf};
      o = r.read({&dst, 1}, false);
      if (o.err == EAGAIN) {
        if (r.pull_needed()) {
          if (rng() % 2) {
            ASSERT_EQ(r.pull(buf), 0);
            zc = true;
          } else {
            ASSERT_EQ(r.pull_bounce(), 0);
          }
        }
        continue;
      }
    }
    ASSERT_EQ(o.err, 0);
    ASSERT_TRUE(o.eom || o.truncated);
    const std::size_t n = std::min(want.size(), buf.size());
    ASSERT_EQ(o.n, n) << "message " << got;
    EXPECT_EQ(o.truncated, want.size() > buf.size());
    EXPECT_TRUE(std::equal(want.begin(), want.begin() + static_cast<long>(n), buf.begin()));
    truncated += o.truncated;
    ++got;
  }
  EXPECT_EQ(got, msgs.size());
  EXPECT_GT(truncated, 0u);
  EXPECT_GT(p.a.stream->stats().srcavail_tx, 0u);
}

// Issue 20, item 1: a hostile reader sends RDMADONE right after its RDMA Read Request,
// before the Read Response went out. The writer must not get its buffer back while the
// stack still sources the response from it: before the fix rndv_finished() ended the
// rendezvous at once, the writer reused its buffer, and the rest of the response carried
// the new contents to the peer (freed memory under ASan: heap-use-after-free in the
// framer). Now RDMADONE deregisters the source, the response stops with a Terminate
// (invalid STag), and the writer is released only once nothing reads the buffer.
TEST(EstpHostile, EarlyRdmadoneNeverLetsTheResponseReadAReleasedBuffer) {
  Pair p(params(4, 1024, 1500), params(4, 1024, 1500), 20);
  ASSERT_TRUE(p.connect());
  const std::size_t n = 1 << 20;  // well past the transport's 256 KiB of queued output
  std::vector<std::uint8_t> src(n, 0x11);
  ASSERT_EQ(p.a.stream->start_rndv(src), 0);
  p.run();
  Stream& hostile = *p.b.stream;
  ASSERT_TRUE(hostile.pull_needed());
  ASSERT_EQ(hostile.pull_bounce(), 0);  // the RDMA Read Request for the whole offer
  // ... and at once, by hand, the RDMADONE an honest reader sends only after its Read.
  std::vector<std::uint8_t> msg(64);
  const Message done{.type = Type::rdmadone, .length = static_cast<std::uint32_t>(n), .id = 1};
  const std::size_t len = emit_header(done, msg);
  ASSERT_NE(len, 0u);
  const ddp::stag_t lk = p.b.verbs->reg_mr(msg.data(), msg.size(), ddp::access_local_write);
  const ddp::Sge sge{msg.data(), static_cast<std::uint32_t>(len), lk};
  ASSERT_EQ(p.b.verbs->post_send(0x1000, {&sge, 1}), 0);

  bool released = false;
  for (int guard = 0; guard < 100000; ++guard) {
    const bool moved = p.step();
    if (released) {
      if (!moved) break;
    } else if (p.a.stream->rndv_finished()) {
      released = true;
      // The writer's call returns: the application reuses its buffer at once.
      std::fill(src.begin(), src.end(), std::uint8_t{0xee});
    }
  }
  EXPECT_TRUE(released);
  // The peer's Read was cut short by a Terminate, not completed from reused memory.
  EXPECT_TRUE(p.a.conn->engine().terminated());
  EXPECT_EQ(p.a.conn->qp().terminate_cause(), ddp::term::rdmap_invalid_stag);
  std::vector<std::uint8_t> buf(n);
  const mut_bytes dst{buf};
  const ReadOut r = hostile.read({&dst, 1}, false);
  EXPECT_EQ(std::count(buf.begin(), buf.begin() + static_cast<long>(r.n), 0xee), 0)
      << "the peer received " << r.n << " octets, some from the released buffer";
}

// Section 6.1 with several sources out at once (pipelined writes): the peer pulls them in
// stream order, with DATA written between them in its place, and each source is released
// in the order it was offered.
TEST(EstpRndv, PipelinedSourcesArePulledAndReleasedInOrder) {
  Pair p(params(8, 1024, 1000, false, 3), params(8, 1024, 1000), 21);
  ASSERT_TRUE(p.connect());
  Stream& w = *p.a.stream;
  const std::vector<std::vector<std::uint8_t>> src{pattern(5000, 1), pattern(7000, 2),
                                                   pattern(3000, 3)};
  const std::vector<std::uint8_t> between = pattern(100, 4);
  std::uint32_t ids[3] = {};
  ASSERT_EQ(w.start_rndv(src[0], &ids[0]), 0);
  ASSERT_EQ(w.write(between, false), 100);
  ASSERT_EQ(w.start_rndv(src[1], &ids[1]), 0);
  ASSERT_EQ(w.start_rndv(src[2], &ids[2]), 0);
  EXPECT_EQ(ids[1], ids[0] + 1);
  EXPECT_EQ(ids[2], ids[1] + 1);
  EXPECT_EQ(w.start_rndv(between, nullptr), EBUSY) << "max_rndv_out is 3";
  EXPECT_EQ(w.rndv_outstanding(), 3u);
  EXPECT_EQ(w.rndv_front_id(), ids[0]);
  EXPECT_EQ(w.unsent_octets(), 15100u);

  std::vector<std::uint8_t> want = src[0];
  want.insert(want.end(), between.begin(), between.end());
  for (int i = 1; i < 3; ++i) want.insert(want.end(), src[i].begin(), src[i].end());
  std::vector<std::uint8_t> got;
  std::vector<std::size_t> released;
  for (int guard = 0; guard < 100000 && (got.size() < want.size() || released.size() < 3);
       ++guard) {
    p.step();
    Stream& r = *p.b.stream;
    std::vector<std::uint8_t> buf(4096);
    const mut_bytes dst{buf};
    const ReadOut out = r.read({&dst, 1}, false);
    got.insert(got.end(), buf.begin(), buf.begin() + static_cast<long>(out.n));
    if (out.n == 0 && r.pull_needed() && !r.pulling()) {
      EXPECT_EQ(r.pull_bounce(), 0);
    }
    if (const auto n = w.rndv_finished()) released.push_back(*n);
  }
  EXPECT_TRUE(got == want);
  EXPECT_EQ(released, (std::vector<std::size_t>{5000, 7000, 3000}));
  EXPECT_FALSE(w.rndv_active());
  EXPECT_EQ(w.unsent_octets(), 0u);
}

// Giving up (close, an error) revokes every outstanding source at once; the writers are
// released only once the connection reads none of them.
TEST(EstpRndv, CancelGivesUpEveryOutstandingSource) {
  Pair p(params(8, 1024, 1000, false, 4), params(8, 1024, 1000), 22);
  ASSERT_TRUE(p.connect());
  Stream& w = *p.a.stream;
  const std::vector<std::uint8_t> s1 = pattern(5000, 1), s2 = pattern(6000, 2);
  ASSERT_EQ(w.start_rndv(s1), 0);
  ASSERT_EQ(w.start_rndv(s2), 0);
  w.cancel_rndv();
  EXPECT_FALSE(w.rndv_active());
  EXPECT_EQ(w.rndv_outstanding(), 0u);
  p.run();
  EXPECT_TRUE(w.rndv_released());
  // The peer's pull of a revoked source fails (invalid STag, RFC 5040 section 7.2).
  Stream& r = *p.b.stream;
  ASSERT_TRUE(r.pull_needed());
  EXPECT_EQ(r.pull_bounce(), 0);
  p.run();
  EXPECT_NE(r.error(), 0);
}

}  // namespace
}  // namespace esock::estp::testing
