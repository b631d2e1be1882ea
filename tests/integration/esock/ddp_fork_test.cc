// fork and DDPMODE connections over ksock (docs/sockets.md, "fork"; runtime/fork_handover.h):
// a forking server's child serves the connection its parent closed, with every octet the
// peer sent before, during and after the fork; a parent that goes on using a connection
// keeps it and its child's copy is orphaned.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "ddp_helpers.h"

using namespace esock_test;

namespace {

// The child's side of a forking echo server: reads `n` octets, sends them back upper-cased,
// closes. With poll_first it waits in poll(2), which esock does not see, before reading.
[[noreturn]] void serve_upper(int fd, std::size_t n, bool poll_first) {
  std::string got(n, '\0');
  if (poll_first) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 10000) != 1) ::_exit(2);
  }
  if (!read_all(fd, reinterpret_cast<std::uint8_t*>(got.data()), n)) ::_exit(3);
  for (char& c : got) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (!write_all(fd, reinterpret_cast<const std::uint8_t*>(got.data()), n)) ::_exit(4);
  ::_exit(::close(fd) == 0 ? 0 : 5);
}

std::string read_n(int fd, std::size_t n) {
  std::string s(n, '\0');
  if (!read_all(fd, reinterpret_cast<std::uint8_t*>(s.data()), n)) return "<short>";
  return s;
}

int exit_code(pid_t pid) {
  int st = 0;
  if (::waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) return -1;
  return WEXITSTATUS(st);
}

void forking_server_child_serves(bool poll_first) {
  DdpPair p;
  ASSERT_GE(p.srv, 0);
  // Octets the server has not read when it forks: the child must get them.
  ASSERT_EQ(::write(p.cli, "before-", 7), 7);
  const pid_t child = ::fork();
  if (child == 0) serve_upper(p.srv, 7 + 6 + 5, poll_first);
  // The parent writes on the client (so keeps it) while its server copy rests, then closes
  // the server copy as a forking server does, then writes more.
  ASSERT_EQ(::write(p.cli, "during", 6), 6);
  ASSERT_EQ(::close(p.srv), 0);
  p.srv = -1;
  ASSERT_EQ(::write(p.cli, "-afte", 5), 5);
  EXPECT_EQ(read_n(p.cli, 18), "BEFORE-DURING-AFTE");
  char b[4];
  EXPECT_EQ(::read(p.cli, b, sizeof b), 0);  // the child's close: FIN
  EXPECT_EQ(exit_code(child), 0);
}

TEST(DdpFork, AForkingServersChildServesTheConnectionItsParentClosed) {
  forking_server_child_serves(false);
}

TEST(DdpFork, AChildThatWaitsInPollIsHandedTheConnectionByItsProgressThread) {
  forking_server_child_serves(true);
}

TEST(DdpFork, AParentThatGoesOnUsingTheConnectionKeepsItAndTheChildCopyIsOrphaned) {
  DdpPair p;
  ASSERT_GE(p.srv, 0);
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    char c;
    if (::read(ready[0], &c, 1) != 1) ::_exit(2);  // after the parent used its copy
    char b[4];
    const bool read_fails = ::read(p.srv, b, 4) == -1 && errno == ENOTCONN;
    const bool write_fails = ::write(p.srv, "x", 1) == -1 && errno == ENOTCONN;
    ::_exit(read_fails && write_fails && ::close(p.srv) == 0 ? 0 : 1);
  }
  ASSERT_EQ(::write(p.srv, "kept", 4), 4);  // the parent's first use keeps it
  ASSERT_EQ(::write(ready[1], "g", 1), 1);
  EXPECT_EQ(exit_code(child), 0);
  EXPECT_EQ(read_n(p.cli, 4), "kept");
  ASSERT_EQ(::write(p.cli, "still", 5), 5);
  EXPECT_EQ(read_n(p.srv, 5), "still");  // the child's close did not end it
  ::close(ready[0]);
  ::close(ready[1]);
}

TEST(DdpFork, AGrandchildNeverTakesItsParentsConnection) {
  DdpPair p;
  ASSERT_GE(p.srv, 0);
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    // The child forks before its parent decides; the grandchild's copy is orphaned even
    // though the grandparent gives the connection up.
    const pid_t grandchild = ::fork();
    if (grandchild == 0) {
      char b[4];
      ::_exit(::read(p.srv, b, 4) == -1 && errno == ENOTCONN ? 0 : 1);
    }
    char c;
    if (::read(go[0], &c, 1) != 1) ::_exit(2);
    const int g = exit_code(grandchild);
    if (g != 0) ::_exit(10 + g);
    serve_upper(p.srv, 3, false);
  }
  ASSERT_EQ(::close(p.srv), 0);
  p.srv = -1;
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  ASSERT_EQ(::write(p.cli, "abc", 3), 3);
  EXPECT_EQ(read_n(p.cli, 3), "ABC");
  EXPECT_EQ(exit_code(child), 0);
  ::close(go[0]);
  ::close(go[1]);
}

// Pre-forking servers (apache prefork, nginx workers): the parent listens and forks, the
// children accept on the listener they inherited, the parent never does. Every connection
// reaches a child whichever process's runtime set it up (runtime/listen_queue.h).
TEST(DdpFork, PreforkedChildrenAcceptOnTheListenerTheyInherited) {
  std::uint16_t port = 0;
  const int lfd = ddp_listener(&port);
  ASSERT_GE(lfd, 0);
  constexpr int children = 2, per_child = 3;
  pid_t pid[children];
  for (pid_t& p : pid) {
    p = ::fork();
    if (p == 0) {
      for (int i = 0; i < per_child; ++i) {
        const int c = ::accept(lfd, nullptr, nullptr);
        if (c < 0) ::_exit(10 + errno);
        char b[8];
        if (!read_all(c, reinterpret_cast<std::uint8_t*>(b), 4)) ::_exit(3);
        b[0] = 'C';  // the child's mark
        if (!write_all(c, reinterpret_cast<const std::uint8_t*>(b), 4)) ::_exit(4);
        ::close(c);
      }
      ::_exit(0);
    }
  }
  for (int i = 0; i < children * per_child; ++i) {
    const int c = ddp_connect(port);
    ASSERT_GE(c, 0) << "connection " << i;
    char msg[5];
    std::snprintf(msg, sizeof msg, "p%03d", i);
    ASSERT_EQ(::write(c, msg, 4), 4);
    msg[0] = 'C';
    EXPECT_EQ(read_n(c, 4), std::string(msg, 4)) << "connection " << i;
    ::close(c);
  }
  for (pid_t p : pid) EXPECT_EQ(exit_code(p), 0);
  ::close(lfd);
}

// A forking server's shape on the shared accept queue (socat fork): the parent keeps
// accepting, and gets every connection, while each child it forked closes its copy of the
// listener and lives on a while. (A regression guard for the queue path across forks; it
// passed before the queue too, and does not show the dormancy of a child's copy, whose
// effect is a connection dropped mid-negotiation by a child that takes one and exits.)
TEST(DdpFork, AForkingServerKeepsAcceptingWhileItsChildrenCloseTheirListenerCopies) {
  std::uint16_t port = 0;
  const int lfd = ddp_listener(&port);
  ASSERT_GE(lfd, 0);
  for (int i = 0; i < 3; ++i) {
    const pid_t child = ::fork();
    if (child == 0) {
      ::close(lfd);
      ::usleep(200 * 1000);  // lives on a while, as a serving child does
      ::_exit(0);
    }
    std::thread t([&] {
      const int c = ddp_connect(port);
      EXPECT_GE(c, 0);
      EXPECT_EQ(::write(c, "hey!", 4), 4);
      ::close(c);
    });
    const int a = ::accept(lfd, nullptr, nullptr);
    ASSERT_GE(a, 0);
    EXPECT_EQ(read_n(a, 4), "hey!");
    ::close(a);
    t.join();
    EXPECT_EQ(exit_code(child), 0);
  }
  ::close(lfd);
}

// Event-driven pre-forked workers (nginx's shape): each adds the listener it inherited to an
// epoll set and accepts only once it polls readable, and the parent closes its own copy.
// Before, the workers' copies stayed dormant until an accept, nobody took the connection
// from the kernel, and the server hung.
TEST(DdpFork, EpollWorkersServeAfterTheParentClosedItsListener) {
  std::uint16_t port = 0;
  const int lfd = ddp_listener(&port);
  ASSERT_GE(lfd, 0);
  const pid_t child = ::fork();
  if (child == 0) {
    const int ep = ::epoll_create1(EPOLL_CLOEXEC);
    epoll_event ev{};
    ev.events = EPOLLIN;
    if (::epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) != 0) ::_exit(1);
    epoll_event got{};
    if (::epoll_wait(ep, &got, 1, 10000) != 1) ::_exit(2);
    const int c = ::accept(lfd, nullptr, nullptr);
    if (c < 0) ::_exit(3);
    serve_upper(c, 4, false);
  }
  ASSERT_GT(child, 0);
  ::close(lfd);  // only the worker's copy is left
  const int cli = ddp_connect(port);
  ASSERT_GE(cli, 0) << std::strerror(errno);
  ASSERT_EQ(::write(cli, "epol", 4), 4);
  EXPECT_EQ(read_n(cli, 4), "EPOL");
  ::close(cli);
  EXPECT_EQ(exit_code(child), 0);
}

}  // namespace
