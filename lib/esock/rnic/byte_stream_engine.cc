#include "esock/rnic/byte_stream_engine.h"

#include <cstring>

namespace esock::rnic {

ByteStreamEngine::ByteStreamEngine(ByteStreamConfig cfg, Context& ctx)
    : emss_(cfg.emss), high_water_(cfg.tx_high_water), engine_(cfg.engine, ctx, *this) {
  engine_.start();
}

void ByteStreamEngine::on_bytes(bytes_view in) {
  // While negotiating the engine takes the peer's MPA frame only; the rest is FPDU stream.
  while (!in.empty()) {
    const std::size_t used = engine_.feed(in);
    if (used == 0) break;
    in = in.subspan(used);
  }
  engine_.transmit();
}

bool ByteStreamEngine::send_frame(bytes_view frame) {
  out_.append(frame);
  return true;
}

// A byte stream copies everything, so a segment's registered memory is free again at once
// (the engine's queue pair completes Sends/Writes when they are framed).
bool ByteStreamEngine::send_fpdu(std::span<const mpa::FramePiece> pieces, std::uint64_t) {
  for (const mpa::FramePiece& p : pieces) out_.append(p.bytes);
  return true;
}

}  // namespace esock::rnic
