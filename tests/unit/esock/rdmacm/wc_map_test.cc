// rdmacm::completion_of (lib/esock/rdmacm/wc_map.h): libibverbs work completions as the
// software RNIC reports the same events, so ESTP and RAWMODE read one kind of completion.
#include "esock/rdmacm/wc_map.h"

#include <gtest/gtest.h>

namespace esock::rdmacm {
namespace {

ibv_wc wc(ibv_wc_status st, ibv_wc_opcode op, std::uint32_t len) {
  ibv_wc w{};
  w.wr_id = 42;
  w.status = st;
  w.opcode = op;
  w.byte_len = len;
  return w;
}

TEST(WcMap, SuccessfulCompletionsKeepTheirOpcodeAndLength) {
  const auto r = completion_of(wc(IBV_WC_SUCCESS, IBV_WC_RECV, 1234), ddp::Opcode::recv);
  EXPECT_EQ(r.wr_id, 42u);
  EXPECT_EQ(r.status, ddp::Status::success);
  EXPECT_EQ(r.opcode, ddp::Opcode::recv);
  EXPECT_EQ(r.byte_len, 1234u);
  EXPECT_EQ(completion_of(wc(IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 8), ddp::Opcode::read).opcode,
            ddp::Opcode::read);
  EXPECT_EQ(completion_of(wc(IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 8), ddp::Opcode::write).opcode,
            ddp::Opcode::write);
  EXPECT_EQ(completion_of(wc(IBV_WC_SUCCESS, IBV_WC_SEND, 8), ddp::Opcode::send).opcode,
            ddp::Opcode::send);
}

TEST(WcMap, AFlushedCompletionTakesThePostedOpcodeAndNoLength) {
  // ibv_poll_cq(3): only wr_id, status, qp_num and vendor_err are valid in an error.
  const auto r = completion_of(wc(IBV_WC_WR_FLUSH_ERR, IBV_WC_SEND, 999), ddp::Opcode::read);
  EXPECT_EQ(r.status, ddp::Status::flushed);
  EXPECT_EQ(r.opcode, ddp::Opcode::read);
  EXPECT_EQ(r.byte_len, 0u);
}

TEST(WcMap, ErrorsMapToTheSoftwareRnicsStatuses) {
  EXPECT_EQ(status_of(IBV_WC_LOC_LEN_ERR), ddp::Status::local_length_error);
  EXPECT_EQ(status_of(IBV_WC_LOC_PROT_ERR), ddp::Status::local_protection_error);
  EXPECT_EQ(status_of(IBV_WC_LOC_QP_OP_ERR), ddp::Status::local_qp_operation_error);
  EXPECT_EQ(status_of(IBV_WC_REM_ACCESS_ERR), ddp::Status::remote_access_error);
  EXPECT_EQ(status_of(IBV_WC_REM_OP_ERR), ddp::Status::remote_operation_error);
  EXPECT_EQ(status_of(IBV_WC_REM_INV_REQ_ERR), ddp::Status::remote_invalid_request_error);
  EXPECT_EQ(status_of(IBV_WC_RETRY_EXC_ERR), ddp::Status::general_error);
  EXPECT_EQ(status_of(IBV_WC_FATAL_ERR), ddp::Status::general_error);
}

TEST(WcMap, SendWithInvalidateReportsTheInvalidatedStag) {
  ibv_wc w = wc(IBV_WC_SUCCESS, IBV_WC_RECV, 16);
  w.wc_flags = IBV_WC_WITH_INV;
  w.invalidated_rkey = 0xabcd01;
  EXPECT_EQ(completion_of(w, ddp::Opcode::recv).invalidated_stag, 0xabcd01u);
  w.wc_flags = 0;
  EXPECT_EQ(completion_of(w, ddp::Opcode::recv).invalidated_stag, 0u);
}

}  // namespace
}  // namespace esock::rdmacm
