// Linked into every GoogleTest binary (cmake/EsockTarget.cmake): a test still running after
// ESOCK_TEST_HANG_SECONDS (120 by default) gets every thread's stack printed by gdb, then
// the process ends with status 124. A hang is otherwise killed by CTest's TIMEOUT with
// nothing to show where it stood, and the rare ones (one run in dozens, in CI) cannot be
// rerun to look.
//
// The watchdog is a thread with every signal blocked, so signals sent to the process still
// reach the test's own threads. gdb is started with posix_spawn, which runs no fork
// handlers (esock's take its runtime lock, which a hung thread may hold), under timeout(1).
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

std::chrono::seconds limit() {
  const char* v = std::getenv("ESOCK_TEST_HANG_SECONDS");
  const long s = v ? std::strtol(v, nullptr, 10) : 120;
  return std::chrono::seconds(s > 0 ? s : 120);
}

void print_stacks_and_exit(const char* test) {
  std::fprintf(stderr, "\nhang watchdog: %s still running after %lld s; every thread's stack:\n",
               test, static_cast<long long>(limit().count()));
  std::fflush(stderr);
  const std::string pid = std::to_string(::getpid());
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, STDERR_FILENO, STDOUT_FILENO);
  // gdb is given a minute (it once stayed in its own poll with every thread it attached
  // to stopped): then it is killed, which lets them go.
  const char* argv[] = {"timeout",
                        "-k",
                        "5",
                        "60",
                        "gdb",
                        "-batch",
                        "-nx",
                        "-p",
                        pid.c_str(),
                        "-ex",
                        "thread apply all bt",
                        nullptr};
  pid_t child = -1;
  if (::posix_spawnp(&child, "timeout", &fa, nullptr, const_cast<char**>(argv), environ) == 0) {
    int status = 0;
    ::waitpid(child, &status, 0);
  } else {
    std::fprintf(stderr, "hang watchdog: gdb could not be started\n");
  }
  ::_exit(124);
}

// What the watching thread reads lives in static storage with no destructor: gtest deletes
// its listeners at exit while the thread may still be looking.
std::atomic<Clock::rep> test_started{0};  // 0: no test running
char test_name[512];                      // (written before test_started, read after it)

void watch() {
  const auto max = limit();
  for (;;) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const auto at = test_started.load(std::memory_order_acquire);
    if (at == 0) continue;
    if (Clock::now() - Clock::time_point(Clock::duration(at)) > max)
      print_stacks_and_exit(test_name);
  }
}

class Watchdog : public testing::EmptyTestEventListener {
 public:
  void OnTestProgramStart(const testing::UnitTest&) override {
    sigset_t all, old;
    sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &old);
    std::thread(watch).detach();
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }
  void OnTestStart(const testing::TestInfo& t) override {
    std::snprintf(test_name, sizeof test_name, "%s.%s", t.test_suite_name(), t.name());
    test_started.store(Clock::now().time_since_epoch().count(), std::memory_order_release);
  }
  void OnTestEnd(const testing::TestInfo&) override {
    test_started.store(0, std::memory_order_release);
  }
};

// Registered before main(): gtest_main's InitGoogleTest keeps appended listeners.
[[maybe_unused]] const bool registered = [] {
  testing::UnitTest::GetInstance()->listeners().Append(new Watchdog);
  return true;
}();

}  // namespace
