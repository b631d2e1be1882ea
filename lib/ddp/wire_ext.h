// RFC 7306 (RDMA Protocol Extensions) on the wire: the bodies of the Atomic Request and
// Atomic Response and the Immediate Data message, after the 18-octet untagged DDP header.
// The opcodes themselves are in wire.h (RdmapOpcode 8..11). RFC 7306 section 1.1 leaves the
// use of these messages to agreement between the ULPs: esock sends them only to a peer
// whose ESTP Hello said it takes them (docs/stream-protocol.md section 3), and a Qp accepts
// them only after set_rdmap_ext(true); without it they are an unexpected opcode, as for siw.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/bytes.h"
#include "ddp/wire.h"

namespace esock::ddp {

// RFC 7306 section 4.1 / 10.2: Atomic Responses travel on their own untagged queue.
inline constexpr std::uint32_t qn_atomic_response = 3;

inline constexpr std::size_t immediate_len = 8;         // RFC 7306 section 6.2
inline constexpr std::size_t atomic_request_len = 52;   // RFC 7306 section 5.2.1
inline constexpr std::size_t atomic_response_len = 12;  // section 5.2.2 (its Figure 6)

// RFC 7306 section 10.1, the Atomic Operation subcodes. 1 is reserved, 3..15 unassigned.
enum class AtomicOp : std::uint8_t { fetch_add = 0, cmp_swap = 2 };
constexpr bool atomic_op_known(std::uint8_t op) {
  return op == static_cast<std::uint8_t>(AtomicOp::fetch_add) ||
         op == static_cast<std::uint8_t>(AtomicOp::cmp_swap);
}

// RFC 7306 section 5.2.1. `op` is the raw 4-bit field (the Responder refuses the ones
// atomic_op_known() does not name); the 28 reserved bits are sent as 0 and ignored.
// For FetchAdd, add_swap is the Add Data and add_swap_mask the field boundaries (section
// 5.1.1); compare and compare_mask are not used (sent as 0 and all ones).
struct AtomicRequest {
  std::uint8_t op = 0;
  std::uint32_t req_id = 0;
  std::uint32_t stag = 0;
  std::uint64_t to = 0;
  std::uint64_t add_swap = 0;
  std::uint64_t add_swap_mask = 0;
  std::uint64_t compare = 0;
  std::uint64_t compare_mask = ~std::uint64_t{0};
  friend bool operator==(const AtomicRequest&, const AtomicRequest&) = default;
};
WireError parse(bytes_view in, AtomicRequest& out);  // exactly atomic_request_len octets
std::size_t emit(const AtomicRequest& r, mut_bytes out);

// RFC 7306 section 5.2.2.
struct AtomicResponse {
  std::uint32_t req_id = 0;
  std::uint64_t original = 0;
  friend bool operator==(const AtomicResponse&, const AtomicResponse&) = default;
};
WireError parse(bytes_view in, AtomicResponse& out);  // exactly atomic_response_len octets
std::size_t emit(const AtomicResponse& r, mut_bytes out);

constexpr bool opcode_is_immediate(RdmapOpcode op) {
  return op == RdmapOpcode::immediate_data || op == RdmapOpcode::immediate_data_se;
}
constexpr bool opcode_is_rfc7306(RdmapOpcode op) {
  return static_cast<std::uint8_t>(op) >= static_cast<std::uint8_t>(RdmapOpcode::immediate_data);
}

}  // namespace esock::ddp
