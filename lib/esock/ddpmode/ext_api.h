// The extension API's implementation (include/esock/esock.h, docs/sockets.md "Extension
// API"): the exported esock_ functions in shim/capi.cc forward here. Same contract as the C
// API: -1 (or 0 for reg_mr) with errno set on failure.
#pragma once

#include <cstddef>
#include <cstdint>

struct esock_sge;
struct esock_wc;
struct esock_mpa_info;

namespace esock::sockets {

enum class RawOp : std::uint8_t;  // raw_qp.h

std::uint32_t ext_reg_mr(int fd, void* addr, std::size_t len, int access);
int ext_dereg_mr(int fd, std::uint32_t stag);
int ext_post(int fd, RawOp op, std::uint64_t wr_id, const esock_sge* sg, int num_sge,
             std::uint32_t rkey, std::uint64_t remote_addr);
int ext_poll_cq(int fd, esock_wc* wc, int max);
int ext_comp_fd(int fd);
int ext_query_mpa(int fd, esock_mpa_info* info);

}  // namespace esock::sockets
