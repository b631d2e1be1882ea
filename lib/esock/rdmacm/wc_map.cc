#include "esock/rdmacm/wc_map.h"

namespace esock::rdmacm {

ddp::Status status_of(ibv_wc_status s) {
  switch (s) {
    case IBV_WC_SUCCESS:
      return ddp::Status::success;
    case IBV_WC_LOC_LEN_ERR:
      return ddp::Status::local_length_error;
    case IBV_WC_LOC_PROT_ERR:
    case IBV_WC_MW_BIND_ERR:
      return ddp::Status::local_protection_error;
    case IBV_WC_LOC_QP_OP_ERR:
      return ddp::Status::local_qp_operation_error;
    case IBV_WC_REM_ACCESS_ERR:
      return ddp::Status::remote_access_error;
    case IBV_WC_REM_OP_ERR:
      return ddp::Status::remote_operation_error;
    case IBV_WC_REM_INV_REQ_ERR:
      return ddp::Status::remote_invalid_request_error;
    case IBV_WC_WR_FLUSH_ERR:
      return ddp::Status::flushed;
    default:
      return ddp::Status::general_error;
  }
}

ddp::Completion completion_of(const ibv_wc& wc, ddp::Opcode posted) {
  ddp::Completion c;
  c.wr_id = wc.wr_id;
  c.status = status_of(wc.status);
  c.opcode = posted;
  if (wc.status != IBV_WC_SUCCESS) return c;  // byte_len and flags are undefined then
  switch (wc.opcode) {
    case IBV_WC_SEND:
      c.opcode = ddp::Opcode::send;
      break;
    case IBV_WC_RDMA_WRITE:
      c.opcode = ddp::Opcode::write;
      break;
    case IBV_WC_RDMA_READ:
      c.opcode = ddp::Opcode::read;
      break;
    case IBV_WC_RECV:
    case IBV_WC_RECV_RDMA_WITH_IMM:
      c.opcode = ddp::Opcode::recv;
      break;
    default:
      break;  // an opcode esock never posts: keep the posted one
  }
  c.byte_len = wc.byte_len;
  // RFC 5040 Send with Invalidate: the STag the peer invalidated (IBV_WC_WITH_INV).
  if ((wc.wc_flags & IBV_WC_WITH_INV) != 0) c.invalidated_stag = wc.invalidated_rkey;
  return c;
}

}  // namespace esock::rdmacm
