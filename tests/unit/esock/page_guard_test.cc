// Write guards on a buffer the peer may still read (lib/esock/process/page_guard.h): a
// write to a guarded page waits in the fault until the release and then lands; reads never
// wait; faults that are not esock's still reach the application's handler or kill the
// process as before; a fork child gets its pages back.
#include "esock/process/page_guard.h"

#include <gtest/gtest.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

namespace esock::sockets {
namespace {

using namespace std::chrono_literals;

const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));

struct Pages {
  explicit Pages(std::size_t n, int prot = PROT_READ | PROT_WRITE) : len(n * page) {
    p = static_cast<std::uint8_t*>(::mmap(nullptr, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  }
  ~Pages() { ::munmap(p, len); }
  std::uint8_t* p;
  std::size_t len;
};

TEST(PageGuard, AWriteToAGuardedPageWaitsForTheReleaseThenLands) {
  Pages b(2);
  std::memset(b.p, 1, b.len);
  const int g = page_guard::protect(b.p, b.len);
  ASSERT_GE(g, 0) << std::strerror(errno);
  EXPECT_EQ(b.p[page + 5], 1) << "reads do not wait";
  const std::uint64_t before = page_guard::faults_taken();
  std::atomic<bool> written{false};
  std::thread writer([&] {
    b.p[page + 5] = 9;  // faults, held until the release
    written = true;
  });
  for (int i = 0; i < 500 && !page_guard::awaited(g); ++i) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(page_guard::awaited(g)) << "the writer is held in the fault";
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(written.load());
  EXPECT_TRUE(page_guard::awaited(g));
  EXPECT_EQ(b.p[page + 5], 1) << "the peer still reads what was written before";
  EXPECT_EQ(page_guard::release(g), 1u) << "the fault it held, for the socket's counter";
  writer.join();
  EXPECT_TRUE(written.load());
  EXPECT_EQ(b.p[page + 5], 9);
  EXPECT_FALSE(page_guard::awaited(g));
  EXPECT_EQ(page_guard::faults_taken(), before + 1);
}

TEST(PageGuard, OverlapsAndWaitUnguarded) {
  Pages b(4);
  const int g = page_guard::protect(b.p + page, 2 * page);
  ASSERT_GE(g, 0);
  EXPECT_FALSE(page_guard::overlaps(b.p, page));
  EXPECT_TRUE(page_guard::overlaps(b.p + page - 1, 2));
  EXPECT_TRUE(page_guard::overlaps(b.p + 3 * page - 1, 1));
  EXPECT_FALSE(page_guard::overlaps(b.p + 3 * page, page));
  page_guard::wait_unguarded(b.p, page);  // returns at once
  std::atomic<bool> done{false};
  std::thread t([&] {
    page_guard::wait_unguarded(b.p + 2 * page, 10);
    done = true;
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(done.load());
  page_guard::release(g);
  t.join();
  EXPECT_FALSE(page_guard::overlaps(b.p, b.len));
  b.p[page] = 3;  // writable again, no fault
}

// A read guard (Access::none, AZ-SDP's asynchronous read): a load waits too, and sees what
// the pages hold at the release; wait_readable (a kernel write from the buffer) waits for
// it, and for no write guard.
TEST(PageGuard, ANoAccessGuardHoldsLoadsUntilTheRelease) {
  Pages b(2);
  std::memset(b.p, 1, b.len);
  const int g = page_guard::protect(b.p, b.len, page_guard::Access::none);
  ASSERT_GE(g, 0) << std::strerror(errno);
  EXPECT_TRUE(page_guard::overlaps_no_access(b.p + page, 1));
  std::atomic<int> seen{-1};
  std::atomic<bool> written_out{false};
  std::thread reader([&] { seen = b.p[page + 5]; });  // faults, held until the release
  std::thread kernel_writer([&] {
    page_guard::wait_readable(b.p, 10);
    written_out = true;
  });
  for (int i = 0; i < 500 && !page_guard::awaited(g); ++i) std::this_thread::sleep_for(10ms);
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(seen.load(), -1) << "the load went on before the release";
  EXPECT_FALSE(written_out.load());
  // What the landing does under the guard: the pages get their final contents.
  ASSERT_EQ(::mprotect(b.p, b.len, PROT_READ | PROT_WRITE), 0);
  std::memset(b.p, 7, b.len);
  page_guard::release(g);
  reader.join();
  kernel_writer.join();
  EXPECT_EQ(seen.load(), 7);
  EXPECT_FALSE(page_guard::overlaps_no_access(b.p, b.len));
  // A write guard does not hold a kernel write from the pages.
  const int w = page_guard::protect(b.p, b.len);
  ASSERT_GE(w, 0);
  EXPECT_FALSE(page_guard::overlaps_no_access(b.p, b.len));
  page_guard::wait_readable(b.p, b.len);  // returns at once
  page_guard::release(w);
}

// Copy-on-write's signal (runtime.cc copy_on_write): a thread waiting for a guard, in
// wait_unguarded (free, a read into the pages) as in a fault, makes it awaited, is counted,
// and calls the wait hook once as it starts waiting.
std::atomic<int> hook_calls{0};

TEST(PageGuard, AWaiterMakesTheGuardAwaitedAndCallsTheHook) {
  Pages b(2);
  const int g = page_guard::protect(b.p, page);
  ASSERT_GE(g, 0);
  page_guard::set_wait_hook([] { ++hook_calls; });
  EXPECT_FALSE(page_guard::awaited(g));
  EXPECT_EQ(page_guard::waiting(), 0);
  std::thread t([&] { page_guard::wait_unguarded(b.p + 10, 1); });
  for (int i = 0; i < 500 && !page_guard::awaited(g); ++i) std::this_thread::sleep_for(2ms);
  EXPECT_TRUE(page_guard::awaited(g));
  EXPECT_EQ(page_guard::waiting(), 1);
  EXPECT_EQ(hook_calls.load(), 1);
  page_guard::release(g);
  t.join();
  EXPECT_EQ(page_guard::waiting(), 0);
  page_guard::set_wait_hook(nullptr);
}

// The writability check of a buffer written again while guarded (io.cc write_async):
// only the pieces no guard covers are handed to the probe, in order.
TEST(PageGuard, AllUnguardedVisitsOnlyTheUncoveredPieces) {
  Pages b(6);
  const int g1 = page_guard::protect(b.p + page, page);
  const int g2 = page_guard::protect(b.p + 3 * page, 2 * page);
  ASSERT_GE(g1, 0);
  ASSERT_GE(g2, 0);
  static std::vector<std::pair<std::uintptr_t, std::size_t>> seen;
  seen.clear();
  const auto note = [](const void* p, std::size_t n) {
    seen.emplace_back(reinterpret_cast<std::uintptr_t>(p), n);
    return true;
  };
  EXPECT_TRUE(page_guard::all_unguarded(b.p, b.len, note));
  const auto a = reinterpret_cast<std::uintptr_t>(b.p);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0], std::make_pair(a, page));
  EXPECT_EQ(seen[1], std::make_pair(a + 2 * page, page));
  EXPECT_EQ(seen[2], std::make_pair(a + 5 * page, page));
  seen.clear();
  EXPECT_TRUE(page_guard::all_unguarded(b.p + page, page, note));  // all guarded
  EXPECT_TRUE(seen.empty());
  EXPECT_FALSE(page_guard::all_unguarded(b.p, 2 * page, [](const void*, std::size_t) {
    return false;  // a piece that is not writable
  }));
  page_guard::release(g1);
  page_guard::release(g2);
}

TEST(PageGuard, RefusesWhatItCannotGuard) {
  Pages b(1);
  EXPECT_EQ(page_guard::protect(b.p + 1, page), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(page_guard::protect(b.p, page - 1), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(page_guard::protect(b.p, 0), -1);
  EXPECT_EQ(errno, EINVAL);
  // The table is bounded.
  Pages many(page_guard::max_guards + 1);
  int last = -1;
  for (int i = 0; i < page_guard::max_guards; ++i) {
    last = page_guard::protect(many.p + i * page, page);
    if (last < 0) break;
  }
  EXPECT_EQ(page_guard::protect(many.p + page_guard::max_guards * page, page), -1);
  EXPECT_EQ(errno, ENOSPC);
  for (int i = 0; i < page_guard::max_guards; ++i) page_guard::release(i);
  EXPECT_GE(last, 0);
  const int g = page_guard::protect(b.p, page);
  EXPECT_GE(g, 0);
  page_guard::release(g);
}

// The application's handler, installed before esock's: it still runs for its own faults.
sigjmp_buf g_back;
void app_handler(int) {
  siglongjmp(g_back, 1);
}

TEST(PageGuardDeathTest, TheApplicationsOwnHandlerStillRunsForItsFaults) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process: no handler yet
  EXPECT_EXIT(
      {
        struct sigaction sa {};
        sa.sa_handler = app_handler;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_NODEFER;
        ::sigaction(SIGSEGV, &sa, nullptr);
        Pages guarded(1);
        const int g = page_guard::protect(guarded.p, page);  // installs esock's
        if (g < 0) ::_exit(1);
        Pages own(1, PROT_READ);
        if (sigsetjmp(g_back, 0) == 0) {
          *reinterpret_cast<volatile std::uint8_t*>(own.p) = 1;  // the application's fault
          ::_exit(2);
        }
        page_guard::release(g);
        guarded.p[0] = 1;
        ::_exit(42);
      },
      ::testing::ExitedWithCode(42), "");
}

// What the fault ends in: SIGSEGV's default action, or under a sanitizer its own SEGV
// report (the handler esock's chains to), which aborts or exits non-zero.
bool died_of_the_fault(int status) {
  if (WIFSIGNALED(status)) return WTERMSIG(status) == SIGSEGV || WTERMSIG(status) == SIGABRT;
  return WIFEXITED(status) && WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 3 &&
         WEXITSTATUS(status) != 4;
}

TEST(PageGuardDeathTest, AFaultThatIsNotEsocksStillKills) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        Pages guarded(1);
        if (page_guard::protect(guarded.p, page) < 0) ::_exit(3);
        Pages own(1, PROT_READ);
        *reinterpret_cast<volatile std::uint8_t*>(own.p) = 1;
        ::_exit(4);  // survived the fault
      },
      died_of_the_fault, "");
}

// A fork child's copy of guarded pages is its own: writable at once (nothing would ever
// release it), while the parent's stay guarded until its release.
// ... and none of the parent's waiters: a thread waiting at the fork is not in the child,
// so the child's next guard is not awaited (copy-on-write would copy it at once).
TEST(PageGuard, AForkChildGetsItsPagesBack) {
  Pages b(1);
  const int g = page_guard::protect(b.p, page);
  ASSERT_GE(g, 0);
  std::thread waiter([&] { page_guard::wait_unguarded(b.p, 1); });
  for (int i = 0; i < 500 && page_guard::waiting() == 0; ++i) std::this_thread::sleep_for(2ms);
  ASSERT_EQ(page_guard::waiting(), 1);
  const pid_t pid = ::fork();
  if (pid == 0) {
    page_guard::forget_all_in_child();  // the runtime's at-fork child handler does this
    b.p[0] = 7;
    if (page_guard::overlaps(b.p, page)) ::_exit(1);
    if (page_guard::waiting() != 0) ::_exit(2);
    const int again = page_guard::protect(b.p, page);  // the slot the parent's waiter was on
    if (again < 0 || page_guard::awaited(again)) ::_exit(3);
    page_guard::release(again);
    ::_exit(0);
  }
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_TRUE(page_guard::overlaps(b.p, page));
  page_guard::release(g);
  waiter.join();
  b.p[0] = 8;
}

}  // namespace
}  // namespace esock::sockets
