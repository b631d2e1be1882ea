// Engine lifecycle: MPA negotiation, the step to RDMAP streaming mode, close, verbs.
#include "esock/rnic/engine.h"

#include <utility>

#include "esock/rnic/rdmap_start.h"

namespace esock::rnic {

namespace {
ddp::QpConfig with_pd(ddp::QpConfig q, std::uint32_t pd) {
  q.pd = pd;
  return q;
}
// RFC 5044 section 4.1: ULPDU_Length is 16 bits, so no FPDU carries more than this.
constexpr std::size_t max_peer_ulpdu = 65535;
// The largest FPDU on the wire: a 65535-octet ULPDU, its length, pad and CRC, and a Marker
// every 512 octets (RFC 5044 sections 4 and 5).
constexpr std::size_t max_fpdu_octets = 65535 + 2 + 3 + 4 + 4 * (65535 / 508 + 2);
// Its octets other than the payload: those, the Markers and a DDP/RDMAP header (<= 28).
constexpr std::size_t max_owned_octets = max_fpdu_octets - 65535 + 28;
}  // namespace

Engine::Engine(EngineConfig cfg, Context& ctx, Transport& tx)
    : cfg_(std::move(cfg)),
      ctx_(ctx),
      tx_(tx),
      send_cq_(cfg_.cq_depth),
      recv_cq_(cfg_.cq_depth),
      negotiator_(cfg_.mpa),
      qp_(with_pd(cfg_.qp, cfg_.qp.pd != 0 ? cfg_.qp.pd : ctx.pd()), ctx.stags(), send_cq_,
          recv_cq_) {
  qp_.set_complete_on_ack(cfg_.complete_on_ack);
}

void Engine::start() {
  // RFC 5044 section 7.1: the initiator speaks first; a responder's output is empty here.
  const std::vector<std::uint8_t> req = negotiator_.take_output();
  if (req.empty()) return;
  stats_.tx_copied_bytes += req.size();
  if (!tx_.send_frame(req)) fail("internal error: the MPA Request does not fit the transport");
}

void Engine::established() {
  const mpa::Negotiated& n = negotiator_.result();
  framer_.emplace(n.markers_tx, n.crc);
  tx_scratch_.resize(max_owned_octets);
  tx_pieces_.resize(mpa::Framer::max_pieces(max_fpdu_octets, 1));
  deframer_.emplace(n.markers_rx, n.crc, max_peer_ulpdu);
  hold_tx_until_rx_ = start_rdmap(n, cfg_.mpa.initiator, qp_);
  rx_pos_ = 0;  // RFC 5044 section 5: stream positions start after the Request/Reply
  state_ = State::established;
}

void Engine::fail(std::string why) {
  if (state_ == State::failed) return;
  state_ = State::failed;
  error_ = std::move(why);
}

// A local error the peer must hear of: a Terminate (RFC 6581 section 7, LLP 0x05), then the
// stream is over.
void Engine::local_error(const char* why) {
  qp_.llp_error(ddp::term::llp_local_catastrophic);
  fail(why);
}

void Engine::on_transport_closed(bool orderly, const std::string& why) {
  if (state_ == State::closed || state_ == State::failed) return;
  if (orderly) {
    // RFC 5040 section 5: the peer closed the LLP stream; nothing more will arrive.
    if (state_ == State::negotiating) negotiator_.peer_closed();
    qp_.llp_closed();
    state_ = State::closed;
  } else {
    qp_.llp_error(ddp::term::llp_connection_lost);
    fail(why.empty() ? "the transport connection broke" : why);
  }
}

void Engine::close() {
  if (state_ == State::established) qp_.close();
}

int Engine::post_send(std::uint64_t wr_id, std::span<const ddp::Sge> sg, bool solicited,
                      ddp::stag_t invalidate) {
  const int rc = qp_.post_send(wr_id, sg, solicited, invalidate);
  if (rc == 0) transmit();
  return rc;
}

int Engine::post_recv(std::uint64_t wr_id, std::span<const ddp::Sge> sg) {
  return qp_.post_recv(wr_id, sg);
}

int Engine::post_write(std::uint64_t wr_id, std::span<const ddp::Sge> sg, ddp::stag_t rkey,
                       std::uint64_t remote_to) {
  const int rc = qp_.post_write(wr_id, sg, rkey, remote_to);
  if (rc == 0) transmit();
  return rc;
}

int Engine::post_read(std::uint64_t wr_id, std::span<const ddp::Sge> sink, ddp::stag_t rkey,
                      std::uint64_t remote_to) {
  const int rc = qp_.post_read(wr_id, sink, rkey, remote_to);
  if (rc == 0) transmit();
  return rc;
}

}  // namespace esock::rnic
