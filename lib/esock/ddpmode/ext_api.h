// The extension API's implementation (include/esock/esock.h, docs/sockets.md "Extension
// API"): the exported esock_ functions in shim/capi.cc forward here. Same contract as the C
// API: -1 (or 0 for reg_mr) with errno set on failure.
#pragma once

#include <cstddef>
#include <cstdint>

struct esock_sge;
struct esock_wc;
struct esock_mpa_info;
struct esock_tripwire_event;

namespace esock::sockets {

enum class RawOp : std::uint8_t;  // raw_qp.h

std::uint32_t ext_reg_mr(int fd, void* addr, std::size_t len, int access);
int ext_dereg_mr(int fd, std::uint32_t stag);
int ext_post(int fd, RawOp op, std::uint64_t wr_id, const esock_sge* sg, int num_sge,
             std::uint32_t rkey, std::uint64_t remote_addr);
// wc: esock_wc entries, or with v01 the 24-octet entries of esock 0.1 (no imm_data), for
// programs bound to esock_poll_cq@ESOCK_0.1.
int ext_poll_cq(int fd, void* wc, int max, bool v01);
// RFC 7306 and tripwires (esock.h, esock 0.2).
int ext_post_imm(int fd, std::uint64_t wr_id, const esock_sge* sg, int num_sge, bool write,
                 std::uint32_t rkey, std::uint64_t remote_addr, std::uint64_t imm, int flags);
struct AtomicArgs {
  bool cmp_swap;
  std::uint64_t data, data_mask, compare, compare_mask;
};
int ext_post_atomic(int fd, std::uint64_t wr_id, const esock_sge* result, std::uint32_t rkey,
                    std::uint64_t remote_addr, const AtomicArgs& a);
int ext_tripwire_arm(int fd, void* addr, std::size_t len, std::uint64_t cookie, int flags);
int ext_tripwire_disarm(int fd, int id);
int ext_tripwire_poll(int fd, esock_tripwire_event* ev, int max);
int ext_comp_fd(int fd);
int ext_query_mpa(int fd, esock_mpa_info* info);

}  // namespace esock::sockets
