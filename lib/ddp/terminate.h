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
inline constexpr TerminateCause rdmap_catastrophic{layer_rdmap, rdmap_local_catastrophic, 0x00};
// Remote Protection Error.
inline constexpr TerminateCause rdmap_invalid_stag{layer_rdmap, rdmap_remote_protection, 0x00};
inline constexpr TerminateCause rdmap_base_bounds{layer_rdmap, rdmap_remote_protection, 0x01};
inline constexpr TerminateCause rdmap_access_rights{layer_rdmap, rdmap_remote_protection, 0x02};
inline constexpr TerminateCause rdmap_stag_not_associated{layer_rdmap, rdmap_remote_protection,
                                                          0x03};
inline constexpr TerminateCause rdmap_to_wrap{layer_rdmap, rdmap_remote_protection, 0x04};
inline constexpr TerminateCause rdmap_prot_cannot_invalidate{layer_rdmap, rdmap_remote_protection,
                                                             0x09};
inline constexpr TerminateCause rdmap_prot_unspecified{layer_rdmap, rdmap_remote_protection, 0xff};
// Remote Operation Error.
inline constexpr TerminateCause rdmap_invalid_version{layer_rdmap, rdmap_remote_operation, 0x05};
inline constexpr TerminateCause rdmap_unexpected_opcode{layer_rdmap, rdmap_remote_operation, 0x06};
inline constexpr TerminateCause rdmap_catastrophic_stream{layer_rdmap, rdmap_remote_operation,
                                                          0x07};
inline constexpr TerminateCause rdmap_catastrophic_global{layer_rdmap, rdmap_remote_operation,
                                                          0x08};
inline constexpr TerminateCause rdmap_op_cannot_invalidate{layer_rdmap, rdmap_remote_operation,
                                                           0x09};
inline constexpr TerminateCause rdmap_op_unspecified{layer_rdmap, rdmap_remote_operation, 0xff};

// --- DDP, layer 1 (RFC 5041 section 7.2) ---
inline constexpr TerminateCause ddp_catastrophic{layer_ddp, ddp_local_catastrophic, 0x00};
// Tagged Buffer Error.
inline constexpr TerminateCause ddp_invalid_stag{layer_ddp, ddp_tagged_buffer, 0x00};
inline constexpr TerminateCause ddp_base_bounds{layer_ddp, ddp_tagged_buffer, 0x01};
inline constexpr TerminateCause ddp_stag_not_associated{layer_ddp, ddp_tagged_buffer, 0x02};
inline constexpr TerminateCause ddp_to_wrap{layer_ddp, ddp_tagged_buffer, 0x03};
inline constexpr TerminateCause ddp_tagged_invalid_version{layer_ddp, ddp_tagged_buffer, 0x04};
// Untagged Buffer Error.
inline constexpr TerminateCause ddp_invalid_qn{layer_ddp, ddp_untagged_buffer, 0x01};
inline constexpr TerminateCause ddp_msn_no_buffer{layer_ddp, ddp_untagged_buffer, 0x02};
inline constexpr TerminateCause ddp_msn_range{layer_ddp, ddp_untagged_buffer, 0x03};
inline constexpr TerminateCause ddp_invalid_mo{layer_ddp, ddp_untagged_buffer, 0x04};
inline constexpr TerminateCause ddp_message_too_long{layer_ddp, ddp_untagged_buffer, 0x05};
inline constexpr TerminateCause ddp_untagged_invalid_version{layer_ddp, ddp_untagged_buffer, 0x06};

// --- LLP (MPA), layer 2 (RFC 5044 section 8, RFC 6581) ---
inline constexpr TerminateCause llp_connection_lost{layer_llp, llp_mpa, 0x01};
inline constexpr TerminateCause llp_crc_error{layer_llp, llp_mpa, 0x02};
// "MPA Marker and ULPDU Length field mismatch": the marker error and the ULPDU length
// error are one code in RFC 5044.
inline constexpr TerminateCause llp_marker_length_mismatch{layer_llp, llp_mpa, 0x03};
inline constexpr TerminateCause llp_invalid_request_reply{layer_llp, llp_mpa, 0x04};
// RFC 6581 (enhanced connection establishment, MPA v2).
inline constexpr TerminateCause llp_local_catastrophic{layer_llp, llp_mpa, 0x05};
inline constexpr TerminateCause llp_insufficient_ird{layer_llp, llp_mpa, 0x06};
inline constexpr TerminateCause llp_no_matching_rtr{layer_llp, llp_mpa, 0x07};

}  // namespace term
}  // namespace esock::ddp
