// What the software RNIC engine (engine.h) sends through: the transmit half of a transport.
// A kernel TCP socket, an in-memory pipe (byte_stream_engine.h) or a lib/tcp connection
// (utcp/endpoint.h) implements it; the engine decides what to frame and when, the transport
// only moves octets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "base/bytes.h"
#include "mpa/framer.h"

namespace esock::rnic {

class Transport {
 public:
  virtual ~Transport() = default;
  // An MPA Request/Reply/Reject (RFC 5044 section 7): small, sent before any FPDU, copied.
  // False when the transport could not take all of it.
  virtual bool send_frame(bytes_view frame) = 0;
  // The largest FPDU, in octets on the wire, the transport carries in one segment: the
  // EMSS of RFC 5044 section 9, which MULPDU is computed from; 0 while it cannot send at
  // all (not connected yet, or gone). `markers`: the FPDU carries Markers (a transport that
  // gathers pieces may want smaller FPDUs then).
  virtual std::size_t max_fpdu(bool markers) const = 0;
  // Room for an FPDU of fpdu_len octets now (back-pressure: the engine frames nothing until
  // there is, so a DDP segment is never half sent).
  virtual bool can_send(std::size_t fpdu_len) const = 0;
  // One FPDU as one record, in wire order (mpa::Framer::frame_pieces). Pieces that are not
  // `owned` are views of registered memory belonging to DDP segment seg_id; a transport
  // that sends them by reference reports the segment done through Engine::on_acked once no
  // copy can be needed again. False if the transport refused it (a local error).
  virtual bool send_fpdu(std::span<const mpa::FramePiece> pieces, std::uint64_t seg_id) = 0;
};

}  // namespace esock::rnic
