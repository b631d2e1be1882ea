#include "esock/rnic/connection.h"

#include <array>
#include <utility>

#include "esock/rnic/llp_errors.h"
#include "esock/rnic/rdmap_start.h"

namespace esock::rnic {

namespace {
// RFC 5044 section 4.1: ULPDU_Length is 16 bits, so no FPDU carries more than this.
constexpr std::size_t max_peer_ulpdu = 65535;
}  // namespace

Connection::Connection(ConnectionConfig cfg, ddp::StagTable& stags, ddp::CompletionQueue& send_cq,
                       ddp::CompletionQueue& recv_cq)
    : cfg_(std::move(cfg)), negotiator_(cfg_.mpa), qp_(cfg_.qp, stags, send_cq, recv_cq) {
  // The initiator speaks first (RFC 5044 section 7.1): its Request is ready at once.
  out_.append(negotiator_.take_output());
}

void Connection::on_bytes(bytes_view in) {
  if (state_ == State::negotiating) {
    const std::size_t used = negotiator_.feed(in);
    out_.append(negotiator_.take_output());
    switch (negotiator_.state()) {
      case mpa::Negotiator::State::in_progress:
        return;
      case mpa::Negotiator::State::established:
        established();
        in = in.subspan(used);
        break;
      case mpa::Negotiator::State::rejected:
        fail("MPA connection rejected: " + negotiator_.error());
        return;
      case mpa::Negotiator::State::failed:
        fail("MPA negotiation failed: " + negotiator_.error());
        return;
    }
  }
  if (state_ == State::established && !in.empty()) deframe(in);
}

void Connection::established() {
  const mpa::Negotiated& n = negotiator_.result();
  framer_.emplace(n.markers_tx, n.crc);
  deframer_.emplace(n.markers_rx, n.crc, max_peer_ulpdu);
  hold_tx_until_rx_ = start_rdmap(n, cfg_.mpa.initiator, qp_);
  state_ = State::established;
  pump();
}

void Connection::deframe(bytes_view in) {
  const mpa::Error err = deframer_->feed(in, [this](bytes_view ulpdu) {
    ++stats_.fpdus_rx;
    hold_tx_until_rx_ = false;
    qp_.on_segment(ulpdu);
  });
  if (err != mpa::Error::none) {
    // RFC 5044 section 8: an MPA error is fatal to the stream; DDP reports it to the peer in a
    // Terminate (LLP layer) and the connection is torn down.
    qp_.llp_error(llp_terminate_cause(err));
    fail(std::string("MPA receive error: ") + mpa_error_name(err));
  }
  pump();
}

void Connection::pump() {
  if (!framer_) return;
  if (hold_tx_until_rx_ && qp_.state() == ddp::QpState::rts) return;
  ddp::OutSegment seg;
  while (out_.size() < cfg_.tx_high_water) {
    // RFC 5044 section 9: size each DDP segment so its FPDU fills at most one TCP segment.
    const auto mulpdu = static_cast<std::uint32_t>(framer_->max_ulpdu(cfg_.emss));
    qp_.set_mulpdu(mulpdu);
    if (!qp_.next_segment(seg)) break;
    const std::array<bytes_view, 2> parts{bytes_view{seg.hdr.data(), seg.hdr_len}, seg.payload};
    const std::size_t n = framer_->fpdu_size(seg.hdr_len + seg.payload.size());
    const std::size_t written = framer_->frame(parts, out_.append_uninit(n));
    if (written != n) {
      // The queue pair handed out a segment larger than the MULPDU it was given: never send a
      // half-built FPDU; this is a local catastrophic error (RFC 6581 section 7, LLP 0x05).
      out_.unappend(n);
      qp_.llp_error(ddp::term::llp_local_catastrophic);
      fail("internal error: DDP segment exceeds the MULPDU");
      return;
    }
    ++stats_.fpdus_tx;
  }
}

void Connection::on_transport_closed(bool orderly) {
  if (state_ == State::closed) return;
  if (orderly) {
    qp_.llp_closed();
  } else {
    qp_.llp_error(llp_connection_lost());
  }
  if (state_ != State::failed) state_ = State::closed;
}

void Connection::fail(std::string why) {
  if (state_ == State::failed) return;
  state_ = State::failed;
  error_ = std::move(why);
}

}  // namespace esock::rnic
