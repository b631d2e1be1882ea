// ESTP engine: rendezvous by RDMA Write (docs/stream-protocol.md section 6.2). A blocking
// reader offers its buffer (SINKAVAIL); a blocking writer whose next octets are a large
// write RDMA-Writes them there and says WRITEDONE, which saves the SRCAVAIL / RDMA Read
// Request round trip of section 6.1 when the reader was waiting first.
#include <algorithm>
#include <cerrno>
#include <climits>

#include "esock/estp/stream.h"

namespace esock::estp {

namespace {
constexpr std::uint64_t sink_write_wr_id = ~std::uint64_t{1};
}  // namespace

bool Stream::sink_possible(std::size_t len) const {
  return !local_.msgmode && peer_.sink && local_.sink_threshold != 0 &&
         len >= local_.sink_threshold && error_ == 0 && !peer_fin_ && rq_.empty() &&
         !pull_.active && !pull_.done && sink_.state == Sink::State::none &&
         can_send(Type::sinkavail);
}

int Stream::offer_sink(mut_bytes dst) {
  if (!sink_possible(dst.size())) return error_ != 0 ? error_ : EAGAIN;
  const std::size_t cap = std::min<std::size_t>(dst.size(), UINT32_MAX);
  const ddp::stag_t stag = v_.reg_mr(dst.data(), cap, ddp::access_remote_write);
  if (stag == 0) return ENOMEM;
  // The id is the count of stream-data messages received so far: the writer takes the sink
  // only if it has sent exactly that many, so one that crossed its data is never written.
  const Message m{.type = Type::sinkavail,
                  .length = static_cast<std::uint32_t>(cap),
                  .stag = stag,
                  .to = reinterpret_cast<std::uintptr_t>(dst.data()),
                  .id = bearing_rx_};
  if (!send(m, {})) {
    v_.dereg_mr(stag);
    return error_ != 0 ? error_ : EAGAIN;
  }
  sink_ = Sink{.state = Sink::State::out, .stag = stag, .id = bearing_rx_, .cap = cap};
  ++stats_.sinks_offered;
  return 0;
}

void Stream::sink_resolve(Sink::State to, std::size_t written) {
  if (sink_.state != Sink::State::out && sink_.state != Sink::State::cancelling) return;
  v_.dereg_mr(sink_.stag);  // a late Write now fails its STag check
  sink_.state = to;
  sink_.written = written;
  sink_.cancel_due = false;
}

std::optional<ReadOut> Stream::sink_result() {
  switch (sink_.state) {
    case Sink::State::none:
      return ReadOut{.err = error_ != 0 ? error_ : EAGAIN};
    case Sink::State::written: {
      const ReadOut r{.n = sink_.written, .err = sink_.written ? 0 : EAGAIN};
      sink_ = Sink{};
      return r;
    }
    case Sink::State::voided:
      sink_ = Sink{};
      return ReadOut{.err = EAGAIN};
    default:
      if (error_ == 0) return std::nullopt;
      sink_resolve(Sink::State::voided, 0);
      sink_ = Sink{};
      return ReadOut{.err = error_};
  }
}

void Stream::drop_sink() {
  if (sink_pending()) v_.dereg_mr(sink_.stag);
  sink_ = Sink{};
}

void Stream::cancel_sink() {
  if (sink_.state != Sink::State::out) return;
  sink_.state = Sink::State::cancelling;
  sink_.cancel_due = true;
  send_due();
}

void Stream::send_sink_due() {
  while (!cancel_answers_due_.empty()) {
    const Message m{.type = Type::writedone, .length = 0, .id = cancel_answers_due_.front()};
    if (!send(m, {})) return;
    cancel_answers_due_.pop_front();
  }
  if (sink_.cancel_due && sink_.state == Sink::State::cancelling &&
      send(Message{.type = Type::sinkcancel, .id = sink_.id}, {}))
    sink_.cancel_due = false;
}

// SINKAVAIL, WRITEDONE and SINKCANCEL; their buffers are re-posted by the caller at once.
void Stream::on_sink_message(const Message& m) {
  switch (m.type) {
    case Type::sinkavail:
      // At most one sink per direction: the peer offers the next only once ours resolved
      // it, which our WRITEDONE or other stream data does.
      if (peer_sink_.valid || m.length == 0) {
        fail(EPROTO);
        return;
      }
      // Stale: stream data we sent crossed it (the peer voids it when that arrives).
      if (m.id != bearing_tx_) return;
      peer_sink_ = PeerSink{.valid = true, .stag = m.stag, .to = m.to, .id = m.id, .cap = m.length};
      return;
    case Type::sinkcancel:
      // Answered only while we still hold the sink; a WRITEDONE or other stream data of
      // ours already on its way resolves it at the peer.
      if (peer_sink_.valid && m.id == peer_sink_.id) {
        peer_sink_.valid = false;
        cancel_answers_due_.push_back(m.id);
      }
      return;
    case Type::writedone:
      if ((sink_.state != Sink::State::out && sink_.state != Sink::State::cancelling) ||
          m.id != sink_.id || m.length > sink_.cap) {
        fail(EPROTO);  // a Write into no sink of ours, or past its end
        return;
      }
      sink_resolve(Sink::State::written, m.length);
      if (m.length > 0) ++stats_.sinks_written;
      return;
    default:
      return;
  }
}

bool Stream::sink_writable() const {
  return peer_sink_.valid && !swrite_.active && rndvs_.empty() && error_ == 0 && !fin_wanted_ &&
         !peer_closed_ && can_send(Type::writedone);
}

std::ptrdiff_t Stream::write_sink(bytes_view src) {
  if (error_ != 0) return -error_;
  if (fin_wanted_ || peer_closed_) return -EPIPE;
  if (src.empty()) return -EINVAL;
  if (!sink_writable()) return -EAGAIN;
  const std::size_t k = std::min(src.size(), peer_sink_.cap);
  auto* p = const_cast<std::uint8_t*>(src.data());  // only read, as a Send's gather list
  const ddp::stag_t stag = v_.reg_mr(p, k, 0);
  if (stag == 0) return -ENOMEM;
  const ddp::Sge sge{p, static_cast<std::uint32_t>(k), stag};
  if (v_.post_write(sink_write_wr_id, {&sge, 1}, peer_sink_.stag, peer_sink_.to) != 0) {
    v_.dereg_mr(stag);
    fail(ECONNRESET);  // the queue pair left RTS
    return -error_;
  }
  swrite_ = SinkWrite{.active = true, .stag = stag, .len = k};
  // RDMAP orders the Write before the Send that follows (RFC 5040 section 5.5): the octets
  // are in place when the peer processes WRITEDONE. The credit was checked above.
  const Message m{
      .type = Type::writedone, .length = static_cast<std::uint32_t>(k), .id = peer_sink_.id};
  if (!send(m, {})) fail(ECONNRESET);
  ++stats_.sink_writes;
  return static_cast<std::ptrdiff_t>(k);
}

std::optional<std::size_t> Stream::sink_write_finished() {
  if (!swrite_.active || !swrite_.completed) return std::nullopt;
  if (!give_back(swrite_.stag, &swrite_.deregistered)) return std::nullopt;
  const std::size_t n = swrite_.len;
  stats_.zcopy_octets_tx += n;
  swrite_ = SinkWrite{};
  return n;
}

void Stream::cancel_sink_write() {
  if (!swrite_.active) return;
  give_up(swrite_.stag, swrite_.deregistered, &cancelled_write_stag_);
  swrite_ = SinkWrite{};
}

bool Stream::sink_write_released() const {
  return lent_released(swrite_.active, cancelled_write_stag_);
}

}  // namespace esock::estp
