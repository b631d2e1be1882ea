// MPA Request/Reply frames (RFC 5044 section 7.1) and the RFC 6581 enhanced connection
// establishment block (IRD/ORD, peer-to-peer, RTR types) carried at the front of the
// private data of revision 2 frames.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "base/bytes.h"

namespace esock::mpa {

// RFC 5044 section 7.1: 16-octet key, then |M|C|R|Res|Rev|PD_Length|, then private data.
inline constexpr std::size_t kKeyLen = 16;
inline constexpr std::size_t kFrameHeaderLen = 20;  // key + flags + Rev + PD_Length
inline constexpr std::size_t kOffFlags = 16;
inline constexpr std::size_t kOffRev = 17;
inline constexpr std::size_t kOffPdLength = 18;
// RFC 5044 section 7.1: "PD_Length ... MUST NOT be larger than 512".
inline constexpr std::size_t kMaxPrivateData = 512;
inline constexpr std::uint8_t kKeyReq[kKeyLen] = {'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R',
                                                  'e', 'q', ' ', 'F', 'r', 'a', 'm', 'e'};
inline constexpr std::uint8_t kKeyRep[kKeyLen] = {'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R',
                                                  'e', 'p', ' ', 'F', 'r', 'a', 'm', 'e'};

// Bits of the flags octet (octet 16).
inline constexpr std::uint8_t kFlagM = 0x80;  // receiver wants Markers (RFC 5044 7.1)
inline constexpr std::uint8_t kFlagC = 0x40;  // CRC (RFC 5044 7.1)
inline constexpr std::uint8_t kFlagR = 0x20;  // Reject, only in a Reply (RFC 5044 7.1)
// The first of RFC 5044's reserved bits. RFC 5044 section 7.1 says Res is sent as zero and
// ignored on receipt; Wireshark shows it as "Reserved". Linux siw (MPA_RR_FLAG_ENHANCED)
// and Chelsio cxgb4 (MPA_ENHANCED_RDMA_CONN) set it in revision 2 frames to say "private
// data starts with the RFC 6581 IRD/ORD block": siw's responder reads IRD/ORD only when it
// is set, and siw's initiator fails a revision 2 Reply without it. We accept frames with or
// without it and set it in every revision 2 frame we send, so siw negotiates IRD/ORD with us.
inline constexpr std::uint8_t kFlagEnhanced = 0x10;
// siw's experimental "GSO" bit (MPA_RR_FLAG_GSO_EXP, 0x08): a reserved bit, ignored.

inline constexpr std::uint8_t kRevision1 = 1;
inline constexpr std::uint8_t kRevision2 = 2;

// RFC 6581 section 7 (Enhanced MPA Request/Reply private data): the first 4 octets are
//   |P|L|  IRD (14 bits)  |W|R|  ORD (14 bits)  |
// P: peer-to-peer (RTR) mode; L, W, R: zero-length Send (FPDU), RDMA Write and RDMA Read
// RTR types. In a Request they list the types the initiator can send; in a Reply the
// responder sets exactly one, the type it wants to receive.
inline constexpr std::size_t kV2BlockLen = 4;
inline constexpr std::uint16_t kV2Peer2Peer = 0x8000;  // in the IRD word
inline constexpr std::uint16_t kV2RtrSend = 0x4000;    // in the IRD word
inline constexpr std::uint16_t kV2RtrWrite = 0x8000;   // in the ORD word
inline constexpr std::uint16_t kV2RtrRead = 0x4000;    // in the ORD word
inline constexpr std::uint16_t kV2IrdOrdMask = 0x3fff;

struct V2Block {
  bool p2p = false;
  bool rtr_send = false, rtr_write = false, rtr_read = false;
  std::uint16_t ird = 0, ord = 0;  // 14 bits each

  static V2Block parse(const std::uint8_t* p);  // reads kV2BlockLen octets
  void emit(std::uint8_t* p) const;             // writes kV2BlockLen octets
  bool operator==(const V2Block&) const = default;
};

enum class FrameError : std::uint8_t {
  none,
  truncated,          // fewer octets than the header / PD_Length says (parse: need more)
  bad_key,            // neither "MPA ID Req Frame" nor "MPA ID Rep Frame"
  bad_revision,       // Rev other than 1 or 2 (RFC 5044 7.1: cannot interoperate)
  pd_too_long,        // PD_Length > 512
  missing_v2_block,   // Rev 2 Request/accepting Reply with less than 4 octets of PD
  reject_in_request,  // R set in a Request (RFC 5044 7.1: R is a Reply-only bit)
};
const char* to_string(FrameError e);

// Plain representation of a Request/Reply/Reject frame.
struct FrameRepr {
  bool request = true;    // key: Request or Reply
  bool markers = false;   // M
  bool crc = false;       // C
  bool reject = false;    // R
  bool enhanced = false;  // the 0x10 bit siw uses with Rev 2 (see kFlagEnhanced)
  std::uint8_t revision = kRevision1;
  std::optional<V2Block> v2;  // Rev 2: the RFC 6581 block at the front of the private data
  std::vector<std::uint8_t> private_data;  // ULP private data (after the v2 block)

  std::size_t pd_length() const { return private_data.size() + (v2 ? kV2BlockLen : 0); }
  std::size_t wire_size() const { return kFrameHeaderLen + pd_length(); }
  // Appends the frame to out. Precondition: pd_length() <= kMaxPrivateData.
  void emit(std::vector<std::uint8_t>& out) const;
};

// Checked view of a complete frame: constructed by check(), after which accessors cannot
// read out of bounds.
class FrameView {
 public:
  // Checks the header and the length. Returns the view or the reason it is not a frame.
  // FrameError::truncated means "not all there yet": feed more octets and check again.
  static FrameError check(bytes_view in, FrameView& out);
  bool request() const { return request_; }
  std::uint8_t flags() const { return data_[kOffFlags]; }
  std::uint8_t revision() const { return data_[kOffRev]; }
  std::size_t pd_length() const { return pd_len_; }
  bytes_view private_data() const { return data_.subspan(kFrameHeaderLen, pd_len_); }
  std::size_t size() const { return kFrameHeaderLen + pd_len_; }

 private:
  bytes_view data_;
  std::size_t pd_len_ = 0;
  bool request_ = false;
};

// Parses one frame from the front of `in` into out. On success *consumed is its size.
FrameError parse_frame(bytes_view in, FrameRepr& out, std::size_t* consumed = nullptr);

}  // namespace esock::mpa
