// Terminate causes: the {layer, error type, error code} triples of RFC 5040 section 7
// (RDMAP, layer 0), RFC 5041 section 7.2 (DDP, layer 1) and the LLP layer 2 codes that
// RFC 5044 section 8 and RFC 6581 define for MPA. Values as registered by
// IANA (RFC 6580). Every validation failure in lib/ddp maps to exactly one of these.
#pragma once

#include <cstdint>

namespace esock::ddp {

struct TerminateCause {
  std::uint8_t layer;  // 4 bits on the wire
  std::uint8_t type;   // 4 bits on the wire
  std::uint8_t code;
  friend constexpr bool operator==(const TerminateCause&, const TerminateCause&) = default;
};

namespace term {

// Layer field (RFC 5040 section 4.8).
inline constexpr std::uint8_t layer_rdmap = 0;
inline constexpr std::uint8_t layer_ddp = 1;
inline constexpr std::uint8_t layer_llp = 2;

// RDMAP error types (RFC 5040 section 7).
inline constexpr std::uint8_t rdmap_local_catastrophic = 0;
inline constexpr std::uint8_t rdmap_remote_protection = 1;
inline constexpr std::uint8_t rdmap_remote_operation = 2;

// DDP error types (RFC 5041 section 7.2).
inline constexpr std::uint8_t ddp_local_catastrophic = 0;
inline constexpr std::uint8_t ddp_tagged_buffer = 1;
inline constexpr std::uint8_t ddp_untagged_buffer = 2;

// LLP error type for MPA (RFC 5044 section 8): the only one defined.
inline constexpr std::uint8_t llp_mpa = 0;

// --- RDMAP, layer 0 (RFC 5040 section 7) ---
// Local Catastrophic: the error code is "all" values; 0 is what we send.
inline constexpr TerminateCause rdmap_catastrophic{0, 0, 0x00};
// Remote Protection Error.
inline constexpr TerminateCause rdmap_invalid_stag{0, 1, 0x00};
inline constexpr TerminateCause rdmap_base_bounds{0, 1, 0x01};
inline constexpr TerminateCause rdmap_access_rights{0, 1, 0x02};
inline constexpr TerminateCause rdmap_stag_not_associated{0, 1, 0x03};
inline constexpr TerminateCause rdmap_to_wrap{0, 1, 0x04};
inline constexpr TerminateCause rdmap_prot_cannot_invalidate{0, 1, 0x09};
inline constexpr TerminateCause rdmap_prot_unspecified{0, 1, 0xff};
// Remote Operation Error.
inline constexpr TerminateCause rdmap_invalid_version{0, 2, 0x05};
inline constexpr TerminateCause rdmap_unexpected_opcode{0, 2, 0x06};
inline constexpr TerminateCause rdmap_catastrophic_stream{0, 2, 0x07};
inline constexpr TerminateCause rdmap_catastrophic_global{0, 2, 0x08};
inline constexpr TerminateCause rdmap_op_cannot_invalidate{0, 2, 0x09};
inline constexpr TerminateCause rdmap_op_unspecified{0, 2, 0xff};

// --- DDP, layer 1 (RFC 5041 section 7.2) ---
inline constexpr TerminateCause ddp_catastrophic{1, 0, 0x00};
// Tagged Buffer Error.
inline constexpr TerminateCause ddp_invalid_stag{1, 1, 0x00};
inline constexpr TerminateCause ddp_base_bounds{1, 1, 0x01};
inline constexpr TerminateCause ddp_stag_not_associated{1, 1, 0x02};
inline constexpr TerminateCause ddp_to_wrap{1, 1, 0x03};
inline constexpr TerminateCause ddp_tagged_invalid_version{1, 1, 0x04};
// Untagged Buffer Error.
inline constexpr TerminateCause ddp_invalid_qn{1, 2, 0x01};
inline constexpr TerminateCause ddp_msn_no_buffer{1, 2, 0x02};
inline constexpr TerminateCause ddp_msn_range{1, 2, 0x03};
inline constexpr TerminateCause ddp_invalid_mo{1, 2, 0x04};
inline constexpr TerminateCause ddp_message_too_long{1, 2, 0x05};
inline constexpr TerminateCause ddp_untagged_invalid_version{1, 2, 0x06};

// --- LLP (MPA), layer 2 (RFC 5044 section 8, RFC 6581) ---
inline constexpr TerminateCause llp_connection_lost{2, 0, 0x01};
inline constexpr TerminateCause llp_crc_error{2, 0, 0x02};
// "MPA Marker and ULPDU Length field mismatch": the marker error and the ULPDU length
// error are one code in RFC 5044.
inline constexpr TerminateCause llp_marker_length_mismatch{2, 0, 0x03};
inline constexpr TerminateCause llp_invalid_request_reply{2, 0, 0x04};
// RFC 6581 (enhanced connection establishment, MPA v2).
inline constexpr TerminateCause llp_local_catastrophic{2, 0, 0x05};
inline constexpr TerminateCause llp_insufficient_ird{2, 0, 0x06};
inline constexpr TerminateCause llp_no_matching_rtr{2, 0, 0x07};

}  // namespace term
}  // namespace esock::ddp
