// Endpoint lifecycle: TCP open, the engine started once TCP is up, close.
#include "esock/utcp/endpoint.h"

#include <utility>

#include "esock/utcp/tx_pool.h"

namespace esock::utcp {

namespace {

rnic::EngineConfig engine_config(const Options& o, bool initiator) {
  rnic::EngineConfig c;
  c.mpa = o.mpa;
  c.mpa.initiator = initiator;
  c.qp = o.qp;
  c.cq_depth = o.cq_depth;
  // Zero-copy transmit: a Send/Write completes when TCP no longer needs its octets.
  c.complete_on_ack = true;
  // Every segment of an aligned sender starts with an FPDU (RFC 5044 section 9).
  c.place_aligned_segments = true;
  c.out_of_order_placement = o.ooo_placement;
  return c;
}

}  // namespace

Endpoint::Endpoint(tcp::Stack& stack, tcp::Connection* conn, rnic::Context& ctx, Options opts,
                   bool initiator)
    : stack_(stack),
      conn_(conn),
      pool_(TxPool::create()),
      engine_(engine_config(opts, initiator), ctx, *this) {
  conn_->set_user(this);
  pool_->set_wake([](void* self) { static_cast<Endpoint*>(self)->poke(); }, this);
}

std::unique_ptr<Endpoint> Endpoint::connect(tcp::Stack& stack, rnic::Context& ctx,
                                            tcp::Ipv4Addr dst, std::uint16_t port, Options opts,
                                            int* err) {
  tcp::Connection* c = stack.connect(dst, port, err);
  if (c == nullptr) return nullptr;
  // FPDUs are records already sized to segments; Nagle would only hold back the last one.
  c->set_nodelay(true);
  return std::unique_ptr<Endpoint>(new Endpoint(stack, c, ctx, std::move(opts), true));
}

std::unique_ptr<Endpoint> Endpoint::accept(tcp::Stack& stack, tcp::Connection* conn,
                                           rnic::Context& ctx, Options opts) {
  if (conn == nullptr) return nullptr;
  conn->set_nodelay(true);
  std::unique_ptr<Endpoint> ep(new Endpoint(stack, conn, ctx, std::move(opts), false));
  if (conn->established()) ep->on_established();
  return ep;
}

Endpoint::~Endpoint() {
  release_tcp();
  pool_->orphan();
}

Endpoint::State Endpoint::state() const {
  switch (engine_.state()) {
    case rnic::Engine::State::negotiating:
      return tcp_up_ ? State::negotiating : State::connecting;
    case rnic::Engine::State::established:
      return State::established;
    case rnic::Engine::State::failed:
      return State::failed;
    case rnic::Engine::State::closed:
      break;
  }
  return State::closed;
}

void Endpoint::abort() {
  if (conn_ == nullptr) return;
  conn_->set_user(nullptr);
  stack_.abort(conn_);  // RFC 9293 3.10.5 (ABORT): RST, the TCB goes
  conn_ = nullptr;
}

void Endpoint::keep_while_sent(std::shared_ptr<void> mem) {
  pool_->keep(std::move(mem));
}

tcp::Connection* Endpoint::release_plain() {
  tcp::Connection* c = std::exchange(conn_, nullptr);
  if (c != nullptr) c->set_user(nullptr);
  return c;
}

void Endpoint::release_tcp() {
  if (conn_ == nullptr) return;
  conn_->set_user(nullptr);
  // Octets still unacknowledged point into the user's registered memory, which may go away
  // with us: reset rather than let TCP retransmit from it later.
  if (pool_->pins_out() > 0 && conn_->state() != tcp::TcpState::closed)
    stack_.abort(conn_);
  else
    stack_.close(conn_);
  conn_ = nullptr;
}

void Endpoint::on_established() {
  if (tcp_up_) return;
  tcp_up_ = true;
  // The recv queue starts at IRS + 1; the MPA stream after the peer's Request/Reply.
  rx_seq_ = conn_->tcb().irs() + 1;
  engine_.start();  // RFC 5044 section 7.1: the initiator's Request goes out at once
  poke();
}

void Endpoint::on_closed(tcp::CloseReason r) {
  engine_.on_transport_closed(r == tcp::CloseReason::normal,
                              std::string("TCP connection ") + tcp::to_string(r));
  poke();
}

bool Endpoint::progress() {
  bool did = false;
  if (conn_ != nullptr) {
    // Completions for what the peer ACKed first: the peer's FIN may arrive in the same
    // segment as that ACK, and receive() flushes whatever is still outstanding on FIN.
    did |= complete_acked();
    did |= receive();
    did |= complete_acked();
    did |= transmit();
    did |= std::exchange(work_, false);
  }
  return did;
}

void Endpoint::close() {
  close_requested_ = true;
  engine_.close();
  transmit();
}

}  // namespace esock::utcp
