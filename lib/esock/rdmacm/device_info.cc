#include "esock/rdmacm/device_info.h"

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace esock::rdmacm {

int query_limits(ibv_context* ctx, DeviceLimits* out) {
  ibv_device_attr a{};
  if (const int rc = ibv_query_device(ctx, &a); rc != 0) return rc > 0 ? rc : EIO;
  out->name = ibv_get_device_name(ctx->device);
  out->max_mr_size = a.max_mr_size;
  out->max_sge = a.max_sge;
  out->max_sge_rd = a.max_sge_rd;
  out->max_qp_wr = a.max_qp_wr;
  out->max_cqe = a.max_cqe;
  out->max_qp_rd_atom = a.max_qp_rd_atom;
  out->max_qp_init_rd_atom = a.max_qp_init_rd_atom;
  return 0;
}

namespace {

// The network interface under port 1 of a device (what `rdma link` shows as netdev). RoCE
// devices list it in sysfs; an iWARP device's GID 0 starts with its interface's MAC
// address instead (siw, cxgb4), which names the interface among /sys/class/net.
std::string netdev_of(const char* dev, ibv_context* ctx) {
  std::ifstream f(std::string("/sys/class/infiniband/") + dev + "/ports/1/gid_attrs/ndevs/0");
  std::string name;
  if (std::getline(f, name) && !name.empty()) return name;
  ibv_gid gid{};
  if (ctx == nullptr || ibv_query_gid(ctx, 1, 0, &gid) != 0) return {};
  char mac[18];
  std::snprintf(mac, sizeof mac, "%02x:%02x:%02x:%02x:%02x:%02x", gid.raw[0], gid.raw[1],
                gid.raw[2], gid.raw[3], gid.raw[4], gid.raw[5]);
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/sys/class/net", ec)) {
    std::ifstream a(e.path() / "address");
    std::string addr;
    if (std::getline(a, addr) && addr == mac) return e.path().filename().string();
  }
  return {};
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
    std::string state = "state unknown", nd;
    if (ibv_context* ctx = ibv_open_device(list[i])) {
      ibv_port_attr pa{};
      if (ibv_query_port(ctx, 1, &pa) == 0) state = ibv_port_state_str(pa.state);
      nd = netdev_of(name, ctx);
      ibv_close_device(ctx);
    }
    text += std::string(i == 0 ? " " : ", ") + name + " (" + (nd.empty() ? "no netdev" : nd) +
            ", " + state + ")";
  }
  ibv_free_device_list(list);
  return text;
}

}  // namespace esock::rdmacm
