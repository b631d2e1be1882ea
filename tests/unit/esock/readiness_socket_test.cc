// A connection's readiness as one AF_UNIX datagram socket (process/readiness_socket.h):
// every state a TCP socket polls in, seen by poll, level- and edge-triggered epoll and a
// poll blocked in another thread, and one descriptor per connection.
#include "esock/process/readiness_socket.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dirent.h>
#include <algorithm>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

namespace esock::sockets {
namespace {

short revents(int fd) {
  pollfd p{fd, POLLIN | POLLOUT | POLLRDHUP, 0};
  return ::poll(&p, 1, 0) == 1 ? p.revents : 0;
}

struct Signal {
  ReadinessHub* hub = ReadinessHub::process();
  ReadinessState st;
  int fd = -1;
  Signal() {
    if (hub != nullptr) fd = hub->create(&st);
  }
  ~Signal() {
    if (fd >= 0) ::close(fd);
  }
};

int open_descriptors() {
  int n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (const dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
    ::closedir(d);
  }
  return n;
}

TEST(ReadinessSocket, AFreshOneIsASocketThatPollsWritableOnly) {
  Signal s;
  ASSERT_NE(s.hub, nullptr);
  ASSERT_GE(s.fd, 0);
  struct stat sb {};
  ASSERT_EQ(::fstat(s.fd, &sb), 0);
  EXPECT_TRUE(S_ISSOCK(sb.st_mode));
  EXPECT_EQ(revents(s.fd), POLLOUT);
}

TEST(ReadinessSocket, AStrangersDatagramIsTakenOffByTakeStray) {
  // The names are abstract: any process of the network namespace can send to them.
  Signal s;
  ASSERT_GE(s.fd, 0);
  const int stranger = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(
      ::sendto(stranger, "x", 1, 0, reinterpret_cast<const sockaddr*>(&s.st.name), s.st.name_len),
      1);
  EXPECT_EQ(revents(s.fd), POLLIN | POLLOUT);
  ReadinessHub::take_stray(s.fd);
  EXPECT_EQ(revents(s.fd), POLLOUT);
  ::close(stranger);
}

TEST(ReadinessSocket, EveryCombinationOfReadableAndWritable) {
  Signal s;
  ASSERT_GE(s.fd, 0);
  for (const bool r : {false, true, false, true})
    for (const bool w : {true, false, true, false}) {
      ASSERT_TRUE(s.hub->set_readable(s.fd, s.st, r));
      ASSERT_TRUE(s.hub->set_writable(s.fd, s.st, w));
      EXPECT_EQ(revents(s.fd), (r ? POLLIN : 0) | (w ? POLLOUT : 0)) << "r " << r << " w " << w;
    }
}

TEST(ReadinessSocket, EndOfStreamHangUpAndError) {
  Signal s;
  ASSERT_GE(s.fd, 0);
  ASSERT_TRUE(s.hub->set_writable(s.fd, s.st, false));
  ASSERT_TRUE(ReadinessHub::end_of_stream(s.fd));
  EXPECT_EQ(revents(s.fd), POLLIN | POLLRDHUP);  // a peer's FIN
  ASSERT_TRUE(s.hub->fail(s.fd, s.st));
  EXPECT_EQ(revents(s.fd), POLLIN | POLLRDHUP | POLLOUT | POLLERR);
  ASSERT_TRUE(ReadinessHub::hang_up(s.fd));
  EXPECT_EQ(revents(s.fd), POLLIN | POLLRDHUP | POLLOUT | POLLERR | POLLHUP);  // a reset
  int err = 0;
  socklen_t len = sizeof err;
  ASSERT_EQ(::getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &len), 0);
  EXPECT_EQ(err, ECONNRESET);
  EXPECT_EQ(revents(s.fd), POLLIN | POLLRDHUP | POLLOUT | POLLHUP);  // read once, as TCP's
}

// After the end of stream a readable socket stays readable through the other transitions;
// a reset is the last transition: its POLLERR, and the readability it found, stay.
TEST(ReadinessSocket, TransitionsAfterTheEndOfStreamAndAReset) {
  Signal s;
  ASSERT_GE(s.fd, 0);
  ASSERT_TRUE(s.hub->set_readable(s.fd, s.st, true));
  ASSERT_TRUE(s.hub->set_writable(s.fd, s.st, false));
  ASSERT_TRUE(ReadinessHub::end_of_stream(s.fd));
  EXPECT_TRUE(s.hub->set_writable(s.fd, s.st, true));
  EXPECT_EQ(revents(s.fd), POLLIN | POLLRDHUP | POLLOUT);
  EXPECT_TRUE(s.hub->set_writable(s.fd, s.st, false));
  EXPECT_TRUE(s.hub->fail(s.fd, s.st));
  EXPECT_EQ(revents(s.fd), POLLIN | POLLRDHUP | POLLOUT | POLLERR);
  Signal t;  // readable and blocked, without the end of stream
  ASSERT_GE(t.fd, 0);
  ASSERT_TRUE(t.hub->set_readable(t.fd, t.st, true));
  ASSERT_TRUE(t.hub->set_writable(t.fd, t.st, false));
  ASSERT_TRUE(t.hub->fail(t.fd, t.st));
  EXPECT_EQ(revents(t.fd), POLLIN | POLLOUT | POLLERR);
  EXPECT_TRUE(t.hub->set_readable(t.fd, t.st, false));  // frozen: nothing changes
  EXPECT_TRUE(t.hub->set_writable(t.fd, t.st, false));
  EXPECT_EQ(revents(t.fd), POLLIN | POLLOUT | POLLERR);
}

TEST(ReadinessSocket, EdgeTriggeredEpollSeesEachRisingEdge) {
  Signal s;
  ASSERT_GE(s.fd, 0);
  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  ASSERT_GE(ep, 0);
  ASSERT_TRUE(s.hub->set_writable(s.fd, s.st, false));
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT | EPOLLET;
  ASSERT_EQ(::epoll_ctl(ep, EPOLL_CTL_ADD, s.fd, &ev), 0);
  epoll_event got{};
  EXPECT_EQ(::epoll_wait(ep, &got, 1, 0), 0);
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(s.hub->set_writable(s.fd, s.st, true));
    ASSERT_EQ(::epoll_wait(ep, &got, 1, 0), 1) << round;
    EXPECT_EQ(got.events, static_cast<unsigned>(EPOLLOUT));
    EXPECT_EQ(::epoll_wait(ep, &got, 1, 0), 0);  // an edge is reported once
    ASSERT_TRUE(s.hub->set_readable(s.fd, s.st, true));
    ASSERT_EQ(::epoll_wait(ep, &got, 1, 0), 1);
    EXPECT_EQ(got.events, static_cast<unsigned>(EPOLLIN | EPOLLOUT));
    ASSERT_TRUE(s.hub->set_readable(s.fd, s.st, false));
    ASSERT_TRUE(s.hub->set_writable(s.fd, s.st, false));
    EXPECT_EQ(::epoll_wait(ep, &got, 1, 0), 0);
  }
  ::close(ep);
}

TEST(ReadinessSocket, LevelTriggeredEpollFollowsTheState) {
  Signal s;
  ASSERT_GE(s.fd, 0);
  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  ASSERT_GE(ep, 0);
  epoll_event ev{};
  ev.events = EPOLLOUT;  // a writer waiting for room only
  ASSERT_EQ(::epoll_ctl(ep, EPOLL_CTL_ADD, s.fd, &ev), 0);
  epoll_event got{};
  EXPECT_EQ(::epoll_wait(ep, &got, 1, 0), 1);
  ASSERT_TRUE(s.hub->set_writable(s.fd, s.st, false));
  EXPECT_EQ(::epoll_wait(ep, &got, 1, 0), 0);
  ASSERT_TRUE(s.hub->set_readable(s.fd, s.st, true));  // not what it waits for
  EXPECT_EQ(::epoll_wait(ep, &got, 1, 0), 0);
  ASSERT_TRUE(s.hub->set_writable(s.fd, s.st, true));
  EXPECT_EQ(::epoll_wait(ep, &got, 1, 0), 1);
  ::close(ep);
}

// A writer blocked in poll (and a reader) wake when the state rises, not at their timeout.
TEST(ReadinessSocket, ABlockedPollWakesWhenTheStateRises) {
  Signal s;
  ASSERT_GE(s.fd, 0);
  ASSERT_TRUE(s.hub->set_writable(s.fd, s.st, false));
  for (const short want : {short{POLLOUT}, short{POLLIN}}) {
    auto waited = std::async(std::launch::async, [&] {
      pollfd p{s.fd, want, 0};
      const auto t0 = std::chrono::steady_clock::now();
      const int r = ::poll(&p, 1, 10000);
      return std::make_pair(r == 1 ? p.revents : 0, std::chrono::steady_clock::now() - t0);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (want == POLLOUT)
      ASSERT_TRUE(s.hub->set_writable(s.fd, s.st, true));
    else
      ASSERT_TRUE(s.hub->set_readable(s.fd, s.st, true));
    const auto [ev, took] = waited.get();
    EXPECT_TRUE(ev & want);
    EXPECT_LT(took, std::chrono::seconds(5));
  }
}

// One descriptor per connection (the hub's two are the process's, made once): 10,000
// connections' readiness fits where this machine's hard limit is 20,000 descriptors.
TEST(ReadinessSocket, TenThousandConnectionsTakeTenThousandDescriptors) {
  constexpr int n = 10000;
  rlimit rl{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &rl), 0);
  if (rl.rlim_cur < n + 100) {
    rl.rlim_cur = std::min<rlim_t>(rl.rlim_max, n + 100);
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
  if (rl.rlim_cur < n + 100) GTEST_SKIP() << "RLIMIT_NOFILE " << rl.rlim_cur;
  ASSERT_NE(ReadinessHub::process(), nullptr);
  const int before = open_descriptors();
  std::vector<Signal> many(n);
  EXPECT_EQ(open_descriptors() - before, n);
  int readable = 0, writable = 0;
  for (int i = 0; i < n; ++i) {
    ASSERT_GE(many[i].fd, 0);
    ASSERT_TRUE(many[i].hub->set_readable(many[i].fd, many[i].st, i % 2 == 0));
    ASSERT_TRUE(many[i].hub->set_writable(many[i].fd, many[i].st, i % 3 == 0));
  }
  for (int i = 0; i < n; ++i) {
    const short ev = revents(many[i].fd);
    readable += (ev & POLLIN) != 0;
    writable += (ev & POLLOUT) != 0;
    ASSERT_EQ(ev, (i % 2 == 0 ? POLLIN : 0) | (i % 3 == 0 ? POLLOUT : 0)) << i;
  }
  EXPECT_EQ(readable, n / 2);
  EXPECT_EQ(writable, (n + 2) / 3);
}

}  // namespace
}  // namespace esock::sockets
