// Time values for engines that never read a clock: they are handed `now`.
// An Instant is nanoseconds since an arbitrary epoch chosen by whoever owns the clock
// (a test's ManualClock, or the runtime's steady clock).
#pragma once

#include <chrono>
#include <cstdint>

namespace esock {

using Duration = std::chrono::nanoseconds;
using namespace std::chrono_literals;

struct Instant {
  std::int64_t ns = 0;

  friend constexpr auto operator<=>(Instant, Instant) = default;
  friend constexpr Instant operator+(Instant t, Duration d) { return {t.ns + d.count()}; }
  friend constexpr Instant operator-(Instant t, Duration d) { return {t.ns - d.count()}; }
  friend constexpr Duration operator-(Instant a, Instant b) { return Duration(a.ns - b.ns); }
  Instant& operator+=(Duration d) {
    ns += d.count();
    return *this;
  }
  static constexpr Instant never() { return {INT64_MAX}; }
};

// Where time comes from, for the few components (fault injector, poll loop) that need to
// ask rather than be told.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual Instant now() const = 0;
};

// A clock that only moves when a test moves it.
class ManualClock final : public Clock {
 public:
  Instant now() const override { return now_; }
  void advance(Duration d) { now_ += d; }
  void set(Instant t) { now_ = t; }

 private:
  Instant now_{};
};

}  // namespace esock
