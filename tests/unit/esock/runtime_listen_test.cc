// Set-up off the accept path (issue 20 item 7, issue 14 item 4; ARCHITECTURE.md): an
// own-stack listener's round (DdpRuntime::service_listener) takes TCP connections from the
// provider and runs their MPA negotiation; only negotiated connections become ready for
// accept(), silent peers are dropped at their deadline, failures are never delivered, and
// everything is bounded. Fake provider connections whose set-up state the test scripts,
// a manual clock, no progress thread.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <deque>
#include <memory>

#include "esock/providers/provider.h"
#include "esock/runtime/runtime.h"

namespace esock::sockets {
namespace {

using namespace std::chrono_literals;

struct Script {
  int state = EINPROGRESS;  // what setup_state() answers
  bool released = false;    // the connection was destroyed
};

class ScriptedConn final : public ProviderConn {
 public:
  explicit ScriptedConn(Script& s) : s_(s) {}
  ~ScriptedConn() override { s_.released = true; }
  rnic::Verbs& verbs() override { std::abort(); }
  const mpa::Negotiated& negotiated() const override { std::abort(); }
  int poll_fd() const override { return -1; }
  short poll_events() const override { return 0; }
  void on_ready(short) override {}
  void flush() override {}
  bool output_pending() const override { return false; }
  TransportState transport_state() const override { return TransportState::open; }
  void shutdown() override {}
  void hold_input(bool on) override { held = on; }
  int name(bool, sockaddr*, socklen_t*) const override { return -1; }
  int setup_state() const override { return s_.state; }
  bool held = false;

 private:
  Script& s_;
};

// TCP connections waiting in the stack's accept queue, in arrival order.
class ScriptedListener final : public ProviderListener {
 public:
  bool pending() const override { return !queue.empty(); }
  std::unique_ptr<ProviderConn> accept(const mpa::Config&) override {
    if (queue.empty()) return nullptr;
    Script* s = queue.front();
    queue.pop_front();
    return std::make_unique<ScriptedConn>(*s);
  }
  int name(sockaddr*, socklen_t*) const override { return 0; }
  std::deque<Script*> queue;
};

class RuntimeListen : public ::testing::Test {
 protected:
  RuntimeListen() : rt(clock) {
    clock.set(Instant{1'000'000'000});
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    sock = std::make_shared<Socket>();
    sock->set_state(Socket::State::listening);
    sock->lis = std::make_unique<StackListen>();
    auto pl = std::make_unique<ScriptedListener>();
    listener = pl.get();
    StackListen& l = *sock->lis;
    l.pl = std::move(pl);
    l.sig_a = sv[0];
    l.sig_l = sv[1];
    l.backlog = 8;
    l.setup_timeout = 1s;
  }
  bool readable() const {
    pollfd p{sock->lis->sig_a, POLLIN, 0};
    return ::poll(&p, 1, 0) == 1;
  }
  void round() { rt.service_listener(*sock); }
  StackListen& lis() { return *sock->lis; }

  // Scripts outlive the socket: its connections write to them when they are destroyed.
  std::deque<Script> scripts;
  Script& script() { return scripts.emplace_back(); }
  ManualClock clock;
  DdpRuntime rt;
  std::shared_ptr<Socket> sock;
  ScriptedListener* listener = nullptr;
};

TEST_F(RuntimeListen, SilentPeersDelayNobodyAndAreDroppedAtTheirDeadline) {
  Script* silent[3] = {&script(), &script(), &script()};
  Script& good = script();
  for (Script* s : silent) listener->queue.push_back(s);
  listener->queue.push_back(&good);  // behind three silent peers
  round();
  EXPECT_EQ(lis().negotiating.size(), 4u);
  EXPECT_FALSE(readable());
  good.state = 0;  // its MPA exchange completed
  round();
  ASSERT_EQ(lis().ready.size(), 1u);
  EXPECT_TRUE(readable());  // accept() returns it at once, whatever the others do
  EXPECT_EQ(lis().negotiating.size(), 3u);
  clock.advance(1s - 1ns);
  round();
  EXPECT_EQ(lis().negotiating.size(), 3u);
  clock.advance(1ns);
  round();
  EXPECT_EQ(lis().negotiating.size(), 0u);
  EXPECT_EQ(lis().setup_timed_out, 3u);
  for (const Script* s : silent) EXPECT_TRUE(s->released);
  EXPECT_FALSE(good.released);
}

TEST_F(RuntimeListen, AFailedNegotiationIsNeverDelivered) {
  Script& refused = script();
  Script& reset = script();
  listener->queue = {&refused, &reset};
  round();
  refused.state = ECONNREFUSED;  // an MPA Reject, or a peer that does not speak MPA
  reset.state = ECONNRESET;
  round();
  EXPECT_TRUE(lis().ready.empty());
  EXPECT_FALSE(readable());
  EXPECT_EQ(lis().setup_failed, 2u);
  EXPECT_TRUE(refused.released && reset.released);
}

TEST_F(RuntimeListen, NegotiationsAreBoundedByTheBacklogAndTheRestWaitInTcp) {
  for (int i = 0; i < 100; ++i) listener->queue.push_back(&script());
  round();
  EXPECT_EQ(lis().negotiating.size(), 8u);  // the backlog
  EXPECT_EQ(listener->queue.size(), 92u);   // still in TCP's accept queue
  for (Script& s : scripts) s.state = 0;
  round();
  EXPECT_EQ(lis().ready.size(), 8u);
  round();  // ready and negotiating together stay within the backlog
  EXPECT_EQ(lis().ready.size() + lis().negotiating.size(), 8u);
  lis().ready.clear();  // the application accepted them
  round();
  round();
  EXPECT_EQ(lis().ready.size(), 8u);
}

TEST_F(RuntimeListen, InputIsHeldUntilTheApplicationAccepts) {
  listener->queue.push_back(&script());
  round();
  ASSERT_EQ(lis().negotiating.size(), 1u);
  EXPECT_TRUE(static_cast<ScriptedConn&>(*lis().negotiating.front().pc).held);
}

}  // namespace
}  // namespace esock::sockets
