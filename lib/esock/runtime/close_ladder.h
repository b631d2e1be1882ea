// The close of a DDPMODE connection (docs/sockets.md, "close"), as an engine with no I/O:
// the runtime starts it when the last descriptor goes, then each progress round hands it
// (now, the transport's state, whether the output has drained) and does what it answers.
// One ladder for ESTP stream sockets and RAWMODE; only what "drained" means differs
// (stream: the engine has nothing left for the verbs and no framed output waits; RAWMODE:
// no framed output waits).
//
//   open --start--> draining --drained, deadline (2 s) or transport not healthy--> fin_sent
//   fin_sent --deadline (1 s) or transport not healthy--> released
//
// A transport that broke (ECONNRESET) or ended (the peer's FIN) has nothing to wait for:
// from draining it sends the FIN and releases in the same round.
//
// A peer that closed first (its ESTP FIN came before ours was queued, by close or
// shutdown) sends its TCP FIN once its ESTP FIN is delivered, a moment after our
// application read the end of stream and closed.
// Our TCP FIN then waits in draining for the peer's (at most peer_fin_wait), so that
// this side closes passively as a kernel socket would (CLOSE-WAIT, LAST-ACK): sent at once,
// it crossed the peer's and left both sides in TIME-WAIT for 2 MSL, a server holding every
// connection its clients closed (issue 18: 350 of 2000 in CI's scale test).
#pragma once

#include <cstdint>

#include "base/time.h"
#include "esock/providers/transport_state.h"

namespace esock::sockets {

enum class CloseStage : std::uint8_t {
  open,      // not closed by the application
  draining,  // FIN queued after the output (ESTP FIN or RAWMODE shut_write); waiting for it
             // to leave, at most drain_time
  fin_sent,  // TCP FIN sent; waiting (at most fin_wait) for the peer's, so the peer sees an
             // orderly close rather than a reset
  released,  // the transport and descriptors can go
};

enum class CloseAction : std::uint8_t {
  none,
  send_fin,              // ProviderConn::shutdown()
  send_fin_and_release,  // both, in this order, in the same round
  release,               // Conn::release()
};

constexpr bool sends_fin(CloseAction a) {
  return a == CloseAction::send_fin || a == CloseAction::send_fin_and_release;
}
constexpr bool releases(CloseAction a) {
  return a == CloseAction::release || a == CloseAction::send_fin_and_release;
}

class CloseLadder {
 public:
  static constexpr Duration drain_time = 2s;
  static constexpr Duration fin_wait = 1s;
  // How long our TCP FIN waits for the peer's when the peer closed first (counted from
  // start): a peer that only shut its writing side and keeps its socket holds ours no
  // longer than this. (1 s was too short for 10,000 clients closing at once on a loaded
  // machine: a quarter of the server's connections crossed FINs and sat in TIME-WAIT.)
  static constexpr Duration peer_fin_wait = 2s;

  CloseStage stage() const { return stage_; }
  bool closing() const { return stage_ != CloseStage::open; }
  // When the current wait ends (draining, fin_sent); meaningless otherwise.
  Instant deadline() const { return deadline_; }

  // close(): the caller has queued the FIN after the output. Only from open.
  void start(Instant now);
  // One progress round, with ProviderConn::transport_state(). A deadline expires at
  // exactly its instant. peer_closed_first: the peer's end of stream arrived before ours
  // was queued (estp::Stream::closed_after_peer), so its TCP FIN is on the way.
  CloseAction step(Instant now, TransportState transport, bool drained,
                   bool peer_closed_first = false);

 private:
  CloseStage stage_ = CloseStage::open;
  Instant deadline_{};
  Instant started_{};
};

}  // namespace esock::sockets
