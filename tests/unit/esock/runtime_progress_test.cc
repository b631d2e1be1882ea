// Run to completion (lib/esock/runtime/runtime.h, "Who moves the stack"): which thread polls
// an own-stack provider while an application call waits, with a fake stack that records
// the thread of every poll. Contracts:
// * auto and inline: the waiting application thread runs the round itself;
// * inline: no progress thread ever runs; thread: only the progress thread polls;
// * auto: the progress thread rests while an application thread polls, and keeps the
//   stack alive once none does;
// * past the spin budget a waiting thread sleeps between rounds; within it, it never does.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "base/steady_clock.h"
#include "esock/providers/provider.h"
#include "esock/runtime/runtime.h"

namespace esock::sockets {
namespace {

using namespace std::chrono_literals;

class FakeStack final : public Provider {
 public:
  const char* name() const override { return "fake"; }
  bool own_stack() const override { return true; }
  bool poll_once() override {
    if (std::this_thread::get_id() == app)
      ++app_polls;
    else
      ++other_polls;
    return busy.load();
  }

  std::thread::id app = std::this_thread::get_id();
  std::atomic<int> app_polls{0}, other_polls{0};
  std::atomic<bool> busy{false};  // every round "did something"
};

struct Fixture {
  // The hand-off is long here so that a test thread the machine leaves off its core for a
  // while (busy CI) still counts as polling.
  explicit Fixture(ProgressMode mode, std::chrono::microseconds spin = 200us,
                   std::chrono::microseconds handoff = 200ms)
      : rt(clock) {
    rt.set_progress(mode, spin, handoff);
    std::string why;
    EXPECT_EQ(rt.use_stack(stack, &why), 0) << why;
  }
  void wait_rounds(int n) {
    std::unique_lock lk(rt.mu);
    for (int i = 0; i < n; ++i) rt.wait(lk);
  }

  SteadyClock clock;
  FakeStack stack;
  DdpRuntime rt;  // after stack: its progress thread stops before the stack goes
};

TEST(RuntimeProgress, InlineTheWaitingThreadPollsTheStackAndNoOtherThreadDoes) {
  Fixture f(ProgressMode::inline_only);
  f.stack.busy = true;
  f.wait_rounds(50);
  EXPECT_EQ(f.stack.app_polls, 50);
  EXPECT_EQ(f.rt.inline_rounds(), 50u);
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(f.stack.other_polls, 0);  // no progress thread at all
}

TEST(RuntimeProgress, ThreadModeOnlyTheProgressThreadPolls) {
  Fixture f(ProgressMode::thread);
  f.stack.busy = true;  // every round notifies the waiter
  f.wait_rounds(20);
  EXPECT_EQ(f.stack.app_polls, 0);
  EXPECT_GT(f.stack.other_polls, 0);
  EXPECT_EQ(f.rt.inline_rounds(), 0u);
}

TEST(RuntimeProgress, AutoTheProgressThreadRestsWhileTheApplicationPollsAndResumesAfter) {
  Fixture f(ProgressMode::automatic, 1s);
  f.stack.busy = true;
  f.wait_rounds(1);  // from here on the application thread is the poller
  const int before = f.stack.other_polls;
  const auto end = std::chrono::steady_clock::now() + 50ms;
  int rounds = 0;
  while (std::chrono::steady_clock::now() < end) {
    f.wait_rounds(1);
    ++rounds;
  }
  // At most the round the progress thread was in when the application took over.
  EXPECT_LE(f.stack.other_polls - before, 1);
  EXPECT_EQ(f.stack.app_polls, rounds + 1);
  // Nobody waits inside esock: the progress thread keeps the stack alive.
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (f.stack.other_polls - before < 10 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  EXPECT_GE(f.stack.other_polls - before, 10);
}

TEST(RuntimeProgress, WithinTheSpinBudgetAWaitNeverSleeps) {
  Fixture f(ProgressMode::inline_only, 10s);
  f.wait_rounds(200);  // an idle stack, but silence is shorter than the budget
  EXPECT_EQ(f.rt.inline_sleeps(), 0u);
}

TEST(RuntimeProgress, PastTheSpinBudgetAnIdleWaitSleepsBetweenRounds) {
  Fixture f(ProgressMode::inline_only, 0us);
  const auto t0 = std::chrono::steady_clock::now();
  f.wait_rounds(100);
  EXPECT_EQ(f.rt.inline_sleeps(), 100u);
  // Each sleep is at least the short step (50 us): the wait cost wall time, not CPU.
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 100 * 45us);
  // Activity ends the back-off: a busy round never sleeps.
  f.stack.busy = true;
  f.wait_rounds(10);
  EXPECT_EQ(f.rt.inline_sleeps(), 100u);
}

TEST(RuntimeProgress, AWaitWithADeadlinePastItReturnsFalseWithoutSleeping) {
  Fixture f(ProgressMode::inline_only, 0us);
  std::unique_lock lk(f.rt.mu);
  EXPECT_FALSE(f.rt.wait_until(lk, DdpRuntime::CallClock::now() - 1ms));
  EXPECT_EQ(f.stack.app_polls, 1);  // it still ran its round
}

TEST(RuntimeProgress, TheApplicationsBlockedCallsCountPollersAndSleepers) {
  Fixture f(ProgressMode::inline_only, 0us);
  std::atomic<bool> stop{false};
  std::thread waiter([&] {
    std::unique_lock lk(f.rt.mu);
    while (!stop) f.rt.wait(lk);
  });
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  int seen = 0;
  while (seen == 0 && std::chrono::steady_clock::now() < deadline) {
    std::lock_guard lk(f.rt.mu);
    seen = f.rt.waiters();
  }
  EXPECT_EQ(seen, 1);  // asleep between its rounds, without the lock, but blocked
  stop = true;
  f.rt.wake();
  waiter.join();
}

}  // namespace
}  // namespace esock::sockets
