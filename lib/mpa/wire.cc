#include "mpa/wire.h"

#include <cstring>

#include "base/endian.h"

namespace esock::mpa {

V2Block V2Block::parse(const std::uint8_t* p) {
  const std::uint16_t ird_word = load_be16(p);
  const std::uint16_t ord_word = load_be16(p + 2);
  V2Block b;
  b.p2p = (ird_word & kV2Peer2Peer) != 0;
  b.rtr_send = (ird_word & kV2RtrSend) != 0;
  b.rtr_write = (ord_word & kV2RtrWrite) != 0;
  b.rtr_read = (ord_word & kV2RtrRead) != 0;
  b.ird = static_cast<std::uint16_t>(ird_word & kV2IrdOrdMask);
  b.ord = static_cast<std::uint16_t>(ord_word & kV2IrdOrdMask);
  return b;
}

void V2Block::emit(std::uint8_t* p) const {
  std::uint16_t ird_word = static_cast<std::uint16_t>(ird & kV2IrdOrdMask);
  std::uint16_t ord_word = static_cast<std::uint16_t>(ord & kV2IrdOrdMask);
  if (p2p) ird_word |= kV2Peer2Peer;
  if (rtr_send) ird_word |= kV2RtrSend;
  if (rtr_write) ord_word |= kV2RtrWrite;
  if (rtr_read) ord_word |= kV2RtrRead;
  store_be16(p, ird_word);
  store_be16(p + 2, ord_word);
}

const char* to_string(FrameError e) {
  switch (e) {
    case FrameError::none:
      return "no error";
    case FrameError::truncated:
      return "truncated MPA Request/Reply frame";
    case FrameError::bad_key:
      return "bad MPA key (not \"MPA ID Req Frame\"/\"MPA ID Rep Frame\")";
    case FrameError::bad_revision:
      return "unsupported MPA revision (only 1 and 2)";
    case FrameError::pd_too_long:
      return "MPA PD_Length larger than 512";
    case FrameError::missing_v2_block:
      return "MPA revision 2 frame without the RFC 6581 IRD/ORD block";
    case FrameError::reject_in_request:
      return "R (reject) bit set in an MPA Request";
  }
  return "unknown MPA frame error";
}

void FrameRepr::emit(std::vector<std::uint8_t>& out) const {
  const std::size_t base = out.size();
  out.resize(base + wire_size());
  std::uint8_t* p = out.data() + base;
  std::memcpy(p, request ? kKeyReq : kKeyRep, kKeyLen);
  std::uint8_t flags = 0;
  if (markers) flags |= kFlagM;
  if (crc) flags |= kFlagC;
  if (reject) flags |= kFlagR;
  if (enhanced) flags |= kFlagEnhanced;
  p[kOffFlags] = flags;
  p[kOffRev] = revision;
  store_be16(p + kOffPdLength, static_cast<std::uint16_t>(pd_length()));
  std::uint8_t* pd = p + kFrameHeaderLen;
  if (v2) {
    v2->emit(pd);
    pd += kV2BlockLen;
  }
  if (!private_data.empty()) std::memcpy(pd, private_data.data(), private_data.size());
}

FrameError FrameView::check(bytes_view in, FrameView& out) {
  // Check the key as soon as its octets are there, so garbage fails before 20 octets come.
  const std::size_t have_key = in.size() < kKeyLen ? in.size() : kKeyLen;
  const bool req = have_key == 0 || std::memcmp(in.data(), kKeyReq, have_key) == 0;
  const bool rep = have_key == 0 || std::memcmp(in.data(), kKeyRep, have_key) == 0;
  if (!req && !rep) return FrameError::bad_key;
  if (in.size() < kFrameHeaderLen) return FrameError::truncated;
  const std::uint8_t rev = in[kOffRev];
  if (rev != kRevision1 && rev != kRevision2) return FrameError::bad_revision;
  const std::size_t pd_len = load_be16(in.data() + kOffPdLength);
  if (pd_len > kMaxPrivateData) return FrameError::pd_too_long;
  if (in.size() - kFrameHeaderLen < pd_len) return FrameError::truncated;
  out.data_ = in.first(kFrameHeaderLen + pd_len);
  out.pd_len_ = pd_len;
  out.request_ = req;
  return FrameError::none;
}

FrameError parse_frame(bytes_view in, FrameRepr& out, std::size_t* consumed) {
  FrameView v;
  if (const FrameError e = FrameView::check(in, v); e != FrameError::none) return e;
  const std::uint8_t flags = v.flags();
  FrameRepr r;
  r.request = v.request();
  r.markers = (flags & kFlagM) != 0;
  r.crc = (flags & kFlagC) != 0;
  r.reject = (flags & kFlagR) != 0;
  r.enhanced = (flags & kFlagEnhanced) != 0;
  r.revision = v.revision();
  if (r.request && r.reject) return FrameError::reject_in_request;
  bytes_view pd = v.private_data();
  if (r.revision == kRevision2) {
    // RFC 6581 section 7: revision 2 frames start their private data with IRD/ORD. A Reject
    // may come without it (siw sends none), so there it is optional.
    if (pd.size() >= kV2BlockLen) {
      r.v2 = V2Block::parse(pd.data());
      pd = pd.subspan(kV2BlockLen);
    } else if (!r.reject) {
      return FrameError::missing_v2_block;
    }
  }
  r.private_data.assign(pd.begin(), pd.end());
  out = std::move(r);
  if (consumed) *consumed = v.size();
  return FrameError::none;
}

}  // namespace esock::mpa
