#include "ddp/wire_ext.h"

#include "base/endian.h"

namespace esock::ddp {
namespace {

// RFC 7306 section 5.2.1, Figure 4: offsets inside the Atomic Request body.
constexpr std::size_t off_ar_op = 0;  // 28 reserved bits, then the 4-bit operation
constexpr std::size_t off_ar_req_id = 4;
constexpr std::size_t off_ar_stag = 8;
constexpr std::size_t off_ar_to = 12;
constexpr std::size_t off_ar_add_swap = 20;
constexpr std::size_t off_ar_add_swap_mask = 28;
constexpr std::size_t off_ar_compare = 36;
constexpr std::size_t off_ar_compare_mask = 44;
constexpr std::uint32_t ar_op_mask = 0x0f;

// RFC 7306 section 5.2.2, Figure 6.
constexpr std::size_t off_resp_req_id = 0;
constexpr std::size_t off_resp_original = 4;

}  // namespace

WireError parse(bytes_view in, AtomicRequest& out) {
  if (in.size() != atomic_request_len) return WireError::truncated;
  out.op = static_cast<std::uint8_t>(load_be32(&in[off_ar_op]) & ar_op_mask);
  out.req_id = load_be32(&in[off_ar_req_id]);
  out.stag = load_be32(&in[off_ar_stag]);
  out.to = load_be64(&in[off_ar_to]);
  out.add_swap = load_be64(&in[off_ar_add_swap]);
  out.add_swap_mask = load_be64(&in[off_ar_add_swap_mask]);
  out.compare = load_be64(&in[off_ar_compare]);
  out.compare_mask = load_be64(&in[off_ar_compare_mask]);
  return WireError::ok;
}

std::size_t emit(const AtomicRequest& r, mut_bytes out) {
  if (out.size() < atomic_request_len) return 0;
  store_be32(&out[off_ar_op], r.op & ar_op_mask);
  store_be32(&out[off_ar_req_id], r.req_id);
  store_be32(&out[off_ar_stag], r.stag);
  store_be64(&out[off_ar_to], r.to);
  store_be64(&out[off_ar_add_swap], r.add_swap);
  store_be64(&out[off_ar_add_swap_mask], r.add_swap_mask);
  store_be64(&out[off_ar_compare], r.compare);
  store_be64(&out[off_ar_compare_mask], r.compare_mask);
  return atomic_request_len;
}

WireError parse(bytes_view in, AtomicResponse& out) {
  if (in.size() != atomic_response_len) return WireError::truncated;
  out.req_id = load_be32(&in[off_resp_req_id]);
  out.original = load_be64(&in[off_resp_original]);
  return WireError::ok;
}

std::size_t emit(const AtomicResponse& r, mut_bytes out) {
  if (out.size() < atomic_response_len) return 0;
  store_be32(&out[off_resp_req_id], r.req_id);
  store_be64(&out[off_resp_original], r.original);
  return atomic_response_len;
}

}  // namespace esock::ddp
