// Protection domains in the library API (issue 20, item 5): one rnic::Context serves two
// connections of a process. A peer reaches only the regions of its own connection's PD
// (RFC 5040 section 4.1), so a connection given its own PD (Context::alloc_pd) keeps the
// other connection's exposed regions out of its peer's reach: its Write and its Send with
// Invalidate are refused with a Terminate and the region is untouched. The same two
// operations succeed when both connections share the default PD (verbs semantics), which
// is what makes the test able to fail.
#include <gtest/gtest.h>

#include <vector>

#include "segment_link.h"

namespace esock::rnic::testing {
namespace {

EngineConfig config(bool initiator, std::uint32_t pd = 0) {
  EngineConfig c = engine_config(initiator, mpa::Policy::allow, mpa::Policy::require);
  c.qp.pd = pd;
  return c;
}

// A client of its own, and a server connection on the shared server context.
struct Connection {
  Connection(Context& server, std::uint32_t server_pd)
      : client(config(true)), server_side(config(false, server_pd), &server), link(3) {
    client.engine.start();
    server_side.engine.start();
    link.deliver_in_order(client, server_side, false);
    link.deliver_in_order(server_side, client, false);
  }
  // Each side's octets to the other, and what the server frames in answer (a Terminate).
  void deliver() {
    link.deliver_in_order(client, server_side, false);
    server_side.engine.transmit();
    link.deliver_in_order(server_side, client, false);
  }
  Side client, server_side;
  Link link;
};

struct TwoConnections : ::testing::TestWithParam<bool> {
  // Param: the second connection has its own PD.
  Context server;
  std::uint32_t second_pd = GetParam() ? server.alloc_pd() : 0;
  Connection first{server, 0};
  Connection second{server, second_pd};
  // A region the first connection's peer was given (remote write), in the default PD.
  std::vector<std::uint8_t> exposed = std::vector<std::uint8_t>(4096, 0);
  ddp::stag_t exposed_stag =
      server.reg_mr(exposed.data(), exposed.size(), ddp::access_remote_write);

  void SetUp() override {
    ASSERT_EQ(first.server_side.engine.state(), Engine::State::established);
    ASSERT_EQ(second.server_side.engine.state(), Engine::State::established);
    ASSERT_NE(exposed_stag, 0u);
  }
  bool exposed_valid() {
    return server.stags().check(exposed_stag, server.pd(), ddp::access_remote_write,
                                reinterpret_cast<std::uintptr_t>(exposed.data()), 1,
                                nullptr) == ddp::StagTable::Check::ok;
  }
};

TEST_P(TwoConnections, AnotherConnectionsPeerCannotWriteIntoItsRegionsUnlessThePdIsShared) {
  std::vector<std::uint8_t> src(512, 0xab);
  Side& peer = second.client;
  const ddp::Sge s{src.data(), 512, peer.ctx.reg_mr(src.data(), src.size(), 0)};
  ASSERT_EQ(peer.engine.post_write(1, {&s, 1}, exposed_stag,
                                   reinterpret_cast<std::uint64_t>(exposed.data())),
            0);
  second.deliver();
  const bool own_pd = GetParam();
  EXPECT_EQ(exposed[0], own_pd ? 0 : 0xab);
  EXPECT_EQ(second.server_side.engine.terminated(), own_pd);
  if (own_pd) {
    ASSERT_TRUE(second.server_side.engine.qp().terminate_cause().has_value());
    EXPECT_EQ(second.server_side.engine.qp().terminate_cause()->layer, ddp::term::layer_ddp);
  }
  EXPECT_EQ(first.server_side.engine.state(), Engine::State::established);
}

TEST_P(TwoConnections, AnotherConnectionsPeerCannotInvalidateItsRegionsUnlessThePdIsShared) {
  std::vector<std::uint8_t> rx(64);
  Side& srv = second.server_side;
  const ddp::Sge r{rx.data(), 64,
                   server.reg_mr(second_pd != 0 ? second_pd : server.pd(), rx.data(), rx.size(),
                                 ddp::access_local_write)};
  ASSERT_NE(r.lkey, 0u);
  ASSERT_EQ(srv.engine.post_recv(7, {&r, 1}), 0);
  ASSERT_EQ(second.client.engine.post_send(1, {}, false, exposed_stag), 0);
  second.deliver();
  const bool own_pd = GetParam();
  EXPECT_EQ(exposed_valid(), own_pd);
  EXPECT_EQ(srv.engine.terminated(), own_pd);
  if (own_pd) {
    ASSERT_TRUE(srv.engine.qp().terminate_cause().has_value());
    EXPECT_EQ(*srv.engine.qp().terminate_cause(), ddp::term::rdmap_prot_cannot_invalidate);
  }
}

TEST_P(TwoConnections, EachPeerStillReachesItsOwnConnectionsRegions) {
  const std::uint32_t pd = second_pd != 0 ? second_pd : server.pd();
  std::vector<std::uint8_t> mine(256, 0), src(256, 0x5c);
  const ddp::stag_t k = server.reg_mr(pd, mine.data(), mine.size(), ddp::access_remote_write);
  ASSERT_NE(k, 0u);
  Side& peer = second.client;
  const ddp::Sge s{src.data(), 256, peer.ctx.reg_mr(src.data(), src.size(), 0)};
  ASSERT_EQ(peer.engine.post_write(1, {&s, 1}, k, reinterpret_cast<std::uint64_t>(mine.data())), 0);
  second.deliver();
  EXPECT_EQ(mine, src);
  EXPECT_FALSE(second.server_side.engine.terminated());
}

INSTANTIATE_TEST_SUITE_P(Pd, TwoConnections, ::testing::Bool(),
                         [](const auto& p) { return std::string(p.param ? "OwnPd" : "SharedPd"); });

}  // namespace
}  // namespace esock::rnic::testing
