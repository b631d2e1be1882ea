// The close ladder (lib/esock/runtime/close_ladder.h) driven by hand with a manual clock:
// no sleeping, every deadline hit at its exact instant.
#include "esock/runtime/close_ladder.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace esock::sockets {
namespace {

constexpr TransportState healthy = TransportState::open;
constexpr TransportState broken = TransportState::broken;
constexpr TransportState peer_ended = TransportState::ended;  // the peer's FIN
constexpr bool drained = true;
constexpr bool not_drained = false;

class CloseLadderTest : public ::testing::Test {
 protected:
  // close() at t0 (an arbitrary epoch: the ladder must not assume time starts at 0).
  void close_at_t0() { ladder.start(t0); }

  const Instant t0{5'000'000'000};
  CloseLadder ladder;
};

TEST_F(CloseLadderTest, OpenDoesNothingWhateverTheTransport) {
  EXPECT_FALSE(ladder.closing());
  EXPECT_EQ(ladder.step(t0, healthy, drained), CloseAction::none);
  EXPECT_EQ(ladder.step(t0 + 10s, broken, not_drained), CloseAction::none);
  EXPECT_EQ(ladder.step(t0 + 20s, peer_ended, drained), CloseAction::none);
  EXPECT_EQ(ladder.stage(), CloseStage::open);
}

TEST_F(CloseLadderTest, DrainsThenSendsFinThenWaitsForPeerFinThenReleases) {
  close_at_t0();
  EXPECT_TRUE(ladder.closing());
  EXPECT_EQ(ladder.stage(), CloseStage::draining);
  EXPECT_EQ(ladder.deadline(), t0 + 2s);
  EXPECT_EQ(ladder.step(t0 + 10ms, healthy, not_drained), CloseAction::none);
  EXPECT_EQ(ladder.stage(), CloseStage::draining);

  EXPECT_EQ(ladder.step(t0 + 30ms, healthy, drained), CloseAction::send_fin);
  EXPECT_EQ(ladder.stage(), CloseStage::fin_sent);
  EXPECT_EQ(ladder.deadline(), t0 + 30ms + 1s);  // from the FIN, not from close()
  EXPECT_EQ(ladder.step(t0 + 500ms, healthy, drained), CloseAction::none);

  EXPECT_EQ(ladder.step(t0 + 600ms, peer_ended, drained), CloseAction::release);
  EXPECT_EQ(ladder.stage(), CloseStage::released);
  // Released is final: nothing is sent or released twice.
  EXPECT_EQ(ladder.step(t0 + 700ms, peer_ended, drained), CloseAction::none);
  EXPECT_EQ(ladder.step(t0 + 10s, broken, drained), CloseAction::none);
}

TEST_F(CloseLadderTest, DrainedAtTheFirstRoundSendsFinAtOnce) {
  close_at_t0();
  EXPECT_EQ(ladder.step(t0, healthy, drained), CloseAction::send_fin);
  EXPECT_EQ(ladder.deadline(), t0 + 1s);
}

TEST_F(CloseLadderTest, DrainDeadlineExpiresAtExactlyTwoSeconds) {
  close_at_t0();
  EXPECT_EQ(ladder.step(t0 + 1s, healthy, not_drained), CloseAction::none);
  EXPECT_EQ(ladder.step(t0 + 2s - 1ns, healthy, not_drained), CloseAction::none);
  EXPECT_EQ(ladder.stage(), CloseStage::draining);
  EXPECT_EQ(ladder.step(t0 + 2s, healthy, not_drained), CloseAction::send_fin);
  EXPECT_EQ(ladder.stage(), CloseStage::fin_sent);
}

TEST_F(CloseLadderTest, LateRoundAfterDrainDeadlineSendsFinAndStartsFinWaitThen) {
  // A round that comes long after the deadline (a stalled progress thread) still only sends
  // the FIN: the peer gets its full second from the FIN.
  close_at_t0();
  EXPECT_EQ(ladder.step(t0 + 5s, healthy, not_drained), CloseAction::send_fin);
  EXPECT_EQ(ladder.deadline(), t0 + 6s);
}

TEST_F(CloseLadderTest, FinWaitExpiresAtExactlyOneSecond) {
  close_at_t0();
  const Instant fin = t0 + 250ms;
  ASSERT_EQ(ladder.step(fin, healthy, drained), CloseAction::send_fin);
  EXPECT_EQ(ladder.step(fin + 1s - 1ns, healthy, drained), CloseAction::none);
  EXPECT_EQ(ladder.stage(), CloseStage::fin_sent);
  EXPECT_EQ(ladder.step(fin + 1s, healthy, drained), CloseAction::release);
}

TEST_F(CloseLadderTest, BothDeadlinesInTurnWithAPeerThatNeitherReadsNorCloses) {
  close_at_t0();
  ASSERT_EQ(ladder.step(t0 + 2s, healthy, not_drained), CloseAction::send_fin);
  EXPECT_EQ(ladder.step(t0 + 3s - 1ns, healthy, not_drained), CloseAction::none);
  EXPECT_EQ(ladder.step(t0 + 3s, healthy, not_drained), CloseAction::release);
}

TEST_F(CloseLadderTest, ResetWhileDrainingShortCircuitsBothWaits) {
  close_at_t0();
  ASSERT_EQ(ladder.step(t0 + 10ms, healthy, not_drained), CloseAction::none);
  EXPECT_EQ(ladder.step(t0 + 20ms, broken, not_drained), CloseAction::send_fin_and_release);
  EXPECT_EQ(ladder.stage(), CloseStage::released);
}

TEST_F(CloseLadderTest, PeerEndWhileDrainingShortCircuitsBothWaits) {
  close_at_t0();
  EXPECT_EQ(ladder.step(t0 + 20ms, peer_ended, not_drained), CloseAction::send_fin_and_release);
  EXPECT_EQ(ladder.stage(), CloseStage::released);
}

TEST_F(CloseLadderTest, ResetDuringFinWaitReleasesAtOnce) {
  close_at_t0();
  ASSERT_EQ(ladder.step(t0, healthy, drained), CloseAction::send_fin);
  EXPECT_EQ(ladder.step(t0 + 1ms, broken, drained), CloseAction::release);
}

TEST_F(CloseLadderTest, CloseOfAnAlreadyFailedConnectionReleasesAtTheFirstRound) {
  close_at_t0();
  EXPECT_EQ(ladder.step(t0, broken, not_drained), CloseAction::send_fin_and_release);
  EXPECT_EQ(ladder.stage(), CloseStage::released);
}

TEST_F(CloseLadderTest, StartTwiceKeepsTheFirstDeadline) {
  close_at_t0();
  ladder.start(t0 + 1s);  // at_exit closes only what is open; the ladder holds anyway
  EXPECT_EQ(ladder.deadline(), t0 + 2s);
  EXPECT_EQ(ladder.step(t0 + 2s, healthy, not_drained), CloseAction::send_fin);
}

// The peer closed first (its end of stream came before ours was queued): our TCP FIN waits
// for the peer's, so this side closes passively (no TIME-WAIT here), and goes with it.
constexpr bool peer_first = true;

TEST_F(CloseLadderTest, APeerThatClosedFirstHasItsFinAwaitedBeforeOurs) {
  close_at_t0();
  EXPECT_EQ(ladder.step(t0 + 10ms, healthy, drained, peer_first), CloseAction::none);
  EXPECT_EQ(ladder.step(t0 + 500ms, healthy, drained, peer_first), CloseAction::none);
  EXPECT_EQ(ladder.stage(), CloseStage::draining);
  EXPECT_EQ(ladder.step(t0 + 600ms, peer_ended, drained, peer_first),
            CloseAction::send_fin_and_release);
  EXPECT_EQ(ladder.stage(), CloseStage::released);
}

TEST_F(CloseLadderTest, APeerThatClosedFirstButSendsNoFinIsWaitedForPeerFinWait) {
  // (A peer that shut its writing side but keeps its socket open.) Two seconds: 10,000
  // clients closing at once on a loaded machine send their FINs that late.
  static_assert(CloseLadder::peer_fin_wait == 2s);
  const Duration w = CloseLadder::peer_fin_wait;
  close_at_t0();
  EXPECT_EQ(ladder.step(t0 + w - 1ns, healthy, drained, peer_first), CloseAction::none);
  EXPECT_EQ(ladder.step(t0 + w, healthy, drained, peer_first), CloseAction::send_fin);
  EXPECT_EQ(ladder.step(t0 + w + CloseLadder::fin_wait, healthy, drained, peer_first),
            CloseAction::release);
}

TEST_F(CloseLadderTest, APeerThatClosedFirstDoesNotStretchAnUndrainedClose) {
  // Not drained: the drain deadline (2 s) still sends the FIN, whoever closed first.
  close_at_t0();
  EXPECT_EQ(ladder.step(t0 + 1s, healthy, not_drained, peer_first), CloseAction::none);
  EXPECT_EQ(ladder.step(t0 + 2s, healthy, not_drained, peer_first), CloseAction::send_fin);
}

TEST_F(CloseLadderTest, APeerThatClosedFirstAndThenResetReleasesAtOnce) {
  close_at_t0();
  ASSERT_EQ(ladder.step(t0 + 10ms, healthy, drained, peer_first), CloseAction::none);
  EXPECT_EQ(ladder.step(t0 + 20ms, broken, drained, peer_first), CloseAction::send_fin_and_release);
}

TEST(CloseAction, SendsFinAndReleasesAsNamed) {
  EXPECT_FALSE(sends_fin(CloseAction::none));
  EXPECT_FALSE(releases(CloseAction::none));
  EXPECT_TRUE(sends_fin(CloseAction::send_fin));
  EXPECT_FALSE(releases(CloseAction::send_fin));
  EXPECT_TRUE(sends_fin(CloseAction::send_fin_and_release));
  EXPECT_TRUE(releases(CloseAction::send_fin_and_release));
  EXPECT_FALSE(sends_fin(CloseAction::release));
  EXPECT_TRUE(releases(CloseAction::release));
}

}  // namespace
}  // namespace esock::sockets
