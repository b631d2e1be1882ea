// Idle back-off for poll loops: busy-poll while there is work, sleep briefly once the loop
// has been idle for a while. Measured on this project's machines (MACHINE-NOTES.md): a
// 50 us sleep after ~64 empty polls cuts an idle poller from ~97% to ~4% of a core with
// the same median round trip; only the tail pays (p99 ~116 us). Rx interrupts would do
// better but exist only on net_tap, so this works on every device.
#pragma once

#include <unistd.h>

#include <cstdint>

namespace esock::tcp {

struct IdleBackoffConfig {
  // Empty polls before the first sleep. 64 (MACHINE-NOTES) idles cheaply but sleeps in the
  // middle of a 16 KiB+ exchange; 1024 (~50-100 us of spinning after the last work) gives
  // busy-poll latency and bulk rates (bench/tcp/README.md) and the same idle cost once the
  // sleeps start, since every later empty poll sleeps.
  std::uint32_t spin_polls = 1024;
  std::uint32_t sleep_us = 50;  // 0: never sleep (pure busy polling)
};

class IdleBackoff {
 public:
  using SleepFn = void (*)(std::uint32_t us);

  explicit IdleBackoff(IdleBackoffConfig config = {}, SleepFn sleep = &default_sleep)
      : config_(config), sleep_(sleep) {}

  // Call once per poll-loop iteration with whether it did any work. Returns true when it
  // slept. Work resets the count, so a busy loop never sleeps.
  bool poll_done(bool did_work) {
    if (did_work) {
      empty_ = 0;
      return false;
    }
    if (empty_ < config_.spin_polls) {
      ++empty_;
      return false;
    }
    if (config_.sleep_us == 0) return false;
    sleep_(config_.sleep_us);
    return true;
  }
  std::uint32_t empty_polls() const { return empty_; }

 private:
  static void default_sleep(std::uint32_t us) { ::usleep(us); }

  IdleBackoffConfig config_;
  SleepFn sleep_;
  std::uint32_t empty_ = 0;
};

}  // namespace esock::tcp
