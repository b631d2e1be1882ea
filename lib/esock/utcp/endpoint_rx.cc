// Endpoint receive side: TCP's in-order octets and placed ranges, interleaved in sequence
// order, fed to the engine; segments ahead of a hole offered to it for early placement.
#include <algorithm>

#include "esock/utcp/endpoint.h"

namespace esock::utcp {

// Drains what TCP has delivered in order: queued octets and placed ranges, interleaved in
// sequence order (TcbUser's exactly-once contract).
bool Endpoint::receive() {
  tcp::Tcb& tcb = conn_->tcb();
  tcp::RecvQueue& rq = tcb.recv_queue();
  bool did = false;
  for (;;) {
    if (hold_input_ && engine_.state() == rnic::Engine::State::established) return did;
    if (!skips_.empty() && skips_.front().seq == rx_seq_) {
      const Skip s = skips_.front();
      skips_.pop_front();
      if (!engine_.skip_placed(s.len)) break;
      rx_seq_ += s.len;
      did = true;
      continue;
    }
    bytes_view v = rq.front();
    if (v.empty()) break;
    if (!skips_.empty()) v = v.first(std::min<std::size_t>(v.size(), skips_.front().seq - rx_seq_));
    const std::size_t used = engine_.feed(v);
    if (used == 0) break;
    tcb.recv_consumed(stack_.now(), used);
    rx_seq_ += static_cast<std::uint32_t>(used);
    did = true;
  }
  // RFC 5040 section 5: the peer closed the LLP stream; nothing more will arrive.
  const rnic::Engine::State st = engine_.state();
  if (tcb.peer_closed() && rq.empty() && skips_.empty() && st != rnic::Engine::State::closed &&
      st != rnic::Engine::State::failed) {
    engine_.on_transport_closed(true);
    did = true;
  }
  return did;
}

void Endpoint::on_range_delivered(std::uint32_t seq, std::uint32_t len) {
  skips_.push_back(Skip{seq, len});
  work_ = true;
}

// RFC 5044 section 8: a segment ahead of a hole is placed now when it is self-describing;
// then TCP keeps only its range (on_range_delivered later), else the bytes.
bool Endpoint::on_out_of_order(std::uint32_t seq, bytes_view data, const BufRef&) {
  // Out-of-order segments lie ahead of rx_seq_ within the receive window (< 2^31).
  const std::uint64_t pos = engine_.rx_position() + static_cast<std::uint32_t>(seq - rx_seq_);
  return engine_.place_out_of_order(pos, data);
}

}  // namespace esock::utcp
