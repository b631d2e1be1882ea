// DdpRuntime::close and DdpRuntime::service (lib/esock/runtime) with a manual clock and no
// progress thread: the test runs the rounds. The connection is a real ESTP engine (or a
// RAWMODE queue pair) over an rnic::ByteStreamEngine joined in memory to a peer
// (estp_harness.h); the provider connection is a fake whose transport the test controls.
#include <gtest/gtest.h>

#include <cerrno>
#include <memory>
#include <set>

#include "esock/providers/provider.h"
#include "esock/runtime/runtime.h"
#include "estp_harness.h"

namespace esock::sockets {
namespace {

using estp::testing::Pair;
using estp::testing::Side;

// The transport as the test sets it and sees it.
struct Wire {
  TransportState state = TransportState::open;  // ProviderConn::transport_state()
  bool full = false;  // takes no octets (the peer does not read): output stays pending
  int shutdowns = 0;  // ProviderConn::shutdown() calls (our TCP FIN)
  std::size_t unsent_at_shutdown = 0;    // framed octets not yet sent when the FIN went
  const estp::Stream* stream = nullptr;  // stream sockets: the engine, to look at
  bool tx_idle_at_shutdown = false;      // ... whether it had sent everything then
  bool released = false;                 // the provider connection was destroyed
};

// The engine's verbs, except that the test says which regions the transport still holds
// octets of (Verbs::reads_from: sent by reference, not yet acknowledged).
class HoldingVerbs final : public rnic::Verbs {
 public:
  explicit HoldingVerbs(rnic::Verbs& v) : v_(v) {}
  int post_send(std::uint64_t id, std::span<const ddp::Sge> sg) override {
    return v_.post_send(id, sg);
  }
  int post_recv(std::uint64_t id, std::span<const ddp::Sge> sg) override {
    return v_.post_recv(id, sg);
  }
  int post_read(std::uint64_t id, std::span<const ddp::Sge> sink, ddp::stag_t rkey,
                std::uint64_t to) override {
    return v_.post_read(id, sink, rkey, to);
  }
  int post_write(std::uint64_t id, std::span<const ddp::Sge> sg, ddp::stag_t rkey,
                 std::uint64_t to) override {
    return v_.post_write(id, sg, rkey, to);
  }
  ddp::stag_t reg_mr(void* addr, std::size_t len, std::uint32_t access) override {
    return v_.reg_mr(addr, len, access);
  }
  int dereg_mr(ddp::stag_t stag) override { return v_.dereg_mr(stag); }
  bool reads_from(ddp::stag_t stag) const override { return held.count(stag) != 0; }
  std::size_t poll_send_cq(std::span<ddp::Completion> out) override { return v_.poll_send_cq(out); }
  std::size_t poll_recv_cq(std::span<ddp::Completion> out) override { return v_.poll_recv_cq(out); }
  std::set<ddp::stag_t> held;

 private:
  rnic::Verbs& v_;
};

class FakeConn final : public ProviderConn {
 public:
  FakeConn(Side& self, Side& peer, Wire& w) : self_(self), peer_(peer), w_(w) {}
  ~FakeConn() override { w_.released = true; }

  rnic::Verbs& verbs() override { return *self_.verbs; }
  const mpa::Negotiated& negotiated() const override { return self_.conn->negotiated(); }
  int poll_fd() const override { return -1; }
  short poll_events() const override { return 0; }
  void on_ready(short) override {}
  void flush() override {
    self_.conn->pump();
    if (w_.full) return;
    const bytes_view out = self_.conn->output();
    if (out.empty()) return;
    const std::vector<std::uint8_t> copy(out.begin(), out.end());
    self_.conn->consume(copy.size());
    peer_.conn->on_bytes(copy);
  }
  bool output_pending() const override { return w_.full || !self_.conn->output().empty(); }
  TransportState transport_state() const override { return w_.state; }
  void shutdown() override {
    ++w_.shutdowns;
    w_.unsent_at_shutdown = self_.conn->output().size();
    w_.tx_idle_at_shutdown = w_.stream != nullptr && w_.stream->tx_idle();
  }
  void hold_input(bool) override {}
  int name(bool, sockaddr*, socklen_t*) const override {
    errno = ENOTCONN;
    return -1;
  }

 private:
  Side& self_;
  Side& peer_;
  Wire& w_;
};

class RuntimeCloseTest : public ::testing::Test {
 protected:
  RuntimeCloseTest() : pair(estp::Params{}, estp::Params{}, 11), rt(clock) {
    clock.set(Instant{1'000'000'000});
  }

  // A connected stream socket (side a) whose peer (side b) runs only when peer_round() says.
  void connect(bool rawmode) {
    ASSERT_TRUE(pair.connect());
    sock = std::make_shared<Socket>();
    sock->set_state(Socket::State::connected);
    sock->set_rawmode(rawmode);
    sock->conn = std::make_unique<Conn>();
    Conn& c = *sock->conn;
    c.pc = std::make_unique<FakeConn>(pair.a, pair.b, wire);
    if (rawmode) {
      pair.a.stream.reset();
      holding = std::make_unique<HoldingVerbs>(*pair.a.verbs);
      c.raw = std::make_unique<RawQp>(*holding);
    } else {
      c.stream = std::move(pair.a.stream);
      wire.stream = c.stream.get();
    }
  }
  // The peer reads what arrived and answers (credits).
  void peer_round() {
    pair.b.stream->progress();
    pair.b.conn->pump();
    const bytes_view out = pair.b.conn->output();
    if (out.empty()) return;
    const std::vector<std::uint8_t> copy(out.begin(), out.end());
    pair.b.conn->consume(copy.size());
    pair.a.conn->on_bytes(copy);
  }
  // The peer's application reads what it has, freeing receive buffers (credits to return).
  std::size_t peer_reads() {
    std::vector<std::uint8_t> buf(1 << 20);
    mut_bytes dst(buf);
    std::size_t n = 0;
    pair.b.stream->progress();
    for (estp::ReadOut r; (r = pair.b.stream->read({&dst, 1}, false)).n > 0;) n += r.n;
    return n;
  }
  bool released() const { return !sock->conn->pc; }
  void round() { rt.service(*sock); }

  Pair pair;
  std::unique_ptr<HoldingVerbs> holding;  // RAWMODE: the queue pair's verbs
  ManualClock clock;
  DdpRuntime rt;
  Wire wire;
  std::shared_ptr<Socket> sock;
};

TEST_F(RuntimeCloseTest, OpenConnectionIsNeverShutDownByTheClock) {
  connect(false);
  for (int i = 0; i < 5; ++i) {
    round();
    clock.advance(10s);
  }
  EXPECT_EQ(wire.shutdowns, 0);
  EXPECT_FALSE(released());
}

// Issue 14, item 1: the peer's TCP FIN (its socket closed) turns writes into EPIPE at the
// next round, where a writer without credit waited forever before.
TEST_F(RuntimeCloseTest, ThePeersTcpFinMakesWritesFailWithEpipe) {
  connect(false);
  round();
  EXPECT_GT(sock->conn->stream->write(estp::testing::pattern(10, 1), false), 0);
  wire.state = TransportState::ended;
  round();
  EXPECT_EQ(sock->conn->stream->write(estp::testing::pattern(10, 1), false), -EPIPE);
  EXPECT_EQ(sock->conn->stream->error(), 0);  // not a reset: buffered data still reads
}

TEST_F(RuntimeCloseTest, StreamSendsEstpFinThenTcpFinThenWaitsForThePeersFin) {
  connect(false);
  const auto data = estp::testing::pattern(3000, 1);
  ASSERT_EQ(sock->conn->stream->write(data, false), 3000);
  rt.close(sock);
  EXPECT_EQ(sock->state(), Socket::State::closed);
  for (int i = 0; i < 4; ++i) {  // same instant: draining never waits on the clock
    round();
    peer_round();
  }
  EXPECT_EQ(wire.shutdowns, 1);
  EXPECT_EQ(wire.unsent_at_shutdown, 0u);  // TCP FIN only after every framed octet
  EXPECT_TRUE(wire.tx_idle_at_shutdown);   // ... and once the engine has nothing left
  EXPECT_TRUE(pair.b.stream->peer_fin());  // the ESTP FIN went first
  EXPECT_FALSE(released());

  clock.advance(1s - 1ns);
  round();
  EXPECT_FALSE(released());
  wire.state = TransportState::ended;  // the peer's FIN
  round();
  EXPECT_TRUE(released());
  EXPECT_TRUE(wire.released);
  EXPECT_EQ(wire.shutdowns, 1);
}

// The peer closed first (its ESTP FIN came before our close): our TCP FIN waits for the
// peer's, so this side closes passively, as a kernel socket reading end of stream and then
// closing does (sent at once, the FINs crossed and left both sides in TIME-WAIT).
TEST_F(RuntimeCloseTest, StreamWhosePeerClosedFirstSendsItsTcpFinAfterThePeers) {
  connect(false);
  pair.b.stream->shutdown_write();
  for (int i = 0; i < 3; ++i) {
    peer_round();
    round();
  }
  ASSERT_TRUE(sock->conn->stream->peer_fin());
  rt.close(sock);
  for (int i = 0; i < 4; ++i) {
    round();
    peer_round();
  }
  EXPECT_TRUE(pair.b.stream->peer_fin());  // our ESTP FIN went
  EXPECT_EQ(wire.shutdowns, 0);            // our TCP FIN did not
  clock.advance(500ms);
  round();
  EXPECT_EQ(wire.shutdowns, 0);
  wire.state = TransportState::ended;  // the peer's FIN
  round();
  EXPECT_EQ(wire.shutdowns, 1);
  EXPECT_TRUE(released());
}

// Drained is more than "no octets waiting": an ESTP FIN that waits for a credit keeps the
// TCP FIN back too (else the peer would see the stream end without the ESTP FIN).
TEST_F(RuntimeCloseTest, StreamTcpFinWaitsForAnEstpFinThatWaitsForACredit) {
  connect(false);
  estp::Stream& st = *sock->conn->stream;
  // Writes take every credit but the last (section 6, last-credit rule); reads then leave
  // grants enough to be due, and the CREDIT that returns them takes the last one.
  const auto in = estp::testing::pattern(100, 3);
  const std::size_t messages = estp::Params{}.recv_buffers / 2;
  for (std::size_t i = 0; i < messages; ++i) ASSERT_EQ(pair.b.stream->write(in, false), 100);
  peer_round();
  round();
  const auto chunk = estp::testing::pattern(1000, 4);
  for (int i = 0; i < 100 && st.write(chunk, false) > 0; ++i) round();
  ASSERT_EQ(st.send_credits(), 1u);
  std::vector<std::uint8_t> buf(100 * messages);
  mut_bytes dst(buf);
  ASSERT_EQ(st.read({&dst, 1}, false).n, 100u * messages);
  EXPECT_EQ(st.write(chunk, false), -EAGAIN);  // the last credit is not for DATA
  round();
  ASSERT_EQ(st.send_credits(), 0u);

  rt.close(sock);
  for (int i = 0; i < 3; ++i) round();
  clock.advance(2s - 1ns);
  round();
  EXPECT_EQ(wire.shutdowns, 0);
  ASSERT_FALSE(released());
  EXPECT_FALSE(sock->conn->pc->output_pending());
  EXPECT_FALSE(st.tx_idle());  // the ESTP FIN is not sent

  EXPECT_GT(peer_reads(), 0u);  // the peer reads: credits come back, the ESTP FIN goes
  peer_round();
  for (int i = 0; i < 3 && wire.shutdowns == 0; ++i) {
    round();
    peer_round();
  }
  EXPECT_EQ(wire.shutdowns, 1);
  EXPECT_TRUE(wire.tx_idle_at_shutdown);
  EXPECT_TRUE(pair.b.stream->peer_fin());
}

TEST_F(RuntimeCloseTest, StreamPeerThatNeitherReadsNorClosesGetsTwoSecondsThenOne) {
  connect(false);
  wire.full = true;
  const auto data = estp::testing::pattern(1000, 2);
  ASSERT_EQ(sock->conn->stream->write(data, false), 1000);
  rt.close(sock);
  round();
  clock.advance(2s - 1ns);
  round();
  EXPECT_EQ(wire.shutdowns, 0);
  clock.advance(1ns);
  round();
  EXPECT_EQ(wire.shutdowns, 1);
  EXPECT_GT(wire.unsent_at_shutdown, 0u);  // the deadline, not a drain
  clock.advance(1s - 1ns);
  round();
  EXPECT_FALSE(released());
  clock.advance(1ns);
  round();
  EXPECT_TRUE(released());
}

TEST_F(RuntimeCloseTest, StreamResetWhileDrainingReleasesInThatRound) {
  connect(false);
  wire.full = true;
  rt.close(sock);
  round();
  clock.advance(500ms);
  round();
  EXPECT_EQ(wire.shutdowns, 0);
  wire.state = TransportState::broken;
  round();
  EXPECT_EQ(wire.shutdowns, 1);
  EXPECT_TRUE(released());
}

TEST_F(RuntimeCloseTest, StreamPeerFinWhileDrainingReleasesInThatRound) {
  connect(false);
  wire.full = true;
  rt.close(sock);
  round();
  wire.state = TransportState::ended;
  round();
  EXPECT_EQ(wire.shutdowns, 1);
  EXPECT_TRUE(released());
}

TEST_F(RuntimeCloseTest, CloseOfAFailedConnectionReleasesAtTheNextRound) {
  connect(false);
  wire.state = TransportState::broken;
  round();
  EXPECT_EQ(sock->conn->stream->error(), ECONNRESET);
  EXPECT_FALSE(released());  // failed, but still the application's until close
  rt.close(sock);
  round();
  EXPECT_TRUE(released());
}

TEST_F(RuntimeCloseTest, RawmodeDrainedMeansNoFramedOutputPending) {
  connect(true);
  wire.full = true;
  rt.close(sock);
  round();
  clock.advance(1500ms);
  round();
  EXPECT_EQ(wire.shutdowns, 0);
  wire.full = false;  // the transport took the rest
  round();
  EXPECT_EQ(wire.shutdowns, 1);
  EXPECT_FALSE(released());
  clock.advance(1s - 1ns);
  round();
  EXPECT_FALSE(released());
  wire.state = TransportState::ended;
  round();
  EXPECT_TRUE(released());
}

TEST_F(RuntimeCloseTest, RawmodeDeadlinesAreTwoSecondsThenOne) {
  connect(true);
  wire.full = true;
  rt.close(sock);
  clock.advance(2s - 1ns);
  round();
  EXPECT_EQ(wire.shutdowns, 0);
  clock.advance(1ns);
  round();
  EXPECT_EQ(wire.shutdowns, 1);
  clock.advance(1s - 1ns);
  round();
  EXPECT_FALSE(released());
  clock.advance(1ns);
  round();
  EXPECT_TRUE(released());
}

// Issue 20, item 1: the application may free its regions once close returns; octets TCP
// still holds by reference would be retransmitted from them. Then close resets at once.
TEST_F(RuntimeCloseTest, RawmodeCloseResetsAtOnceWhileTheTransportHoldsARegionsOctets) {
  connect(true);
  std::vector<std::uint8_t> region(4096);
  ddp::stag_t stag = 0;
  ASSERT_EQ(sock->conn->raw->reg_mr(region.data(), region.size(), 2, &stag), 0);
  holding->held.insert(stag);
  rt.close(sock);
  EXPECT_TRUE(released());
  EXPECT_TRUE(wire.released);
}

TEST_F(RuntimeCloseTest, RawmodeCloseWithNothingHeldDrainsAsUsual) {
  connect(true);
  std::vector<std::uint8_t> region(4096);
  ddp::stag_t stag = 0;
  ASSERT_EQ(sock->conn->raw->reg_mr(region.data(), region.size(), 2, &stag), 0);
  rt.close(sock);
  EXPECT_FALSE(released());
}

// A writer or esock_dereg_mr that waited ESOCK_TIMEOUT_MS for TCP to let go gives the
// connection up: it is released (TCP reset), the socket fails with the reason, and the
// application's later close finds nothing left to do.
TEST_F(RuntimeCloseTest, ResetReleasesAtOnceAndALaterCloseIsHarmless) {
  connect(false);
  rt.reset(*sock, ETIMEDOUT);
  EXPECT_TRUE(released());
  EXPECT_EQ(sock->state(), Socket::State::failed);
  EXPECT_EQ(sock->error, ETIMEDOUT);
  rt.close(sock);
  EXPECT_EQ(sock->state(), Socket::State::closed);
  EXPECT_EQ(wire.shutdowns, 0);
}

TEST_F(RuntimeCloseTest, RawmodeResetWhileDrainingReleasesInThatRound) {
  connect(true);
  wire.full = true;
  rt.close(sock);
  round();
  wire.state = TransportState::broken;
  round();
  EXPECT_EQ(wire.shutdowns, 1);
  EXPECT_TRUE(released());
}

TEST_F(RuntimeCloseTest, RawmodeCloseOfAFailedConnectionReleasesAtTheNextRound) {
  connect(true);
  wire.state = TransportState::broken;
  round();
  EXPECT_EQ(sock->conn->raw->error(), ECONNRESET);
  rt.close(sock);
  round();
  EXPECT_TRUE(released());
}

// A reader's sink (docs/stream-protocol.md section 6.2) does not outlive close: the buffer
// is the application's again once close returns, so the sink is deregistered at once and
// a Write the peer still sends draws a Terminate instead of landing there.
TEST_F(RuntimeCloseTest, CloseDropsAReadersSink) {
  connect(false);
  round();
  std::vector<std::uint8_t> buf(1 << 16);
  ASSERT_EQ(sock->conn->stream->offer_sink(buf), 0);
  ASSERT_TRUE(sock->conn->stream->sink_out());
  rt.close(sock);
  ASSERT_TRUE(sock->conn && sock->conn->stream);  // still draining
  EXPECT_FALSE(sock->conn->stream->sink_out());
}

}  // namespace
}  // namespace esock::sockets
