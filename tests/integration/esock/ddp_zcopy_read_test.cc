// AZ-SDP's asynchronous read (ESOCK_ZCOPY_ASYNC on the reading socket; docs/sockets.md,
// "Zero-copy modes") over the kernel-socket provider: a large read of advertised data
// returns before the data arrived, with the buffer's pages no-access until it has, so a
// program that looks at its buffer right after read() sees only the final data, and the
// calls that hand the buffer to the kernel or to esock wait for it too.
//
// The writer is a child process the test stops (SIGSTOP) once its data is advertised: its
// RDMA Read then cannot be answered until the test lets it go on (SIGCONT), which makes
// "the read returned before its data" a fact, not a race.
#include <dirent.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "ddp_helpers.h"

namespace esock_test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
// How long the reader's runtime takes, once the writer's source is advertised, to fetch
// the first 4 MiB ahead (a sanitizer's Debug build takes longer).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr auto settle = 1500ms;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr auto settle = 1500ms;
#else
constexpr auto settle = 300ms;
#endif
#else
constexpr auto settle = 300ms;
#endif
constexpr std::size_t n = 8 * 1024 * 1024;
constexpr std::uint32_t seed = 23;

// Whether every thread of `pid` is stopped (state T in /proc/PID/task/TID/stat). kill(2)
// returns before a thread running on another core has taken SIGSTOP; until it has, it may
// still answer a Read (CI: 290 KiB of a read that was to wait landed).
bool all_threads_stopped(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return false;
  bool all = true;
  int seen = 0;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f(dir + "/" + e->d_name + "/stat");
    std::string line;
    std::getline(f, line);
    const std::size_t close_paren = line.rfind(')');
    if (close_paren == std::string::npos || close_paren + 2 >= line.size()) continue;
    ++seen;
    all = all && line[close_paren + 2] == 'T';
  }
  ::closedir(d);
  return all && seen > 0;
}

// A DDPMODE writer in a child process: it writes n octets of pattern(n, seed) (ESOCK_ZCOPY
// sync: one advertised source, which waits for our pull) and then waits for end of stream.
struct StoppedWriter {
  StoppedWriter() {
    std::uint16_t port = 0;
    const int lfd = ddp_listener(&port);
    if (lfd < 0) return;
    pid = ::fork();
    if (pid == 0) {
      const int fd = ddp_connect(port);
      const std::vector<std::uint8_t> data = pattern(n, seed);
      if (fd < 0 || !write_all(fd, data.data(), n)) ::_exit(3);
      std::uint8_t b;
      (void)::read(fd, &b, 1);
      ::_exit(0);
    }
    srv = ::accept(lfd, nullptr, nullptr);
    ::close(lfd);
  }
  ~StoppedWriter() {
    if (pid > 0) {
      ::kill(pid, SIGCONT);
      if (srv >= 0) ::close(srv);
      int status = 0;
      ::waitpid(pid, &status, 0);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    } else if (srv >= 0) {
      ::close(srv);
    }
  }
  // Once the writer's source is advertised (and the first 4 MiB fetched ahead, as a reader
  // that is not waiting gets them): it answers no Read until go_on().
  // The advertisement is awaited (the socket turns readable with it): a child that is slow
  // to start (fork, connect, 8 MiB of pattern under a loaded sanitizer build took more
  // than 1.5 s in CI) must not be stopped before it wrote.
  void stop() {
    pollfd p{srv, POLLIN, 0};
    EXPECT_EQ(::poll(&p, 1, 30'000), 1) << "the writer advertised nothing in 30 s";
    std::this_thread::sleep_for(settle);
    ::kill(pid, SIGSTOP);
    for (int i = 0; i < 5000 && !all_threads_stopped(pid); ++i) std::this_thread::sleep_for(1ms);
  }
  void go_on() { ::kill(pid, SIGCONT); }
  pid_t pid = -1;
  int srv = -1;
};

// A thread that lets the writer go on after `after`.
std::thread go_on_later(StoppedWriter& w, std::chrono::milliseconds after) {
  return std::thread([&w, after] {
    std::this_thread::sleep_for(after);
    w.go_on();
  });
}

// A stopped writer's connection whose reading end is in ESOCK_ZCOPY_ASYNC, and a buffer of
// n octets of 'Z' to read into.
struct AsyncReader {
  AsyncReader() { std::memset(buf.p, 'Z', n); }
  bool ready(int mode = ESOCK_ZCOPY_ASYNC) {
    return w.srv >= 0 && set_zcopy_mode(w.srv, mode) == 0;
  }
  StoppedWriter w;
  MappedPages buf{n};
};

// Reads all n octets with one MSG_WAITALL call into buf, with the writer stopped: what was
// fetched ahead is copied, the rest goes as an asynchronous read. True when the call
// returned n before any of the rest arrived (its last page is still no-access).
bool read_before_the_data(StoppedWriter& w, std::uint8_t* buf) {
  w.stop();
  // A read that waits for its data (the feature broken) is let go after 3 s, and fails.
  std::atomic<bool> returned{false};
  std::thread rescue([&] {
    for (int i = 0; i < 30 && !returned; ++i) std::this_thread::sleep_for(100ms);
    if (!returned) w.go_on();
  });
  const ssize_t r = ::recv(w.srv, buf, n, MSG_WAITALL);
  const int err = errno;
  const bool early = r == static_cast<ssize_t>(n) && perms_at(buf + n - page) == "---p";
  returned = true;
  rescue.join();
  EXPECT_EQ(r, static_cast<ssize_t>(n)) << std::strerror(err);
  return early;
}

// A connection whose read returned before its data. Whether the read can go so depends on
// when the reader comes: a source fetched ahead after its 1 ms grace goes by copy, and
// under a sanitizer's slowness a first try may find it so (the read then waits for its
// data). Up to three fresh connections; with the feature broken every one waits: nullptr.
// `prepare` runs on each fresh buffer before its read.
std::unique_ptr<AsyncReader> read_early(int mode = ESOCK_ZCOPY_ASYNC,
                                        bool (*prepare)(MappedPages&) = nullptr) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto a = std::make_unique<AsyncReader>();
    if (!a->ready(mode) || (prepare && !prepare(a->buf))) return nullptr;
    if (read_before_the_data(a->w, a->buf.p)) return a;
  }
  return nullptr;
}

// Both asynchronous modes read so (copy-on-write differs from block-on-write for writes only).
void touch_early(int mode) {
  const auto a = read_early(mode);
  ASSERT_TRUE(a) << "the read waited for its data, three times";
  StoppedWriter& w = a->w;
  MappedPages& buf = a->buf;
  std::thread go = go_on_later(w, 300ms);
  const auto t0 = Clock::now();
  const std::vector<std::uint8_t> want = pattern(n, seed);
  // A load from the last page: waits in the fault until the pages landed.
  const std::uint8_t last = buf.p[n - 1];
  EXPECT_GE(Clock::now() - t0, 200ms) << "the touch did not wait for the data";
  EXPECT_EQ(last, want[n - 1]);
  EXPECT_TRUE(std::equal(want.begin(), want.end(), buf.p)) << "the reader saw other octets";
  EXPECT_EQ(perms_at(buf.p + n - page), "rw-p");
  go.join();
}

TEST(DdpZcopyRead, AReaderThatTouchesItsBufferEarlySeesOnlyFinalData) {
  touch_early(ESOCK_ZCOPY_ASYNC);
}

TEST(DdpZcopyRead, ACopyOnWriteReaderThatTouchesItsBufferEarlySeesOnlyFinalData) {
  touch_early(ESOCK_ZCOPY_ASYNC_COW);
}

// A buffer over two mappings (here: its middle half MADV_DONTFORK) cannot give its own pages
// as staging (mremap moves one mapping at a time): fresh pages land over both.
TEST(DdpZcopyRead, ABufferOverTwoMappingsLandsToo) {
  const auto a = read_early(ESOCK_ZCOPY_ASYNC, [](MappedPages& buf) {
    return ::madvise(buf.p + n / 4, n / 2, MADV_DONTFORK) == 0;  // across the read's pages
  });
  ASSERT_TRUE(a) << "the read waited for its data, three times";
  std::thread go = go_on_later(a->w, 200ms);
  const std::vector<std::uint8_t> want = pattern(n, seed);
  EXPECT_TRUE(std::equal(want.begin(), want.end(), a->buf.p));
  go.join();
}

// The same read in ESOCK_ZCOPY_SYNC waits for its data: the check above can fail.
TEST(DdpZcopyRead, ASyncReadWaitsForItsData) {
  StoppedWriter w;
  ASSERT_GE(w.srv, 0);
  MappedPages buf(n);
  w.stop();
  std::thread go = go_on_later(w, 300ms);
  const auto t0 = Clock::now();
  ASSERT_EQ(::recv(w.srv, buf.p, n, MSG_WAITALL), static_cast<ssize_t>(n));
  EXPECT_GE(Clock::now() - t0, 200ms);
  const std::vector<std::uint8_t> want = pattern(n, seed);
  EXPECT_TRUE(std::equal(want.begin(), want.end(), buf.p));
  go.join();
}

// What the program does with the buffer next, each of which must see the final data.
void then(void (*use)(StoppedWriter& w, std::uint8_t* buf)) {
  const auto a = read_early();
  ASSERT_TRUE(a) << "the read waited for its data, three times";
  std::thread go = go_on_later(a->w, 200ms);
  use(a->w, a->buf.p);
  go.join();
}

// write(2) to a kernel descriptor from the buffer: the kernel would fail with EFAULT on a
// no-access page; the interposed call waits for the data.
TEST(DdpZcopyRead, AKernelWriteFromTheBufferWaitsForTheData) {
  then([](StoppedWriter&, std::uint8_t* buf) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    ASSERT_EQ(::write(fds[1], buf + n - 4096, 4096), 4096) << std::strerror(errno);
    std::vector<std::uint8_t> got(4096);
    ASSERT_EQ(::read(fds[0], got.data(), got.size()), 4096);
    const std::vector<std::uint8_t> want = pattern(n, seed);
    EXPECT_TRUE(std::equal(got.begin(), got.end(), want.end() - 4096));
    ::close(fds[0]);
    ::close(fds[1]);
  });
}

// An echo: the buffer written back over DDPMODE at once (copied, and by rendezvous).
TEST(DdpZcopyRead, AnEchoOfTheBufferSendsTheData) {
  DdpPair p;
  ASSERT_GE(p.srv, 0);
  static int echo_fd;
  echo_fd = p.cli;
  std::vector<std::uint8_t> got(n);
  std::thread peer([&] { EXPECT_TRUE(read_all(p.srv, got.data(), n)); });
  then([](StoppedWriter&, std::uint8_t* buf) { EXPECT_TRUE(write_all(echo_fd, buf, n)); });
  peer.join();
  const std::vector<std::uint8_t> want = pattern(n, seed);
  EXPECT_TRUE(got == want);
}

// close() right after the read: the octets it returned are the program's, after the close.
TEST(DdpZcopyRead, CloseRightAfterTheReadKeepsTheData) {
  then([](StoppedWriter& w, std::uint8_t* buf) {
    ASSERT_EQ(::close(w.srv), 0);
    w.srv = -1;
    const std::vector<std::uint8_t> want = pattern(n, seed);
    EXPECT_TRUE(std::equal(want.begin(), want.end(), buf));
  });
}

// fork() right after the read: parent and child both have the data.
TEST(DdpZcopyRead, ForkRightAfterTheReadGivesTheChildTheData) {
  then([](StoppedWriter&, std::uint8_t* buf) {
    const pid_t pid = ::fork();
    const std::vector<std::uint8_t> want = pattern(n, seed);
    if (pid == 0) ::_exit(std::equal(want.begin(), want.end(), buf) ? 0 : 1);
    ASSERT_GT(pid, 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child saw other octets";
    EXPECT_TRUE(std::equal(want.begin(), want.end(), buf));
  });
}

// The writer dies before answering (SIGKILL while stopped: its kernel resets the
// connection). The read returned octets that never came: the buffer keeps what it held
// (its own pages go back), a touch waits only for the failure, and the next call reports it.
TEST(DdpZcopyRead, AConnectionThatFailsBeforeTheDataLeavesTheBufferAsItWas) {
  const auto a = read_early();
  ASSERT_TRUE(a) << "the read waited for its data, three times";
  StoppedWriter& w = a->w;
  MappedPages& buf = a->buf;
  ::kill(w.pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(w.pid, &status, 0), w.pid);
  w.pid = -1;
  EXPECT_EQ(buf.p[n - 1], 'Z');  // waits for the failure
  const std::vector<std::uint8_t> want = pattern(n, seed);
  // What was fetched ahead before the stop (4 MiB) did arrive; the rest is as it was.
  const std::size_t ahead = 4 * 1024 * 1024;
  EXPECT_TRUE(std::equal(buf.p, buf.p + ahead, want.begin()));
  EXPECT_EQ(std::count(buf.p + ahead, buf.p + n, 'Z'), static_cast<long>(n - ahead));
  EXPECT_EQ(perms_at(buf.p + n - page), "rw-p");
  char b;
  EXPECT_EQ(::recv(w.srv, &b, 1, 0), -1);
  EXPECT_EQ(errno, ECONNRESET) << std::strerror(errno);
}

// Buffers the landing cannot replace page by page go as a synchronous pull: unaligned
// (its head shares a page) and shared memory. Each waits for its data and gets it all.
void read_waits(std::uint8_t* buf) {
  StoppedWriter w;
  ASSERT_GE(w.srv, 0);
  ASSERT_EQ(set_zcopy_mode(w.srv, ESOCK_ZCOPY_ASYNC), 0);
  w.stop();
  std::thread go = go_on_later(w, 300ms);
  const auto t0 = Clock::now();
  ASSERT_EQ(::recv(w.srv, buf, n, MSG_WAITALL), static_cast<ssize_t>(n));
  EXPECT_GE(Clock::now() - t0, 200ms) << "returned before its data";
  const std::vector<std::uint8_t> want = pattern(n, seed);
  EXPECT_TRUE(std::equal(want.begin(), want.end(), buf));
  go.join();
}

TEST(DdpZcopyRead, AnUnalignedBufferWaitsForItsData) {
  MappedPages buf(n + page);
  read_waits(buf.p + 100);
}

TEST(DdpZcopyRead, SharedMemoryWaitsForItsData) {
  auto* p = static_cast<std::uint8_t*>(
      ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(p, MAP_FAILED);
  read_waits(p);
  ::munmap(p, n);
}

}  // namespace
}  // namespace esock_test
