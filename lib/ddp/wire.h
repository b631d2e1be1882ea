// DDP (RFC 5041 section 6) and RDMAP (RFC 5040 section 4) headers: one DDP segment is one
// MPA ULPDU. A checked view (SegmentView) validates once and then cannot fail; plain repr
// structs (DdpHeader, ReadRequest, Terminate) parse and emit. No overlays, no bitfields:
// named offsets and the big-endian helpers from lib/base.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "base/bytes.h"
#include "ddp/terminate.h"

namespace esock::ddp {

// RFC 5040 section 4.2: RDMAP opcodes carried in the low nibble of the RDMAP control octet;
// 8..11 are RFC 7306's (section 4.1), all untagged (wire_ext.h has their bodies); 12..15 are
// unassigned.
enum class RdmapOpcode : std::uint8_t {
  write = 0,
  read_request = 1,
  read_response = 2,
  send = 3,
  send_invalidate = 4,
  send_se = 5,
  send_se_invalidate = 6,
  terminate = 7,
  immediate_data = 8,
  immediate_data_se = 9,
  atomic_request = 10,
  atomic_response = 11,
};

inline constexpr std::uint8_t ddp_version = 1;    // RFC 5041 section 6.1 (DV)
inline constexpr std::uint8_t rdmap_version = 1;  // RFC 5040 section 4.2 (RV)

// Header sizes, including the RDMAP control octet in the DDP RsvdULP field.
inline constexpr std::size_t tagged_hdr_len = 14;     // RFC 5041 section 6.2
inline constexpr std::size_t untagged_hdr_len = 18;   // RFC 5041 section 6.3
inline constexpr std::size_t read_request_len = 28;   // RFC 5040 section 4.4
inline constexpr std::size_t terminate_ctrl_len = 4;  // RFC 5040 section 4.8
inline constexpr std::size_t terminate_max_len =
    terminate_ctrl_len + 2 + untagged_hdr_len + read_request_len;

// RFC 5040 section 5.1 / RFC 5041 section 5: the untagged queues RDMAP uses.
inline constexpr std::uint32_t qn_send = 0;
inline constexpr std::uint32_t qn_read_request = 1;
inline constexpr std::uint32_t qn_terminate = 2;

enum class WireError : std::uint8_t {
  ok,
  truncated,          // shorter than the header its control octets announce
  bad_ddp_version,    // DV != 1
  bad_rdmap_version,  // RV != 1
  opcode,             // opcode > 11, or an opcode used with the wrong buffer model
  terminate_layer,    // Terminate layer > 2
  terminate_hdrct,    // R without D, or trailing bytes after the copied headers
};

// Repr of the DDP header plus the RDMAP control octet (and Invalidate STag).
struct DdpHeader {
  bool tagged = false;
  bool last = true;
  std::uint8_t dv = ddp_version;
  std::uint8_t rv = rdmap_version;
  RdmapOpcode opcode = RdmapOpcode::send;
  // Tagged buffer model (RFC 5041 section 6.2).
  std::uint32_t stag = 0;
  std::uint64_t to = 0;
  // Untagged buffer model (RFC 5041 section 6.3). rsvd_ulp carries the Invalidate STag
  // for Send with Invalidate (RFC 5040 section 4.1); zero otherwise.
  std::uint32_t rsvd_ulp = 0;
  std::uint32_t qn = 0;
  std::uint32_t msn = 0;
  std::uint32_t mo = 0;

  std::size_t length() const { return tagged ? tagged_hdr_len : untagged_hdr_len; }
  friend bool operator==(const DdpHeader&, const DdpHeader&) = default;
};

// True when the opcode must travel in a tagged segment (RFC 5040 section 5: Write and
// Read Response are tagged, all others untagged).
constexpr bool opcode_is_tagged(RdmapOpcode op) {
  return op == RdmapOpcode::write || op == RdmapOpcode::read_response;
}
// The header length a ULPDU announces in its first (DDP control) octet: the T bit selects
// the buffer model (RFC 5041 section 6.1). For splitting an MPA ULPDU prefix into the
// header place_payload()/on_placed_segment() take and the payload after it.
constexpr std::size_t header_length(std::uint8_t ddp_ctrl) {
  return (ddp_ctrl & 0x80) ? tagged_hdr_len : untagged_hdr_len;
}
constexpr bool opcode_is_send(RdmapOpcode op) {
  return op == RdmapOpcode::send || op == RdmapOpcode::send_invalidate ||
         op == RdmapOpcode::send_se || op == RdmapOpcode::send_se_invalidate;
}

// Parses the header at the start of a ULPDU. Checks in the order a receiver must: length
// of the fixed part, DDP version (RFC 5041 section 7.2 reports it with the T bit's
// error type), RDMAP version, then the opcode and its buffer model. Reserved bits are
// ignored as RFC 5041 section 6.1 asks.
WireError parse(bytes_view in, DdpHeader& out);
// Writes length() octets; returns them, or 0 if out is too small.
std::size_t emit(const DdpHeader& h, mut_bytes out);

// Checked view over one ULPDU (DDP segment): header validated at construction.
class SegmentView {
 public:
  static WireError make(bytes_view ulpdu, SegmentView& out);
  const DdpHeader& hdr() const { return hdr_; }
  bytes_view header_bytes() const { return bytes_.first(hdr_.length()); }
  bytes_view payload() const { return bytes_.subspan(hdr_.length()); }
  bytes_view bytes() const { return bytes_; }

 private:
  DdpHeader hdr_;
  bytes_view bytes_;
};

// RDMA Read Request body (RFC 5040 section 4.4), after the untagged header on QN 1.
struct ReadRequest {
  std::uint32_t sink_stag = 0;
  std::uint64_t sink_to = 0;
  std::uint32_t size = 0;
  std::uint32_t src_stag = 0;
  std::uint64_t src_to = 0;
  friend bool operator==(const ReadRequest&, const ReadRequest&) = default;
};
WireError parse(bytes_view in, ReadRequest& out);  // needs exactly read_request_len octets
std::size_t emit(const ReadRequest& r, mut_bytes out);

// Terminate body (RFC 5040 section 4.8): Terminate Control (layer, etype, code, Hdrct
// M/D/R), then, when M or D is set, the 16-bit DDP Segment Length, the Terminated DDP
// Header if D (14 or 18 octets, by its own T bit), the Terminated RDMA Header if R
// (the 28-octet Read Request header).
struct Terminate {
  TerminateCause cause{};
  bool m = false;  // DDP Segment Length valid
  bool d = false;  // Terminated DDP Header included
  bool r = false;  // Terminated RDMA Header included
  std::uint16_t ddp_seg_len = 0;
  std::array<std::uint8_t, untagged_hdr_len> ddp_hdr{};
  std::size_t ddp_hdr_len = 0;
  std::array<std::uint8_t, read_request_len> rdma_hdr{};

  std::size_t length() const;
  friend bool operator==(const Terminate&, const Terminate&) = default;
};
WireError parse(bytes_view in, Terminate& out);
std::size_t emit(const Terminate& t, mut_bytes out);

}  // namespace esock::ddp
