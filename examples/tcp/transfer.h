// One connection's transfer for esock_tcp: send a generated stream, receive (and digest)
// what arrives, or echo it back; FIN when done, RST when asked. Driven by step() from the
// poll loop; no waiting of its own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/time.h"
#include "options.h"
#include "stream.h"
#include "tcp/stack/stack.h"

namespace esock::tcp::tool {

enum class End {
  running,
  fin,      // both directions finished with FIN, everything acknowledged
  aborted,  // we reset it (--abort-after)
  reset,    // the peer reset it
  failed,   // closed with another error (timeout...)
};
const char* to_string(End e);

class Transfer {
 public:
  Transfer(const Options& o, Stack& stack, Connection* c, Instant start);
  // Moves what can be moved now. Returns true if it did anything.
  bool step(Instant now);
  End end() const { return end_; }
  // The connection, until the transfer lets go of it (abort) or the owner releases it.
  Connection* connection() const { return conn_; }

  const Digest& sent() const { return sent_; }
  const Digest& received() const { return recv_; }
  Instant start() const { return start_; }
  Instant finish() const { return finish_; }
  int error() const { return error_; }
  // Snapshot taken when the transfer ended (or now, while it runs).
  std::optional<TcbInfo> info;
  std::optional<TcbStats> stats;

 private:
  bool pump_send(Instant now);
  bool pump_recv(Instant now);
  bool pump_echo();
  void done(Instant now, End e);

  const Options& o_;
  Stack& stack_;
  Connection* conn_;
  Generator gen_;
  Digest sent_, recv_;
  std::vector<std::uint8_t> txbuf_, rxbuf_;
  std::size_t tx_off_ = 0, tx_len_ = 0;  // unsent part of txbuf_
  std::uint64_t generated_ = 0;
  std::vector<std::uint8_t> echo_;  // received, not yet sent back
  std::size_t echo_off_ = 0;
  bool fin_sent_ = false;
  Instant start_, finish_;
  End end_ = End::running;
  int error_ = 0;
};

}  // namespace esock::tcp::tool
