#include "tcp/dev/idle_backoff.h"

#include <gtest/gtest.h>

namespace esock::tcp {
namespace {

std::uint32_t slept_us = 0;
int sleeps = 0;
void fake_sleep(std::uint32_t us) {
  slept_us += us;
  ++sleeps;
}

TEST(IdleBackoff, SpinsThenSleepsAndWorkResets) {
  slept_us = 0;
  sleeps = 0;
  IdleBackoff b({.spin_polls = 3, .sleep_us = 50}, &fake_sleep);
  EXPECT_FALSE(b.poll_done(false));
  EXPECT_FALSE(b.poll_done(false));
  EXPECT_FALSE(b.poll_done(false));
  EXPECT_TRUE(b.poll_done(false));
  EXPECT_TRUE(b.poll_done(false));
  EXPECT_EQ(sleeps, 2);
  EXPECT_EQ(slept_us, 100u);
  EXPECT_FALSE(b.poll_done(true));
  EXPECT_EQ(b.empty_polls(), 0u);
  EXPECT_FALSE(b.poll_done(false));
  EXPECT_EQ(sleeps, 2);
}

TEST(IdleBackoff, ZeroSleepIsBusyPolling) {
  sleeps = 0;
  IdleBackoff b({.spin_polls = 0, .sleep_us = 0}, &fake_sleep);
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(b.poll_done(false));
  EXPECT_EQ(sleeps, 0);
}

}  // namespace
}  // namespace esock::tcp
