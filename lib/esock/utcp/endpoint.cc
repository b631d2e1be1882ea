// Endpoint lifecycle: TCP open, MPA negotiation, the step to RDMAP streaming, close.
#include "esock/utcp/endpoint.h"

#include <cerrno>
#include <utility>

#include "esock/rnic/llp_errors.h"
#include "esock/rnic/rdmap_start.h"
#include "esock/utcp/tx_pool.h"

namespace esock::utcp {

namespace {

ddp::QpConfig qp_config(rnic::Context& ctx, ddp::QpConfig q) {
  q.pd = ctx.pd();
  return q;
}

mpa::Config mpa_config(mpa::Config m, bool initiator) {
  m.initiator = initiator;
  return m;
}

}  // namespace

Endpoint::Endpoint(tcp::Stack& stack, tcp::Connection* conn, rnic::Context& ctx, Options opts,
                   bool initiator)
    : stack_(stack),
      conn_(conn),
      send_cq_(opts.cq_depth),
      recv_cq_(opts.cq_depth),
      opts_(opts),
      state_(State::connecting),
      negotiator_(mpa_config(opts.mpa, initiator)),
      qp_(qp_config(ctx, opts.qp), ctx.stags(), send_cq_, recv_cq_),
      pool_(TxPool::create()) {
  opts_.mpa.initiator = initiator;
  // Zero-copy transmit: a Send/Write completes when TCP no longer needs its octets.
  qp_.set_complete_on_ack(true);
  conn_->set_user(this);
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
  if (state_ != State::connecting) return;
  state_ = State::negotiating;
  // The recv queue starts at IRS + 1; the MPA stream after the peer's Request/Reply.
  rx_seq_ = conn_->tcb().irs() + 1;
  // RFC 5044 section 7.1: the initiator sends its Request at once; the responder answers.
  send_copy(negotiator_.take_output());
  work_ = true;
}

void Endpoint::established() {
  const mpa::Negotiated& n = negotiator_.result();
  framer_.emplace(n.markers_tx, n.crc);
  // RFC 5044 section 4.1: ULPDU_Length is 16 bits, so no FPDU carries more than 65535.
  deframer_.emplace(n.markers_rx, n.crc, 65535);
  hold_tx_until_rx_ = rnic::start_rdmap(n, opts_.mpa.initiator, qp_);
  rx_pos_ = 0;
  rx_stream_started_ = true;
  state_ = State::established;
}

void Endpoint::on_closed(tcp::CloseReason r) {
  if (state_ == State::closed || state_ == State::failed) return;
  if (r == tcp::CloseReason::normal) {
    qp_.llp_closed();
    state_ = State::closed;
  } else {
    qp_.llp_error(rnic::llp_connection_lost());
    fail(std::string("TCP connection ") + tcp::to_string(r));
  }
  work_ = true;
}

void Endpoint::fail(std::string why) {
  if (state_ == State::failed) return;
  state_ = State::failed;
  error_ = std::move(why);
}

int Endpoint::post_send(std::uint64_t wr_id, std::span<const ddp::Sge> sg, bool solicited,
                        ddp::stag_t invalidate) {
  const int rc = qp_.post_send(wr_id, sg, solicited, invalidate);
  if (rc == 0) transmit();
  return rc;
}

int Endpoint::post_recv(std::uint64_t wr_id, std::span<const ddp::Sge> sg) {
  return qp_.post_recv(wr_id, sg);
}

int Endpoint::post_write(std::uint64_t wr_id, std::span<const ddp::Sge> sg, ddp::stag_t rkey,
                         std::uint64_t remote_to) {
  const int rc = qp_.post_write(wr_id, sg, rkey, remote_to);
  if (rc == 0) transmit();
  return rc;
}

int Endpoint::post_read(std::uint64_t wr_id, std::span<const ddp::Sge> sink, ddp::stag_t rkey,
                        std::uint64_t remote_to) {
  const int rc = qp_.post_read(wr_id, sink, rkey, remote_to);
  if (rc == 0) transmit();
  return rc;
}

bool Endpoint::progress() {
  bool did = false;
  if (conn_ != nullptr) {
    // Completions for what the peer ACKed first: the peer's FIN may arrive in the same
    // segment as that ACK, and receive() flushes whatever is still outstanding on FIN.
    complete_acked();
    did |= receive();
    complete_acked();
    did |= transmit();
    did |= std::exchange(work_, false);
  }
  return did;
}

void Endpoint::close() {
  close_requested_ = true;
  if (state_ == State::established) qp_.close();
  transmit();
}

}  // namespace esock::utcp
