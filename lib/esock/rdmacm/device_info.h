// What an RDMA device allows (ibv_query_device), and the machine's RDMA links in one line
// for error messages (what `rdma link` would show).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>

namespace esock::rdmacm {

struct DeviceLimits {
  std::string name;               // ibv_get_device_name: siw0, cxgb4_0, irdma0...
  std::uint64_t max_mr_size = 0;  // largest region ibv_reg_mr takes
  int max_sge = 1;
  int max_sge_rd =
      0;  // SGEs of an RDMA Read's sink (0: not reported)                // SGEs per work request
  int max_qp_wr = 1;            // work requests per queue
  int max_cqe = 1;              // entries per completion queue
  int max_qp_rd_atom = 0;       // IRD: RDMA Read Requests we answer at once
  int max_qp_init_rd_atom = 0;  // ORD: RDMA Read Requests we may have outstanding
};

// 0 and *out, or an errno (the device could not be queried).
int query_limits(ibv_context* ctx, DeviceLimits* out);

// "siw0 (eth0, PORT_ACTIVE)", one entry per device, or a hint when there is none.
std::string rdma_links_text();

}  // namespace esock::rdmacm
