#include "ddp/wire.h"

#include "base/endian.h"

namespace esock::ddp {
namespace {

// RFC 5041 section 6.1: DDP control octet |T|L| Rsvd(4) |DV(2)|.
constexpr std::uint8_t ddp_t_bit = 0x80;
constexpr std::uint8_t ddp_l_bit = 0x40;
constexpr std::uint8_t ddp_dv_mask = 0x03;
// RFC 5040 section 4.2: RDMAP control octet |RV(2)| Rsvd(2) | Opcode(4)|.
constexpr int rdmap_rv_shift = 6;
constexpr std::uint8_t rdmap_opcode_mask = 0x0f;

// Named offsets inside a ULPDU (the MPA length is not part of it).
constexpr std::size_t off_ddp_ctrl = 0;
constexpr std::size_t off_rdmap_ctrl = 1;
constexpr std::size_t off_stag = 2;      // tagged
constexpr std::size_t off_to = 6;        // tagged
constexpr std::size_t off_rsvd_ulp = 2;  // untagged
constexpr std::size_t off_qn = 6;
constexpr std::size_t off_msn = 10;
constexpr std::size_t off_mo = 14;

// Read Request body offsets (RFC 5040 section 4.4).
constexpr std::size_t off_rr_sink_stag = 0;
constexpr std::size_t off_rr_sink_to = 4;
constexpr std::size_t off_rr_size = 12;
constexpr std::size_t off_rr_src_stag = 16;
constexpr std::size_t off_rr_src_to = 20;

// Terminate Control (RFC 5040 section 4.8): |Layer(4)|EType(4)|Code(8)|M|D|R|Rsvd(13)|.
constexpr std::uint8_t hdrct_m = 0x80;
constexpr std::uint8_t hdrct_d = 0x40;
constexpr std::uint8_t hdrct_r = 0x20;

}  // namespace

WireError parse(bytes_view in, DdpHeader& out) {
  if (in.size() < 2) return WireError::truncated;
  const std::uint8_t dc = in[off_ddp_ctrl];
  const std::uint8_t rc = in[off_rdmap_ctrl];
  out.tagged = (dc & ddp_t_bit) != 0;
  out.last = (dc & ddp_l_bit) != 0;
  out.dv = dc & ddp_dv_mask;
  out.rv = static_cast<std::uint8_t>(rc >> rdmap_rv_shift);
  // The version checks come first: with a foreign version nothing else in the header
  // can be trusted (RFC 5041 section 7.2, RFC 5040 section 7).
  if (out.dv != ddp_version) return WireError::bad_ddp_version;
  if (out.rv != rdmap_version) return WireError::bad_rdmap_version;
  const std::uint8_t op = rc & rdmap_opcode_mask;
  if (op > static_cast<std::uint8_t>(RdmapOpcode::atomic_response)) return WireError::opcode;
  out.opcode = static_cast<RdmapOpcode>(op);
  if (opcode_is_tagged(out.opcode) != out.tagged) return WireError::opcode;
  if (in.size() < out.length()) return WireError::truncated;
  if (out.tagged) {
    out.stag = load_be32(&in[off_stag]);
    out.to = load_be64(&in[off_to]);
    out.rsvd_ulp = out.qn = out.msn = out.mo = 0;
  } else {
    out.rsvd_ulp = load_be32(&in[off_rsvd_ulp]);
    out.qn = load_be32(&in[off_qn]);
    out.msn = load_be32(&in[off_msn]);
    out.mo = load_be32(&in[off_mo]);
    out.stag = 0;
    out.to = 0;
  }
  return WireError::ok;
}

std::size_t emit(const DdpHeader& h, mut_bytes out) {
  const std::size_t n = h.length();
  if (out.size() < n) return 0;
  out[off_ddp_ctrl] = static_cast<std::uint8_t>((h.tagged ? ddp_t_bit : 0) |
                                                (h.last ? ddp_l_bit : 0) | (h.dv & ddp_dv_mask));
  out[off_rdmap_ctrl] = static_cast<std::uint8_t>(((h.rv & 0x3) << rdmap_rv_shift) |
                                                  (static_cast<std::uint8_t>(h.opcode) & 0x0f));
  if (h.tagged) {
    store_be32(&out[off_stag], h.stag);
    store_be64(&out[off_to], h.to);
  } else {
    store_be32(&out[off_rsvd_ulp], h.rsvd_ulp);
    store_be32(&out[off_qn], h.qn);
    store_be32(&out[off_msn], h.msn);
    store_be32(&out[off_mo], h.mo);
  }
  return n;
}

WireError SegmentView::make(bytes_view ulpdu, SegmentView& out) {
  DdpHeader h;
  const WireError e = parse(ulpdu, h);
  if (e != WireError::ok) return e;
  out.hdr_ = h;
  out.bytes_ = ulpdu;
  return WireError::ok;
}

WireError parse(bytes_view in, ReadRequest& out) {
  if (in.size() < read_request_len) return WireError::truncated;
  out.sink_stag = load_be32(&in[off_rr_sink_stag]);
  out.sink_to = load_be64(&in[off_rr_sink_to]);
  out.size = load_be32(&in[off_rr_size]);
  out.src_stag = load_be32(&in[off_rr_src_stag]);
  out.src_to = load_be64(&in[off_rr_src_to]);
  return WireError::ok;
}

std::size_t emit(const ReadRequest& r, mut_bytes out) {
  if (out.size() < read_request_len) return 0;
  store_be32(&out[off_rr_sink_stag], r.sink_stag);
  store_be64(&out[off_rr_sink_to], r.sink_to);
  store_be32(&out[off_rr_size], r.size);
  store_be32(&out[off_rr_src_stag], r.src_stag);
  store_be64(&out[off_rr_src_to], r.src_to);
  return read_request_len;
}

std::size_t Terminate::length() const {
  std::size_t n = terminate_ctrl_len;
  if (m || d) n += 2;
  if (d) n += ddp_hdr_len;
  if (r) n += read_request_len;
  return n;
}

WireError parse(bytes_view in, Terminate& out) {
  if (in.size() < terminate_ctrl_len) return WireError::truncated;
  out = Terminate{};
  out.cause.layer = static_cast<std::uint8_t>(in[0] >> 4);
  out.cause.type = in[0] & 0x0f;
  out.cause.code = in[1];
  if (out.cause.layer > term::layer_llp) return WireError::terminate_layer;
  out.m = (in[2] & hdrct_m) != 0;
  out.d = (in[2] & hdrct_d) != 0;
  out.r = (in[2] & hdrct_r) != 0;
  // The RDMA header copy follows the DDP header copy; it cannot stand alone.
  if (out.r && !out.d) return WireError::terminate_hdrct;
  std::size_t off = terminate_ctrl_len;
  if (out.m || out.d) {
    if (in.size() - off < 2) return WireError::truncated;
    out.ddp_seg_len = load_be16(&in[off]);
    off += 2;
  }
  if (out.d) {
    if (in.size() - off < 1) return WireError::truncated;
    out.ddp_hdr_len = (in[off] & 0x80) ? tagged_hdr_len : untagged_hdr_len;
    if (in.size() - off < out.ddp_hdr_len) return WireError::truncated;
    for (std::size_t i = 0; i < out.ddp_hdr_len; ++i) out.ddp_hdr[i] = in[off + i];
    off += out.ddp_hdr_len;
  }
  if (out.r) {
    if (in.size() - off < read_request_len) return WireError::truncated;
    for (std::size_t i = 0; i < read_request_len; ++i) out.rdma_hdr[i] = in[off + i];
    off += read_request_len;
  }
  if (off != in.size()) return WireError::terminate_hdrct;
  return WireError::ok;
}

std::size_t emit(const Terminate& t, mut_bytes out) {
  const std::size_t n = t.length();
  if (out.size() < n || t.ddp_hdr_len > t.ddp_hdr.size()) return 0;
  out[0] = static_cast<std::uint8_t>(((t.cause.layer & 0x0f) << 4) | (t.cause.type & 0x0f));
  out[1] = t.cause.code;
  out[2] =
      static_cast<std::uint8_t>((t.m ? hdrct_m : 0) | (t.d ? hdrct_d : 0) | (t.r ? hdrct_r : 0));
  out[3] = 0;
  std::size_t off = terminate_ctrl_len;
  if (t.m || t.d) {
    store_be16(&out[off], t.ddp_seg_len);
    off += 2;
  }
  if (t.d) {
    for (std::size_t i = 0; i < t.ddp_hdr_len; ++i) out[off + i] = t.ddp_hdr[i];
    off += t.ddp_hdr_len;
  }
  if (t.r) {
    for (std::size_t i = 0; i < read_request_len; ++i) out[off + i] = t.rdma_hdr[i];
    off += read_request_len;
  }
  return off;
}

}  // namespace esock::ddp
