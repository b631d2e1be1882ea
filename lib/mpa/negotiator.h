// MPA connection setup (RFC 5044 section 7.1, RFC 6581), both roles, no I/O: feed it the
// octets the peer sent, send what take_output() returns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/bytes.h"
#include "mpa/deframer.h"
#include "mpa/wire.h"

namespace esock::mpa {

enum class Policy : std::uint8_t { refuse, allow, require };
enum class Rtr : std::uint8_t { none, send, write, read };  // RFC 6581 zero-length RTR types

struct Config {
  bool initiator = true;
  std::uint8_t revision = 2;  // 1 or 2; a v2 responder answers a v1 request with v1
  // require: ask the peer to send us Markers (our M=1); allow: don't ask, but send them if
  // the peer asks; refuse: don't ask, and reject (responder) / fail (initiator) if it asks.
  Policy markers = Policy::allow;
  // Same shape for C. RFC 5044 7.1: CRCs are used when either frame has C=1, so "allow"
  // means C=0 in our frame but CRC on if the peer sets C; "refuse" rejects/fails then.
  Policy crc = Policy::require;
  std::uint16_t ird = 16, ord = 16;  // v2 only (RFC 6581), at most 0x3fff
  bool p2p = false;                  // initiator: request peer-to-peer mode (an RTR)
  bool rtr_send = true, rtr_write = true, rtr_read = true;  // RTR types we support
  std::vector<std::uint8_t> private_data;                   // ULP private data (after the v2 block)
};

struct Negotiated {
  std::uint8_t revision = 0;
  bool markers_tx = false;  // we must put Markers into what we send (peer's M)
  bool markers_rx = false;  // the peer puts Markers into what we receive (our M)
  bool crc = false;
  // What this side may use: ird = RDMA Read Requests we accept at once, ord = ones we may
  // have outstanding. Revision 1 has no exchange: our configured values are reported.
  std::uint16_t ird = 0, ord = 0;
  // p2p with rtr != none: the initiator must send a zero-length RTR message of that type as
  // its first FPDU, and the responder must receive it before it sends any FPDU (RFC 6581).
  // Without RTR, RFC 5044 7.1 still has the responder wait for the initiator's first FPDU.
  bool p2p = false;
  Rtr rtr = Rtr::none;
  std::vector<std::uint8_t> peer_private_data;  // peer's ULP private data (v2 block removed)
};

class Negotiator {
 public:
  explicit Negotiator(Config);

  // Consumes at most up to the end of the peer's frame: octets after it belong to the FPDU
  // stream, so the caller hands feed's unconsumed tail to the Deframer.
  std::size_t feed(bytes_view in);
  // The transport closed before the peer's frame was complete: fails (truncated frame).
  void peer_closed();

  std::vector<std::uint8_t> take_output();  // Request / Reply / Reject octets to send

  enum class State { in_progress, established, rejected, failed };
  State state() const { return state_; }
  const Negotiated& result() const { return result_; }
  const std::string& error() const { return error_; }
  // The Terminate to send when failing after the exchange (RFC 6581 codes 0x06, 0x07 or an
  // invalid Reply 0x04); layer 0 when none is due.
  TerminateCode terminate() const { return term_; }

 private:
  void on_frame(const FrameRepr& f);
  void on_request(const FrameRepr& f);
  void on_reply(const FrameRepr& f);
  void send(const FrameRepr& f);
  void fail(std::string why, std::uint8_t llp_code = 0);
  void reject(FrameRepr reply, std::string why);

  Config cfg_;
  State state_ = State::in_progress;
  Negotiated result_;
  std::string error_;
  TerminateCode term_;
  std::vector<std::uint8_t> out_;
  std::vector<std::uint8_t> in_;  // the peer's frame so far
  std::uint8_t sent_revision_ = 0;
};

const char* to_string(Negotiator::State s);
const char* to_string(Rtr r);  // "none", "send", "write", "read"

}  // namespace esock::mpa
