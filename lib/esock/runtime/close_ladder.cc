#include "esock/runtime/close_ladder.h"

namespace esock::sockets {

void CloseLadder::start(Instant now) {
  if (stage_ != CloseStage::open) return;
  stage_ = CloseStage::draining;
  deadline_ = now + drain_time;
  started_ = now;
}

CloseAction CloseLadder::step(Instant now, TransportState transport, bool drained,
                              bool peer_closed_first) {
  const bool healthy = transport == TransportState::open;
  // The peer's TCP FIN is awaited before ours (the header says why).
  const bool fin_may_go = drained && (!peer_closed_first || now >= started_ + peer_fin_wait);
  CloseAction act = CloseAction::none;
  if (stage_ == CloseStage::draining && (!healthy || now >= deadline_ || fin_may_go)) {
    stage_ = CloseStage::fin_sent;
    deadline_ = now + fin_wait;
    act = CloseAction::send_fin;
  }
  // Not healthy: either the peer's FIN came (what this stage waits for) or the stream
  // broke and nothing more will come.
  if (stage_ == CloseStage::fin_sent && (!healthy || now >= deadline_)) {
    stage_ = CloseStage::released;
    act = act == CloseAction::send_fin ? CloseAction::send_fin_and_release : CloseAction::release;
  }
  return act;
}

}  // namespace esock::sockets
