// The kernel-socket transport end to end: a server thread and a client over 127.0.0.1,
// each with its own context (its own STags), exchanging Send, RDMA Write and RDMA Read with
// every byte checked; MPA rejection, refused connections and peer close.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "esock/ksock/endpoint.h"

namespace esock::ksock {
namespace {

constexpr int kTimeout = 10000;

std::vector<std::uint8_t> pattern(std::size_t n, std::uint8_t seed) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(seed ^ (i * 13 + (i >> 8)));
  return v;
}

Options options(bool markers, bool crc, std::uint8_t rev) {
  Options o;
  o.mpa.revision = rev;
  o.mpa.markers = markers ? mpa::Policy::require : mpa::Policy::allow;
  o.mpa.crc = crc ? mpa::Policy::require : mpa::Policy::allow;
  o.timeout_ms = kTimeout;
  return o;
}

struct Mode {
  bool markers, crc;
  std::uint8_t rev;
};

class KsockTest : public testing::TestWithParam<Mode> {};

// The server registers a region, tells the client where it is, and serves until "bye".
TEST_P(KsockTest, SendWriteReadOverLoopbackAreByteExact) {
  const Mode m = GetParam();
  std::string why;
  auto listener = Listener::listen("127.0.0.1", 0, &why);
  ASSERT_TRUE(listener) << why;
  constexpr std::size_t region_len = 3 << 20;
  std::vector<std::uint8_t> region(region_len);
  std::atomic<bool> server_ok{false};

  std::thread server([&] {
    Context ctx;
    std::string err;
    auto ep = listener->accept(ctx, options(m.markers, m.crc, m.rev), &err);
    if (!ep) {
      ADD_FAILURE() << "accept: " << err;
      return;
    }
    const auto rkey =
        ctx.reg_mr(region.data(), region.size(),
                   ddp::access_remote_write | ddp::access_remote_read | ddp::access_local_write);
    std::vector<std::uint8_t> inbox(64), adv(16);
    const auto ikey = ctx.reg_mr(inbox.data(), inbox.size(), ddp::access_local_write);
    const auto akey = ctx.reg_mr(adv.data(), adv.size(), 0);
    ddp::Sge in{inbox.data(), 64, ikey};
    ASSERT_EQ(ep->post_recv(1, {&in, 1}), 0);
    ddp::Completion c{};
    ASSERT_TRUE(ep->wait_recv(c, kTimeout)) << ep->error();  // hello
    ASSERT_EQ(ep->post_recv(2, {&in, 1}), 0);
    std::memcpy(adv.data(), &rkey, 4);
    const auto to = reinterpret_cast<std::uint64_t>(region.data());
    std::memcpy(adv.data() + 4, &to, 8);
    ddp::Sge out{adv.data(), 12, akey};
    ASSERT_EQ(ep->post_send(1, {&out, 1}), 0);
    ASSERT_TRUE(ep->wait_recv(c, kTimeout)) << ep->error();  // bye
    ASSERT_EQ(c.status, ddp::Status::success);
    ep->close();
    server_ok = true;
  });

  Context ctx;
  auto ep =
      Endpoint::connect(ctx, "127.0.0.1", listener->port(), options(m.markers, m.crc, m.rev), &why);
  ASSERT_TRUE(ep) << why;
  EXPECT_EQ(ep->negotiated().revision, m.rev);
  EXPECT_EQ(ep->negotiated().crc, m.crc);
  EXPECT_EQ(ep->negotiated().markers_rx, m.markers);

  std::vector<std::uint8_t> msg(64), inbox(64);
  const auto mkey = ctx.reg_mr(msg.data(), msg.size(), 0);
  const auto ikey = ctx.reg_mr(inbox.data(), inbox.size(), ddp::access_local_write);
  ddp::Sge in{inbox.data(), 64, ikey};
  ASSERT_EQ(ep->post_recv(7, {&in, 1}), 0);
  ddp::Sge hello{msg.data(), 5, mkey};
  ASSERT_EQ(ep->post_send(1, {&hello, 1}), 0);
  ddp::Completion c{};
  ASSERT_TRUE(ep->wait_recv(c, kTimeout)) << ep->error();
  ASSERT_EQ(c.byte_len, 12u);
  ddp::stag_t rkey;
  std::uint64_t rto;
  std::memcpy(&rkey, inbox.data(), 4);
  std::memcpy(&rto, inbox.data() + 4, 8);

  // Write the region in three gathers, read it back in one, compare everything.
  auto src = pattern(region_len, 0x42);
  std::vector<std::uint8_t> back(region_len);
  const auto skey = ctx.reg_mr(src.data(), src.size(), 0);
  const auto bkey = ctx.reg_mr(back.data(), back.size(), ddp::access_local_write);
  const std::uint32_t third = region_len / 3;
  for (std::uint32_t i = 0; i < 3; ++i) {
    ddp::Sge sg[2] = {{src.data() + i * third, 1000, skey},
                      {src.data() + i * third + 1000, third - 1000, skey}};
    ASSERT_EQ(ep->post_write(10 + i, sg, rkey, rto + i * third), 0);
  }
  ddp::Sge rd{back.data(), static_cast<std::uint32_t>(region_len), bkey};
  ASSERT_EQ(ep->post_read(20, {&rd, 1}, rkey, rto), 0);
  int completions = 0;
  while (completions < 5) {  // hello + 3 writes + read
    ASSERT_TRUE(ep->wait_send(c, kTimeout)) << ep->error();
    ASSERT_EQ(c.status, ddp::Status::success);
    ++completions;
  }
  EXPECT_EQ(back, src);
  EXPECT_EQ(region, src);

  msg[0] = 'B';
  ddp::Sge bye{msg.data(), 1, mkey};
  ASSERT_EQ(ep->post_send(2, {&bye, 1}), 0);
  ASSERT_TRUE(ep->wait_send(c, kTimeout));
  ep->close();
  server.join();
  EXPECT_TRUE(server_ok);
}

INSTANTIATE_TEST_SUITE_P(Modes, KsockTest,
                         testing::Values(Mode{false, false, 1}, Mode{false, true, 2},
                                         Mode{true, true, 2}, Mode{true, false, 1}),
                         [](const testing::TestParamInfo<Mode>& i) {
                           return std::string("v") + std::to_string(i.param.rev) +
                                  (i.param.markers ? "_markers" : "_nomarkers") +
                                  (i.param.crc ? "_crc" : "_nocrc");
                         });

TEST(Ksock, ConnectToAClosedPortFailsWithAClearError) {
  // Bind a port and close it again so nothing listens there.
  std::string why;
  std::uint16_t port;
  {
    auto l = Listener::listen("127.0.0.1", 0, &why);
    ASSERT_TRUE(l) << why;
    port = l->port();
  }
  Context ctx;
  auto ep = Endpoint::connect(ctx, "127.0.0.1", port, Options{}, &why);
  EXPECT_FALSE(ep);
  EXPECT_NE(why.find("Connection refused"), std::string::npos) << why;
}

TEST(Ksock, ListenOnABadAddressFailsWithAClearError) {
  std::string why;
  EXPECT_FALSE(Listener::listen("not-an-address", 0, &why));
  EXPECT_NE(why.find("not an IPv4 address"), std::string::npos) << why;
}

TEST(Ksock, ResponderRefusingMarkersRejectsAndBothSidesSayWhy) {
  // Like Linux siw: a responder that does not send markers rejects a request with M=1.
  std::string why;
  auto listener = Listener::listen("127.0.0.1", 0, &why);
  ASSERT_TRUE(listener) << why;
  std::string server_why;
  std::thread server([&] {
    Context ctx;
    Options o = options(false, true, 2);
    o.mpa.markers = mpa::Policy::refuse;
    EXPECT_FALSE(listener->accept(ctx, o, &server_why));
  });
  Context ctx;
  auto ep = Endpoint::connect(ctx, "127.0.0.1", listener->port(), options(true, true, 2), &why);
  server.join();
  EXPECT_FALSE(ep);
  EXPECT_NE(why.find("rejected"), std::string::npos) << why;
  EXPECT_FALSE(server_why.empty());
}

TEST(Ksock, PeerCloseFlushesPostedWorkRequests) {
  std::string why;
  auto listener = Listener::listen("127.0.0.1", 0, &why);
  ASSERT_TRUE(listener) << why;
  std::thread server([&] {
    Context ctx;
    std::string err;
    auto ep = listener->accept(ctx, options(false, true, 2), &err);
    ASSERT_TRUE(ep) << err;
    ep->close();
  });
  Context ctx;
  auto ep = Endpoint::connect(ctx, "127.0.0.1", listener->port(), options(false, true, 2), &why);
  ASSERT_TRUE(ep) << why;
  std::vector<std::uint8_t> buf(128);
  const auto key = ctx.reg_mr(buf.data(), buf.size(), ddp::access_local_write);
  ddp::Sge in{buf.data(), 128, key};
  ASSERT_EQ(ep->post_recv(99, {&in, 1}), 0);
  ddp::Completion c{};
  // The receive can never be satisfied: the peer's FIN flushes it.
  ASSERT_TRUE(ep->wait_recv(c, kTimeout));
  EXPECT_EQ(c.wr_id, 99u);
  EXPECT_EQ(c.status, ddp::Status::flushed);
  EXPECT_FALSE(ep->alive());
  server.join();
}

}  // namespace
}  // namespace esock::ksock
