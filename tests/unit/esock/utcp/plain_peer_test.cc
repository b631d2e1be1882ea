// Peers without esock on esock's own stack (docs/sockets.md, "Peers without esock"): an
// iWARP endpoint tells a plain TCP peer by its first octets (or its silence) without
// consuming any of them, and a PlainRelay then carries the connection as plain TCP to a
// local descriptor (the application's end of an AF_UNIX pair), every octet and both ends of
// stream included. Two lib/tcp stacks in memory, one side plain TCP (no MPA at all).
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "esock/utcp/plain_relay.h"
#include "utcp_pair.h"

namespace esock::utcp::test {
namespace {

constexpr std::uint16_t port = 4791;

bytes_view view(const std::string& s) {
  return bytes_view(reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
}

std::string drain(tcp::Connection* c) {
  std::string out(c->tcb().recv_queue().size(), '\0');
  c->recv(mut_bytes(reinterpret_cast<std::uint8_t*>(out.data()), out.size()));
  return out;
}

// Reads what the pair's end has now (non-blocking); eof set at end of stream.
std::string read_now(int fd, bool* eof = nullptr) {
  std::string out;
  char b[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, b, sizeof b, MSG_DONTWAIT);
    if (n > 0) {
      out.append(b, static_cast<std::size_t>(n));
      continue;
    }
    if (n == 0 && eof != nullptr) *eof = true;
    return out;
  }
}

class PlainPeer : public ::testing::Test {
 protected:
  PlainPeer() : p({}) {}

  // Stack a opens a plain TCP connection to stack b, where an iWARP endpoint (the
  // responder) takes it: the plain client -> esock server case.
  void plain_client_to_endpoint() {
    int err = 0;
    tcp::Listener* l = p.b->listen(port, 4, &err);
    ASSERT_NE(l, nullptr);
    plain = p.a->connect(ip_b, port, &err);
    ASSERT_NE(plain, nullptr);
    ASSERT_TRUE(p.run_until([&] {
      if (!p.eb)
        if (tcp::Connection* c = p.b->accept(l)) p.eb = Endpoint::accept(*p.b, c, p.ctx_b, {});
      return p.eb && plain->established();
    }));
  }

  // The relay between the endpoint's connection and one end of a pair; app is the other.
  void relay_from(tcp::Stack& stack, tcp::Connection* c) {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
    app = sv[0];
    relay = std::make_unique<PlainRelay>(stack, c, sv[1]);
  }

  template <class F>
  bool run_until(F done) {
    return p.run_until(
        [&] {
          if (relay) relay->pump();
          return done();
        },
        10s);
  }

  ~PlainPeer() override {
    relay.reset();
    if (app >= 0) ::close(app);
  }

  UtcpPair p;
  tcp::Connection* plain = nullptr;  // the plain peer's connection (stack a or b)
  std::unique_ptr<PlainRelay> relay;
  int app = -1;
};

TEST_F(PlainPeer, TalkativeClientIsToldApartWithEveryOctetUnread) {
  plain_client_to_endpoint();
  const std::string req = "GET / HTTP/1.0\r\nHost: x\r\n\r\n";
  ASSERT_EQ(plain->send(view(req)), req.size());
  ASSERT_TRUE(p.run_until([&] { return p.eb->peer_not_mpa(); }, 1s));
  EXPECT_FALSE(p.eb->peer_silent());
  EXPECT_EQ(p.eb->state(), Endpoint::State::negotiating);
  EXPECT_EQ(p.eb->tcp_connection()->tcb().recv_queue().size(), req.size());
  p.run_until([] { return false; }, 50ms);
  EXPECT_TRUE(plain->tcb().recv_queue().empty()) << "the responder said something";

  // Carried on as plain TCP: the request first, then both ways, half-close included.
  relay_from(*p.b, p.eb->release_plain());
  std::string got;
  ASSERT_TRUE(run_until([&] {
    got += read_now(app);
    return got.size() >= req.size();
  }));
  EXPECT_EQ(got, req);
  const std::string answer = "HTTP/1.0 200 OK\r\n\r\nhello";
  ASSERT_EQ(::send(app, answer.data(), answer.size(), 0), static_cast<ssize_t>(answer.size()));
  ASSERT_EQ(::shutdown(app, SHUT_WR), 0);
  std::string back;
  ASSERT_TRUE(run_until([&] {
    back += drain(plain);
    return plain->peer_closed() && plain->tcb().recv_queue().empty();
  }));
  EXPECT_EQ(back, answer);
  // The other direction stays open after our FIN (RFC 9293 half-close), then ends.
  ASSERT_EQ(plain->send(view("more")), 4u);
  plain->shutdown_send();
  bool eof = false;
  std::string more;
  ASSERT_TRUE(run_until([&] {
    more += read_now(app, &eof);
    return eof;
  }));
  EXPECT_EQ(more, "more");
  EXPECT_TRUE(relay->done());
}

TEST_F(PlainPeer, SilentClientGetsNothingFromTheResponder) {
  plain_client_to_endpoint();
  p.run_until([] { return false; }, 200ms);
  EXPECT_TRUE(p.eb->peer_silent());
  EXPECT_FALSE(p.eb->peer_not_mpa());
  EXPECT_EQ(p.eb->state(), Endpoint::State::negotiating);
  EXPECT_TRUE(plain->tcb().recv_queue().empty());
  // A silent-first client (it waits for a banner): the application speaks first.
  relay_from(*p.b, p.eb->release_plain());
  ASSERT_EQ(::send(app, "220 ready\r\n", 11, 0), 11);
  std::string got;
  ASSERT_TRUE(run_until([&] {
    got += drain(plain);
    return got.size() >= 11;
  }));
  EXPECT_EQ(got, "220 ready\r\n");
}

// A key that arrives in pieces is waited for: nothing goes to the engine until 16 octets
// are there, so a mismatch in the last of them still leaves everything unread.
TEST_F(PlainPeer, AKeyInPiecesIsWaitedForBeforeAnyOctetIsConsumed) {
  plain_client_to_endpoint();
  ASSERT_EQ(plain->send(view("MPA ID R")), 8u);
  p.run_until([] { return false; }, 50ms);
  EXPECT_FALSE(p.eb->peer_not_mpa());
  EXPECT_FALSE(p.eb->peer_silent());
  EXPECT_EQ(p.eb->tcp_connection()->tcb().recv_queue().size(), 8u);
  ASSERT_EQ(plain->send(view("eq Framx and more")), 17u);
  ASSERT_TRUE(p.run_until([&] { return p.eb->peer_not_mpa(); }, 1s));
  EXPECT_EQ(p.eb->tcp_connection()->tcb().recv_queue().size(), 25u);
}

// The esock client -> plain server case: a server that speaks first is told apart by the
// initiator (its banner is not "MPA ID Rep Frame"), and what it sent stays unread.
TEST_F(PlainPeer, TalkativeServerIsToldApartByTheInitiator) {
  int err = 0;
  tcp::Listener* l = p.b->listen(port, 4, &err);
  ASSERT_NE(l, nullptr);
  p.ea = Endpoint::connect(*p.a, p.ctx_a, ip_b, port, {}, &err);
  ASSERT_TRUE(p.ea);
  ASSERT_TRUE(p.run_until([&] {
    if (plain == nullptr) plain = p.b->accept(l);
    return plain != nullptr && plain->established();
  }));
  const std::string banner = "SSH-2.0-OpenSSH_9.2\r\n";
  ASSERT_EQ(plain->send(view(banner)), banner.size());
  ASSERT_TRUE(p.run_until([&] { return p.ea->peer_not_mpa(); }, 1s));
  EXPECT_EQ(p.ea->tcp_connection()->tcb().recv_queue().size(), banner.size());
  EXPECT_EQ(p.ea->state(), Endpoint::State::negotiating);
}

// An active open relayed from the start (the esock client's fallback: a fresh plain
// connection): what the application writes before TCP is up waits, then goes in order.
TEST_F(PlainPeer, AnActiveOpenCarriesWhatWasWrittenBeforeItWasUp) {
  int err = 0;
  tcp::Listener* l = p.b->listen(port, 4, &err);
  ASSERT_NE(l, nullptr);
  tcp::Connection* c = p.a->connect(ip_b, port, &err);
  ASSERT_NE(c, nullptr);
  relay_from(*p.a, c);
  ASSERT_EQ(::send(app, "early ", 6, 0), 6);
  ASSERT_TRUE(run_until([&] {
    if (plain == nullptr) plain = p.b->accept(l);
    return plain != nullptr;
  }));
  ASSERT_EQ(::send(app, "later", 5, 0), 5);
  std::string got;
  ASSERT_TRUE(run_until([&] {
    got += drain(plain);
    return got.size() >= 11;
  }));
  EXPECT_EQ(got, "early later");
}

// The application closes with the peer's octets unread: the peer sees a reset, as from a
// kernel socket closed so.
TEST_F(PlainPeer, CloseWithUnreadOctetsResetsThePeer) {
  plain_client_to_endpoint();
  ASSERT_EQ(plain->send(view("unread")), 6u);
  ASSERT_TRUE(p.run_until([&] { return p.eb->peer_not_mpa(); }, 1s));
  relay_from(*p.b, p.eb->release_plain());
  ::close(app);
  app = -1;
  ASSERT_TRUE(run_until([&] { return relay->done(); }));
  relay.reset();
  ASSERT_TRUE(p.run_until([&] { return plain->state() == tcp::TcpState::closed; }, 1s));
  EXPECT_EQ(plain->error(), ECONNRESET);
}

// A peer that resets: the application's end reads end of stream and its writes fail.
TEST_F(PlainPeer, APeerResetClosesTheApplicationsEnd) {
  plain_client_to_endpoint();
  ASSERT_EQ(plain->send(view("hi")), 2u);
  ASSERT_TRUE(p.run_until([&] { return p.eb->peer_not_mpa(); }, 1s));
  relay_from(*p.b, p.eb->release_plain());
  p.a->abort(plain);
  plain = nullptr;
  ASSERT_TRUE(run_until([&] { return relay->done(); }));
  bool eof = false;
  read_now(app, &eof);
  EXPECT_TRUE(eof);
  EXPECT_EQ(::send(app, "x", 1, MSG_NOSIGNAL), -1);
  EXPECT_EQ(errno, EPIPE);
}

}  // namespace
}  // namespace esock::utcp::test
