// Segments that find no connection: CLOSED (RFC 9293 3.10.7.1) and LISTEN (3.10.7.2).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "tcp/wire/tcp.h"

namespace esock::tcp {

// The reset a CLOSED port answers with, or nothing when the segment is itself a reset.
// If the ACK bit is off: <SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK>, else <SEQ=SEG.ACK><CTL=RST>.
std::optional<TcpRepr> reset_for(const TcpRepr& seg, std::size_t payload_len);

enum class ListenVerdict : std::uint8_t {
  drop,   // an RST (ignored), or neither SYN nor ACK
  reset,  // an ACK: answer with reset_for()
  syn,    // a SYN: open a connection in SYN-RECEIVED (if the backlog allows)
};
ListenVerdict listen_verdict(const TcpRepr& seg);

}  // namespace esock::tcp
