// The DPDK transport behind the tools' Conn: esock::utcp endpoints on the lib/tcp stack of
// one tcp::Runtime (EAL, one vdev port, the stack). One poll round drives the stack and then
// every endpoint of the process, so a connection the tool is not waiting on (perftest's
// message channel during the test) still answers its peer, as a kernel socket would.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "cli_parse.h"
#include "conn_backends.h"
#include "esock/utcp/endpoint.h"
#include "tcp/dev/idle_backoff.h"
#include "tcp/runtime/runtime.h"
#include "tool_common.h"

namespace esock::tools {

namespace {

bool settled(const utcp::Endpoint& ep) {
  return ep.state() != utcp::Endpoint::State::connecting &&
         ep.state() != utcp::Endpoint::State::negotiating;
}

class UtcpTransport;

class UtcpConn final : public ForwardingConn<utcp::Endpoint> {
 public:
  UtcpConn(UtcpTransport& t, std::unique_ptr<utcp::Endpoint> ep);
  ~UtcpConn() override;  // the endpoint releases its TCP connection to the stack

  bool progress(int timeout_ms) override;
  void close(int timeout_ms) override;
  bool alive() const override { return ep_->state() == utcp::Endpoint::State::established; }

  utcp::Endpoint& endpoint() { return *ep_; }
  bool ended() const {
    return ep_->state() == utcp::Endpoint::State::closed ||
           ep_->state() == utcp::Endpoint::State::failed;
  }

 private:
  UtcpTransport& t_;
};

class UtcpTransport final : public Transport {
 public:
  UtcpTransport(std::unique_ptr<tcp::Runtime> rt, const ConnArgs& a, std::string ip)
      : rt_(std::move(rt)), timeout_ms_(a.timeout_ms), ip_(std::move(ip)) {
    opts_.qp = a.qp;
    opts_.cq_depth = a.cq_depth;
  }
  // Answers the peer a little longer so our last ACK/FIN is not left unsent; connections
  // in TIME-WAIT stay with the stack, which goes away with us.
  ~UtcpTransport() override {
    run_until([&] { return rt_->stack().connection_count() == 0; }, 150);
  }

  // One round: the stack, then every endpoint; backs off when nothing happened.
  bool round() {
    bool did = rt_->poll_once();
    for (utcp::Endpoint* ep : eps_) did |= ep->progress();
    backoff_.poll_done(did);
    return did;
  }
  template <class F>
  bool run_until(F done, int timeout_ms) {
    const Instant deadline = rt_->now() + std::chrono::milliseconds(timeout_ms);
    while (!done()) {
      if (rt_->now() >= deadline) return done();
      round();
    }
    return true;
  }
  void attach(utcp::Endpoint* ep) { eps_.push_back(ep); }
  void detach(utcp::Endpoint* ep) { std::erase(eps_, ep); }

  std::unique_ptr<Conn> connect(const std::string& host, std::uint16_t port, const mpa::Config& cfg,
                                std::string* why) override {
    tcp::Ipv4Addr dst;
    if (!tcp::Ipv4Addr::parse(host, &dst)) {
      *why = "not an IPv4 address: " + host;
      return nullptr;
    }
    utcp::Options o = opts_;
    o.mpa = cfg;
    int err = 0;
    auto ep = utcp::Endpoint::connect(rt_->stack(), ctx_, dst, port, o, &err);
    if (!ep) {
      *why = std::string("TCP connect: ") + std::strerror(err);
      return nullptr;
    }
    return settle(std::make_unique<UtcpConn>(*this, std::move(ep)), why);
  }

  bool listen(const std::string&, std::uint16_t port, std::string* why) override {
    int err = 0;
    listener_ = rt_->stack().listen(port, 8, &err);
    if (listener_ == nullptr) *why = std::string("listen: ") + std::strerror(err);
    port_ = port;
    return listener_ != nullptr;
  }

  std::unique_ptr<Conn> accept(const mpa::Config& cfg, std::string* why) override {
    if (listener_ == nullptr) {
      *why = "not listening";
      return nullptr;
    }
    tcp::Connection* c = nullptr;
    if (!run_until([&] { return (c = rt_->stack().accept(listener_)) != nullptr; }, timeout_ms_)) {
      *why = "no TCP connection within " + std::to_string(timeout_ms_) + " ms";
      return nullptr;
    }
    utcp::Options o = opts_;
    o.mpa = cfg;
    return settle(
        std::make_unique<UtcpConn>(*this, utcp::Endpoint::accept(rt_->stack(), c, ctx_, o)), why);
  }

  void idle(int ms) override {
    run_until([] { return false; }, ms);
  }
  std::string describe() const override {
    std::string s = ip_;
    if (listener_ != nullptr) s.append(":").append(std::to_string(port_));
    return s;
  }

 private:
  // Runs until TCP and MPA are done: the connection, or null with the endpoint's reason.
  std::unique_ptr<Conn> settle(std::unique_ptr<UtcpConn> c, std::string* why) {
    if (!run_until([&] { return settled(c->endpoint()); }, timeout_ms_)) {
      *why = "TCP/MPA not established within " + std::to_string(timeout_ms_) + " ms (timeout)";
      return nullptr;
    }
    if (c->endpoint().state() != utcp::Endpoint::State::established) {
      *why = c->endpoint().error();
      if (why->empty()) *why = "connection closed during MPA negotiation";
      return nullptr;
    }
    return c;
  }

  std::unique_ptr<tcp::Runtime> rt_;
  tcp::IdleBackoff backoff_;
  utcp::Options opts_;
  int timeout_ms_;
  std::string ip_;
  std::vector<utcp::Endpoint*> eps_;
  tcp::Listener* listener_ = nullptr;
  std::uint16_t port_ = 0;
};

UtcpConn::UtcpConn(UtcpTransport& t, std::unique_ptr<utcp::Endpoint> ep)
    : ForwardingConn(std::move(ep)), t_(t) {
  t_.attach(ep_.get());
}

UtcpConn::~UtcpConn() {
  t_.detach(ep_.get());
}

bool UtcpConn::progress(int) {
  t_.round();  // a poll-mode stack does not block: one round, the back-off paces idling
  return !ended();
}

void UtcpConn::close(int timeout_ms) {
  ep_->close();
  // The FIN goes out once everything queued is; wait for the peer's (RFC 5040 section 5).
  t_.run_until([&] { return ended(); }, timeout_ms);
}

}  // namespace

std::unique_ptr<Transport> make_utcp_transport(const ConnArgs& a, std::string* why) {
  tcp::RuntimeConfig rc;
  if (a.vdev.empty()) {
    *why = "--transport dpdk needs --vdev DEVARGS";
    return nullptr;
  }
  if (!cli::parse_cidr(a.ip, &rc.stack.iface.ip, &rc.stack.iface.prefix_len, 24)) {
    *why = "--transport dpdk needs --ip A.B.C.D/NN (esock's own address), got '" + a.ip + "'";
    return nullptr;
  }
  rc.vdev = a.vdev;
  rc.core = a.core;
  rc.file_prefix = a.file_prefix;
  auto rt = tcp::Runtime::create(rc, why);
  if (!rt) return nullptr;
  return std::make_unique<UtcpTransport>(std::move(rt), a, rc.stack.iface.ip.to_string());
}

}  // namespace esock::tools
