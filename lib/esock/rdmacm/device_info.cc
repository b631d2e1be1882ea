#include "esock/rdmacm/device_info.h"

#include <cerrno>
#include <fstream>

namespace esock::rdmacm {

int query_limits(ibv_context* ctx, DeviceLimits* out) {
  ibv_device_attr a{};
  if (const int rc = ibv_query_device(ctx, &a); rc != 0) return rc > 0 ? rc : EIO;
  out->name = ibv_get_device_name(ctx->device);
  out->max_mr_size = a.max_mr_size;
  out->max_sge = a.max_sge;
  out->max_qp_wr = a.max_qp_wr;
  out->max_cqe = a.max_cqe;
  out->max_qp_rd_atom = a.max_qp_rd_atom;
  out->max_qp_init_rd_atom = a.max_qp_init_rd_atom;
  return 0;
}

namespace {

// The network interface under port 1 of a device (what `rdma link` shows as netdev).
std::string netdev_of(const char* dev) {
  std::ifstream f(std::string("/sys/class/infiniband/") + dev + "/ports/1/gid_attrs/ndevs/0");
  std::string name;
  std::getline(f, name);
  return name;
}

}  // namespace

std::string rdma_links_text() {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr || n == 0) {
    if (list != nullptr) ibv_free_device_list(list);
    return "no RDMA device on this machine (`rdma link` shows none; for siw: modprobe siw, "
           "then rdma link add siw0 type siw netdev IFACE)";
  }
  std::string text = "RDMA links:";
  for (int i = 0; i < n; ++i) {
    const char* name = ibv_get_device_name(list[i]);
    std::string state = "state unknown";
    if (ibv_context* ctx = ibv_open_device(list[i])) {
      ibv_port_attr pa{};
      if (ibv_query_port(ctx, 1, &pa) == 0) state = ibv_port_state_str(pa.state);
      ibv_close_device(ctx);
    }
    const std::string nd = netdev_of(name);
    text += std::string(i == 0 ? " " : ", ") + name + " (" + (nd.empty() ? "no netdev" : nd) +
            ", " + state + ")";
  }
  ibv_free_device_list(list);
  return text;
}

}  // namespace esock::rdmacm
