// Endpoint receive side: TCP's in-order octets and placed ranges, interleaved in sequence
// order, fed to the engine; segments ahead of a hole offered to it for early placement.
#include <algorithm>
#include <cstring>

#include "esock/utcp/endpoint.h"

namespace esock::utcp {

// RFC 5044 section 7.1: an MPA start frame begins with its 16-octet key, "MPA ID Req Frame"
// from the initiator and "MPA ID Rep Frame" back. Until all 16 have arrived and match,
// nothing goes to the engine, so a peer that speaks something else (a plain TCP program)
// finds everything it sent still in TCP's queue for whoever carries it on (release_plain).
// False while the engine must not be fed.
bool Endpoint::key_check() {
  if (key_seen_ || not_mpa_) return key_seen_;
  static constexpr char req[] = "MPA ID Req Frame", rep[] = "MPA ID Rep Frame";
  const char* key = engine_.initiator() ? rep : req;
  tcp::RecvQueue& rq = conn_->tcb().recv_queue();
  std::uint8_t head[16];
  const std::size_t n = rq.peek(head);
  if (n == 0) return conn_->tcb().peer_closed();  // the end: the engine hears of it
  received_ = true;
  not_mpa_ = std::memcmp(head, key, n) != 0;
  key_seen_ = n == sizeof head && !not_mpa_;
  // A short key that still matches waits for the rest, unless nothing more can come.
  return key_seen_ || (!not_mpa_ && conn_->tcb().peer_closed());
}

// Drains what TCP has delivered in order: queued octets and placed ranges, interleaved in
// sequence order (TcbUser's exactly-once contract).
bool Endpoint::receive() {
  tcp::Tcb& tcb = conn_->tcb();
  tcp::RecvQueue& rq = tcb.recv_queue();
  bool did = false;
  if (engine_.state() == rnic::Engine::State::negotiating && !key_check()) return false;
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
  poke();
}

// RFC 5044 section 8: a segment ahead of a hole is placed now when it is self-describing;
// then TCP keeps only its range (on_range_delivered later), else the bytes.
bool Endpoint::on_out_of_order(std::uint32_t seq, bytes_view data, const BufRef&) {
  // Out-of-order segments lie ahead of rx_seq_ within the receive window (< 2^31).
  const std::uint64_t pos = engine_.rx_position() + static_cast<std::uint32_t>(seq - rx_seq_);
  poke();  // placed data may complete a message
  return engine_.place_out_of_order(pos, data);
}

}  // namespace esock::utcp
