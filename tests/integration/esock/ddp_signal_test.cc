// Signals and blocking DDPMODE calls over ksock (docs/sockets.md, "Signals"): a handler
// installed without SA_RESTART interrupts a blocked read, write or accept with EINTR, as
// the kernel does (signal(7)); with SA_RESTART the call goes on and completes.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "ddp_helpers.h"

using namespace esock_test;

namespace {

std::atomic<int> handled{0};

struct Handler {
  explicit Handler(int flags) {
    struct sigaction sa {};
    sa.sa_handler = [](int) { handled.fetch_add(1); };
    sa.sa_flags = flags;
    ::sigemptyset(&sa.sa_mask);
    ::sigaction(SIGUSR1, &sa, &old);
  }
  ~Handler() { ::sigaction(SIGUSR1, &old, nullptr); }
  struct sigaction old {};
};

// Runs call() in a thread and signals that thread every 5 ms until it returns or `for_ms`
// passed (then unblock() ends the call); whether it returned in time, its result and errno.
struct Outcome {
  bool in_time;
  long rc;
  int err;
};
Outcome signal_while_blocked(const std::function<long()>& call, int for_ms,
                             const std::function<void()>& unblock) {
  std::atomic<bool> done{false};
  Outcome out{false, 0, 0};
  std::thread t([&] {
    out.rc = call();
    out.err = errno;
    done = true;
  });
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(for_ms);
  while (!done && std::chrono::steady_clock::now() < end) {
    ::pthread_kill(t.native_handle(), SIGUSR1);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  out.in_time = done;
  if (!done) unblock();
  t.join();
  return out;
}

TEST(DdpSignal, AHandlerWithoutSaRestartInterruptsABlockedReadAndAccept) {
  Handler h(0);
  DdpPair p;
  ASSERT_GE(p.srv, 0);
  char b[8];
  const Outcome r = signal_while_blocked([&] { return ::read(p.srv, b, sizeof b); }, 5000,
                                         [&] { (void)::write(p.cli, "x", 1); });
  ASSERT_TRUE(r.in_time);
  EXPECT_EQ(r.rc, -1);
  EXPECT_EQ(r.err, EINTR);
  const Outcome a = signal_while_blocked(
      [&] { return long{::accept(p.lfd, nullptr, nullptr)}; }, 5000,
      [&] { ::close(ddp_connect(p.port)); });  // only when accept was not interrupted
  ASSERT_TRUE(a.in_time);
  EXPECT_EQ(a.rc, -1);
  EXPECT_EQ(a.err, EINTR);
  // Nothing was lost: the stream still works.
  ASSERT_EQ(::write(p.cli, "after", 5), 5);
  EXPECT_EQ(::read(p.srv, b, sizeof b), 5);
}

TEST(DdpSignal, WithSaRestartABlockedReadGoesOnAndGetsTheData) {
  Handler h(SA_RESTART);
  DdpPair p;
  ASSERT_GE(p.srv, 0);
  char b[8] = {};
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // after many signals
    (void)::write(p.cli, "late", 4);
  });
  const int before = handled.load();
  const Outcome r = signal_while_blocked([&] { return ::read(p.srv, b, sizeof b); }, 5000,
                                         [&] { (void)::write(p.cli, "x", 1); });
  writer.join();
  ASSERT_TRUE(r.in_time);
  EXPECT_EQ(r.rc, 4);
  // The handler ran (ThreadSanitizer folds the pending signals into one delivery), and the
  // read went on instead of failing.
  EXPECT_GE(handled.load() - before, 1);
}

// accept on a ksock listener waits in poll(2) (the family's accept queue), which the kernel
// never restarts: esock restarts it when every installed handler says SA_RESTART, as the
// kernel would restart accept itself.
TEST(DdpSignal, WithSaRestartABlockedAcceptGoesOnAndTakesTheConnection) {
  Handler h(SA_RESTART);
  std::uint16_t port = 0;
  const int lfd = ddp_listener(&port);
  ASSERT_GE(lfd, 0);
  int cli = -1;
  std::thread client([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // after many signals
    cli = ddp_connect(port);
  });
  const int before = handled.load();
  const Outcome a = signal_while_blocked([&] { return long{::accept(lfd, nullptr, nullptr)}; },
                                         5000, [&] { ::close(ddp_connect(port)); });
  client.join();
  ASSERT_TRUE(a.in_time);
  EXPECT_GE(a.rc, 0) << std::strerror(a.err);
  EXPECT_GE(handled.load() - before, 1);
  if (a.rc >= 0) ::close(static_cast<int>(a.rc));
  ::close(cli);
  ::close(lfd);
}

// A blocking connect waits for MPA interruptibly: a signal ends it with EINTR while the
// set-up goes on, and connect() again waits for that same set-up (EALREADY only on a
// non-blocking socket), as Linux's does. The peer is a kernel listener that never speaks.
TEST(DdpSignal, ABlockingConnectInterruptedWaitsAgainWhenCalledAgain) {
  Handler h(0);
  const int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t l = sizeof a;
  ASSERT_EQ(::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(lfd, 4), 0);
  ASSERT_EQ(::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &l), 0);
  const int fd = ddp_socket();
  ASSERT_GE(fd, 0);
  const auto call = [&] {
    return long{::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a)};
  };
  for (int i = 0; i < 2; ++i) {
    const Outcome c = signal_while_blocked(call, 5000, [] {});
    ASSERT_TRUE(c.in_time) << "connect " << i;
    EXPECT_EQ(c.rc, -1) << "connect " << i;
    EXPECT_EQ(c.err, EINTR) << "connect " << i;  // not EALREADY the second time
  }
  ::close(fd);
  ::close(lfd);
}

}  // namespace

// A large blocking read offers its buffer to the writer (SINKAVAIL, docs/stream-protocol.md
// section 6.2). A signal without SA_RESTART cancels the sink: the read fails with EINTR
// once the writer answered, and a write that comes later is read whole, in order.
TEST(DdpSignal, AnInterruptedLargeReadWithdrawsItsSinkAndLosesNothing) {
  Handler h(0);
  DdpPair p;
  ASSERT_GE(p.srv, 0);
  std::vector<std::uint8_t> in(1 << 20);
  const Outcome r = signal_while_blocked([&] { return ::read(p.srv, in.data(), in.size()); }, 5000,
                                         [&] { (void)::write(p.cli, "x", 1); });
  ASSERT_TRUE(r.in_time);
  EXPECT_EQ(r.rc, -1);
  EXPECT_EQ(r.err, EINTR);
  const auto v = pattern(1 << 20, 9);
  std::thread writer([&] { EXPECT_TRUE(write_all(p.cli, v.data(), v.size())); });
  ASSERT_TRUE(read_all(p.srv, in.data(), in.size()));
  writer.join();
  EXPECT_EQ(in, v);
}
