// Rendezvous by RDMA Write (docs/stream-protocol.md section 6.2): a reader's sink filled by
// the writer's Write + WRITEDONE over two in-memory software RNICs, sinks voided by other
// stream data (also when it crossed the SINKAVAIL), cancels answered, and the peer's
// protocol errors over the scripted verbs.
#include <gtest/gtest.h>

#include "estp_fake_verbs.h"
#include "estp_harness.h"

namespace esock::estp::testing {
namespace {

constexpr std::size_t T = 256 * 1024;  // rendezvous by Read from here
constexpr std::size_t S = 64 * 1024;   // sinks from here
const Params params{16, 65552, T, false, S};

struct SinkPair : ::testing::Test {
  SinkPair() : p(params, params, 7) {}
  void SetUp() override { ASSERT_TRUE(p.connect()); }
  Stream& writer() { return *p.a.stream; }
  Stream& reader() { return *p.b.stream; }
  Pair p;
};

TEST_F(SinkPair, AWaitingReadersBufferIsFilledByOneWrite) {
  std::vector<std::uint8_t> dst(512 * 1024);
  ASSERT_TRUE(reader().sink_possible(dst.size()));
  ASSERT_EQ(reader().offer_sink(dst), 0);
  p.run();
  ASSERT_TRUE(writer().sink_writable());
  const auto src = pattern(dst.size(), 1);
  ASSERT_EQ(writer().write_sink(src), static_cast<std::ptrdiff_t>(src.size()));
  p.run();
  const auto r = reader().sink_result();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->n, src.size());
  EXPECT_EQ(r->err, 0);
  EXPECT_EQ(dst, src);
  EXPECT_EQ(writer().sink_write_finished(), src.size());
  EXPECT_FALSE(writer().sink_writable());  // used up
  EXPECT_EQ(writer().stats().srcavail_tx, 0u);
  // The stream goes on as before.
  const auto more = pattern(1000, 2);
  ASSERT_EQ(writer().write(more, false), 1000);
  p.run();
  std::vector<std::uint8_t> got(1000);
  const mut_bytes d{got};
  EXPECT_EQ(reader().read({&d, 1}, false).n, 1000u);
  EXPECT_EQ(got, more);
}

TEST_F(SinkPair, AWriteLongerThanTheSinkFillsItAndKeepsTheRest) {
  std::vector<std::uint8_t> dst(300 * 1024);
  ASSERT_EQ(reader().offer_sink(dst), 0);
  p.run();
  const auto src = pattern(1 << 20, 3);
  ASSERT_EQ(writer().write_sink(src), static_cast<std::ptrdiff_t>(dst.size()));
  p.run();
  EXPECT_EQ(reader().sink_result()->n, dst.size());
  EXPECT_TRUE(std::equal(dst.begin(), dst.end(), src.begin()));
}

TEST_F(SinkPair, DataSentFirstVoidsTheSinkAtBothEnds) {
  std::vector<std::uint8_t> dst(S);
  ASSERT_EQ(reader().offer_sink(dst), 0);
  p.run();
  ASSERT_TRUE(writer().sink_writable());
  const auto small = pattern(100, 4);
  ASSERT_EQ(writer().write(small, false), 100);
  EXPECT_FALSE(writer().sink_writable());
  p.run();
  const auto r = reader().sink_result();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->n, 0u);
  EXPECT_EQ(r->err, EAGAIN);  // void: read the queue
  std::vector<std::uint8_t> got(100);
  const mut_bytes d{got};
  EXPECT_EQ(reader().read({&d, 1}, false).n, 100u);
  EXPECT_EQ(got, small);
}

// The writer's DATA and the reader's SINKAVAIL cross on the wire: the writer must not
// write into a sink its peer voids on receiving that DATA (the sink's id is stale).
TEST_F(SinkPair, ASinkThatCrossedTheWritersDataIsNeverWritten) {
  std::vector<std::uint8_t> dst(T);
  ASSERT_EQ(reader().offer_sink(dst), 0);
  const auto small = pattern(100, 5);
  ASSERT_EQ(writer().write(small, false), 100);  // before either message arrived
  p.run();
  EXPECT_FALSE(writer().sink_writable());
  EXPECT_EQ(reader().sink_result()->err, EAGAIN);
  EXPECT_EQ(writer().error(), 0);
  EXPECT_EQ(reader().error(), 0);
  // A fresh sink is offered and used.
  std::vector<std::uint8_t> got(100);
  const mut_bytes d{got};
  EXPECT_EQ(reader().read({&d, 1}, false).n, 100u);
  ASSERT_EQ(reader().offer_sink(dst), 0);
  p.run();
  EXPECT_TRUE(writer().sink_writable());
}

TEST_F(SinkPair, ACancelIsAnsweredAndTheSinkIsNeverWritten) {
  std::vector<std::uint8_t> dst(T, 0xee);
  ASSERT_EQ(reader().offer_sink(dst), 0);
  p.run();
  reader().cancel_sink();
  EXPECT_FALSE(reader().sink_result());  // out until the answer
  p.run();
  const auto r = reader().sink_result();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->n, 0u);
  EXPECT_EQ(r->err, EAGAIN);
  EXPECT_FALSE(writer().sink_writable());
  const auto src = pattern(T, 8);
  EXPECT_EQ(writer().write_sink(src), -EAGAIN);  // the sink is gone
  p.run();
  EXPECT_EQ(dst, std::vector<std::uint8_t>(T, 0xee));
  EXPECT_EQ(reader().error(), 0);
  EXPECT_EQ(writer().error(), 0);
}

// A dropped sink (close, a fork child's copy) is deregistered at once: the writer's Write
// into it draws a Terminate instead of landing in the buffer.
TEST_F(SinkPair, ADroppedSinkIsNeverWritten) {
  std::vector<std::uint8_t> dst(T, 0xee);
  ASSERT_EQ(reader().offer_sink(dst), 0);
  p.run();
  reader().drop_sink();
  EXPECT_FALSE(reader().sink_out());
  ASSERT_TRUE(writer().sink_writable());  // it cannot know yet
  const auto src = pattern(T, 9);         // (the Write reads it until the run below)
  ASSERT_EQ(writer().write_sink(src), static_cast<std::ptrdiff_t>(T));
  p.run();
  EXPECT_EQ(dst, std::vector<std::uint8_t>(T, 0xee));
  EXPECT_NE(reader().error() + writer().error(), 0);  // the Terminate ended the stream
}

// The writer wrote before the cancel reached it: the reader honours the WRITEDONE.
TEST_F(SinkPair, ACancelCrossingTheWriteStillDeliversIt) {
  std::vector<std::uint8_t> dst(T);
  ASSERT_EQ(reader().offer_sink(dst), 0);
  p.run();
  const auto src = pattern(T, 6);
  ASSERT_EQ(writer().write_sink(src), static_cast<std::ptrdiff_t>(T));
  reader().cancel_sink();
  p.run();
  const auto r = reader().sink_result();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->n, T);
  EXPECT_EQ(dst, src);
  EXPECT_EQ(reader().error(), 0);
  EXPECT_EQ(writer().error(), 0);
}

TEST(EstpSink, OnlyOfferedToPeersThatTakeSinksAndNeverInMsgmode) {
  Lone plain(Params{4, 1024, T, false, S}, Hello{false, 4, 4096, false, false});
  EXPECT_FALSE(plain.s().sink_possible(T));
  Lone taker(Params{4, 1024, T, false, S}, Hello{false, 4, 4096, false, true});
  EXPECT_TRUE(taker.s().sink_possible(S));
  EXPECT_FALSE(taker.s().sink_possible(S - 1));  // below the sink threshold
  Lone off(Params{4, 1024, T, false, 0}, Hello{false, 4, 4096, false, true});
  EXPECT_FALSE(off.s().sink_possible(T));
  Lone msg(Params{4, 1024, T, true, S}, Hello{true, 4, 4096, false, true});
  EXPECT_FALSE(msg.s().sink_possible(T));
  EXPECT_FALSE(hello_of(Params{4, 1024, T, true, S}).sink);
  EXPECT_FALSE(hello_of(Params{4, 1024, T, false, 0}).sink);
  EXPECT_TRUE(hello_of(Params{4, 1024, T, false, S}).sink);
  EXPECT_TRUE(parse_hello(emit_hello(Hello{false, 4, 4096, false, true}))->sink);
}

TEST(EstpSinkHostile, AWritedoneForNoSinkOfOursIsAProtocolError) {
  Lone e(local());
  e.from_peer(Message{.type = Type::writedone, .length = 10, .id = 0});
  EXPECT_EQ(e.s().error(), EPROTO);
}

TEST(EstpSinkHostile, AWritedonePastTheSinksEndIsAProtocolError) {
  Lone e(Params{4, 1024, T, false, S}, Hello{false, 4, 4096, false, true});
  std::vector<std::uint8_t> dst(T);
  ASSERT_EQ(e.s().offer_sink(dst), 0);
  e.from_peer(Message{.type = Type::writedone, .length = T + 1, .id = 0});
  EXPECT_EQ(e.s().error(), EPROTO);
  EXPECT_TRUE(e.s().sink_result());  // resolved by the failure
}

TEST(EstpSinkHostile, ASecondSinkOrAnEmptyOneIsAProtocolError) {
  Lone two(local());
  two.from_peer(Message{.type = Type::sinkavail, .length = 4096, .stag = 9, .id = 0});
  EXPECT_EQ(two.s().error(), 0);
  EXPECT_TRUE(two.s().sink_writable());
  two.from_peer(Message{.type = Type::sinkavail, .length = 4096, .stag = 10, .id = 0});
  EXPECT_EQ(two.s().error(), EPROTO);
  Lone empty(local());
  empty.from_peer(Message{.type = Type::sinkavail, .length = 0, .stag = 9, .id = 0});
  EXPECT_EQ(empty.s().error(), EPROTO);
}

}  // namespace
}  // namespace esock::estp::testing
