// What a provider connection's transport says of its byte stream (RFC 5040 section 5: the
// LLP under RDMAP), as ProviderConn::transport_state() reports it.
#pragma once

#include <cerrno>
#include <cstdint>

namespace esock::sockets {

enum class TransportState : std::uint8_t {
  open,    // healthy: octets flow both ways
  ended,   // the peer closed its direction in order (TCP FIN after everything)
  broken,  // reset, a send the kernel refused, or a Terminate sent or received (RFC 5040
           // section 5.3): the stream is over
};

// The errno a broken transport reads as, for the calls that report it.
inline constexpr int broken_transport_errno = ECONNRESET;

}  // namespace esock::sockets
