// Which sockets a round looks at (lib/esock/runtime/progress.cc, service_all) with an own
// stack whose connections report their activity (ProviderConn::reports_activity, as the
// dpdk provider's do): between full passes only those whose transport named itself since
// the last round, and a full pass, every connection, once per full_service_every per 100
// sockets. A fake stack and fake transports that count the runtime's looks (take_activity)
// under real ESTP engines joined in memory (estp_harness.h; a full pass services each); a
// manual clock; inline mode, so no progress thread runs and the test's rounds are the only
// ones.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "base/time.h"
#include "esock/providers/provider.h"
#include "esock/runtime/runtime.h"
#include "estp_harness.h"

namespace esock::sockets {
namespace {

using namespace std::chrono_literals;

class IdleStack final : public Provider {
 public:
  const char* name() const override { return "idle"; }
  bool own_stack() const override { return true; }
  bool poll_once() override { return false; }
};

// A connection whose transport never has anything for the runtime (take_activity false,
// so a look at it services nothing) unless the test pokes it.
class CountingConn final : public ProviderConn {
 public:
  rnic::Verbs& verbs() override { std::abort(); }
  const mpa::Negotiated& negotiated() const override { std::abort(); }
  int poll_fd() const override { return -1; }
  short poll_events() const override { return 0; }
  void on_ready(short) override {}
  void flush() override {}
  bool take_activity() override {
    ++looks;
    return false;
  }
  bool reports_activity() const override { return true; }
  bool output_pending() const override { return false; }
  TransportState transport_state() const override { return TransportState::open; }
  void shutdown() override {}
  void hold_input(bool) override {}
  int name(bool, sockaddr*, socklen_t*) const override { return -1; }
  // The transport did something (a segment arrived): the runtime hears of it.
  void poke() { activity(); }

  int looks = 0;
};

class RuntimeRoundsTest : public ::testing::Test {
 protected:
  ManualClock clock;
  IdleStack stack;
  RuntimeRoundsTest() : rt(clock) {
    clock.set(Instant{1'000'000'000});
    rt.set_progress(ProgressMode::inline_only, 0us, 2000us);
    std::string why;
    EXPECT_EQ(rt.use_stack(stack, &why), 0) << why;
  }
  void hold(int n) {
    for (int i = 0; i < n; ++i) {
      auto s = std::make_shared<Socket>();
      s->set_state(Socket::State::connected);
      s->conn = std::make_unique<Conn>();
      auto pair = std::make_unique<estp::testing::Pair>(estp::Params{}, estp::Params{}, i);
      ASSERT_TRUE(pair->connect());
      s->conn->stream = std::move(pair->a.stream);
      pairs.push_back(std::move(pair));
      auto pc = std::make_unique<CountingConn>();
      conns.push_back(pc.get());
      s->conn->pc = std::move(pc);
      std::unique_lock lk(rt.mu);
      rt.add(s);
      socks.push_back(std::move(s));
    }
  }
  void round() {
    std::unique_lock lk(rt.mu);
    rt.round();
  }
  ~RuntimeRoundsTest() override {
    std::unique_lock lk(rt.mu);
    for (auto& s : socks) s->conn.reset();  // (before their engines' pairs go)
  }
  int looks() const {
    int n = 0;
    for (const CountingConn* c : conns) n += c ? c->looks : 0;
    return n;
  }
  void forget_looks() {
    for (CountingConn* c : conns)
      if (c) c->looks = 0;
  }

  DdpRuntime rt;
  std::vector<std::unique_ptr<estp::testing::Pair>> pairs;  // (outlive the sockets)
  std::vector<std::shared_ptr<Socket>> socks;
  std::vector<CountingConn*> conns;
};

TEST_F(RuntimeRoundsTest, IdleConnectionsAreLookedAtOnlyOnTheFullPass) {
  hold(300);
  round();  // the first round is a full pass (and looks at the new ones anyway)
  forget_looks();
  // 300 sockets: a full pass every 30 ms (full_pass_period). Rounds within them look at
  // no idle connection.
  static_assert(full_pass_period(1ms, 300) == 30ms);
  for (int i = 0; i < 100; ++i) round();
  clock.advance(29ms);
  for (int i = 0; i < 100; ++i) round();
  EXPECT_EQ(looks(), 0);
  clock.advance(1ms);
  round();
  EXPECT_EQ(looks(), 300);                                     // the full pass: each once
  for (const CountingConn* c : conns) EXPECT_EQ(c->looks, 1);  // (none released here)
}

TEST_F(RuntimeRoundsTest, AConnectionWhoseTransportReportsActivityIsLookedAtInTheNextRound) {
  hold(300);
  round();
  forget_looks();
  conns[7]->poke();
  conns[7]->poke();  // twice before the round: looked at once
  conns[250]->poke();
  round();
  EXPECT_EQ(conns[7]->looks, 1);
  EXPECT_EQ(conns[250]->looks, 1);
  EXPECT_EQ(looks(), 2);
  round();  // nothing new
  EXPECT_EQ(looks(), 2);
}

TEST_F(RuntimeRoundsTest, OwnWorkKeepsAConnectionLookedAtEveryRound) {
  hold(200);
  round();
  forget_looks();
  // A close under way (close_ladder.h: its FIN sent, the peer's awaited for 1 s): looked at
  // every round until it is released, then never again.
  {
    std::unique_lock lk(rt.mu);
    rt.close(socks[3]);
  }
  for (int i = 0; i < 5; ++i) round();
  EXPECT_EQ(conns[3]->looks, 5);
  EXPECT_EQ(looks(), 5);
  clock.advance(1s);  // (also past the full-pass period: everyone is looked at once)
  round();
  EXPECT_FALSE(socks[3]->conn->pc) << "released at the end of the FIN wait";
  conns[3] = nullptr;  // (gone with it)
  forget_looks();
  clock.advance(1ms);
  for (int i = 0; i < 5; ++i) round();
  EXPECT_EQ(looks(), 0);
}

}  // namespace
}  // namespace esock::sockets
