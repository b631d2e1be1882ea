// The esock_ C API (include/esock/esock.h), exported from libesock.so.
#include "esock/ddpmode/ext_api.h"
#include "esock/esock.h"
#include "esock/rawmode/raw_qp.h"
#include "esock/runtime/fd_table.h"
#include "esock/runtime/runtime.h"

extern "C" {

const char* esock_version(void) {
  return ESOCK_VERSION_STRING;
}

int esock_is_ddp(int fd) {
  return esock::sockets::fd_is_ddp(fd) ? 1 : 0;
}

int esock_blocked_calls(void) {
  esock::sockets::DdpRuntime& rt = esock::sockets::DdpRuntime::get();
  std::lock_guard lk(rt.mu);
  return rt.waiters();
}

unsigned long long esock_inline_rounds(void) {
  esock::sockets::DdpRuntime& rt = esock::sockets::DdpRuntime::get();
  std::lock_guard lk(rt.mu);
  return rt.inline_rounds();
}

uint32_t esock_reg_mr(int fd, void* addr, size_t len, int access) {
  return esock::sockets::ext_reg_mr(fd, addr, len, access);
}

int esock_dereg_mr(int fd, uint32_t stag) {
  return esock::sockets::ext_dereg_mr(fd, stag);
}

int esock_post_send(int fd, uint64_t wr_id, const esock_sge* sg, int num_sge) {
  return esock::sockets::ext_post(fd, esock::sockets::RawOp::send, wr_id, sg, num_sge, 0, 0);
}

int esock_post_recv(int fd, uint64_t wr_id, const esock_sge* sg, int num_sge) {
  return esock::sockets::ext_post(fd, esock::sockets::RawOp::recv, wr_id, sg, num_sge, 0, 0);
}

int esock_post_write(int fd, uint64_t wr_id, const esock_sge* sg, int num_sge, uint32_t rkey,
                     uint64_t remote_addr) {
  return esock::sockets::ext_post(fd, esock::sockets::RawOp::write, wr_id, sg, num_sge, rkey,
                                  remote_addr);
}

int esock_post_read(int fd, uint64_t wr_id, const esock_sge* sg, int num_sge, uint32_t rkey,
                    uint64_t remote_addr) {
  return esock::sockets::ext_post(fd, esock::sockets::RawOp::read, wr_id, sg, num_sge, rkey,
                                  remote_addr);
}

// esock_poll_cq has two versions (libesock.map): 0.2's entries carry imm_data, 0.1's do not,
// and a program built against 0.1 keeps writing arrays of the smaller entry.
int esock_poll_cq_v01(int fd, void* wc, int max) {
  return esock::sockets::ext_poll_cq(fd, wc, max, true);
}
int esock_poll_cq_v02(int fd, esock_wc* wc, int max) {
  return esock::sockets::ext_poll_cq(fd, wc, max, false);
}
__asm__(".symver esock_poll_cq_v01, esock_poll_cq@ESOCK_0.1");
__asm__(".symver esock_poll_cq_v02, esock_poll_cq@@ESOCK_0.2");

int esock_post_send_imm(int fd, uint64_t wr_id, uint64_t imm, int flags) {
  return esock::sockets::ext_post_imm(fd, wr_id, nullptr, 0, false, 0, 0, imm, flags);
}

int esock_post_write_imm(int fd, uint64_t wr_id, const esock_sge* sg, int num_sge, uint32_t rkey,
                         uint64_t remote_addr, uint64_t imm, int flags) {
  return esock::sockets::ext_post_imm(fd, wr_id, sg, num_sge, true, rkey, remote_addr, imm, flags);
}

int esock_post_atomic_fetch_add(int fd, uint64_t wr_id, const esock_sge* result, uint32_t rkey,
                                uint64_t remote_addr, uint64_t add, uint64_t field_mask) {
  return esock::sockets::ext_post_atomic(fd, wr_id, result, rkey, remote_addr,
                                         {false, add, field_mask, 0, 0});
}

int esock_post_atomic_cmp_swap(int fd, uint64_t wr_id, const esock_sge* result, uint32_t rkey,
                               uint64_t remote_addr, uint64_t compare, uint64_t compare_mask,
                               uint64_t swap, uint64_t swap_mask) {
  return esock::sockets::ext_post_atomic(fd, wr_id, result, rkey, remote_addr,
                                         {true, swap, swap_mask, compare, compare_mask});
}

int esock_tripwire_arm(int fd, void* addr, size_t len, uint64_t cookie, int flags) {
  return esock::sockets::ext_tripwire_arm(fd, addr, len, cookie, flags);
}

int esock_tripwire_disarm(int fd, int id) {
  return esock::sockets::ext_tripwire_disarm(fd, id);
}

int esock_tripwire_poll(int fd, esock_tripwire_event* ev, int max) {
  return esock::sockets::ext_tripwire_poll(fd, ev, max);
}

int esock_tripwire_fd(int fd) {
  return esock::sockets::ext_comp_fd(fd);
}

int esock_comp_fd(int fd) {
  return esock::sockets::ext_comp_fd(fd);
}

int esock_query_mpa(int fd, esock_mpa_info* info) {
  return esock::sockets::ext_query_mpa(fd, info);
}

}  // extern "C"
