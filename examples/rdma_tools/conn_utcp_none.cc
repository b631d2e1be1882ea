// Builds without DPDK (ESOCK_WITH_DPDK=OFF): the dpdk transport says so instead.
#include "conn_backends.h"

namespace esock::tools {

std::unique_ptr<Transport> make_utcp_transport(const ConnArgs&, std::string* why) {
  *why = "--transport dpdk: this build has no DPDK (configured with ESOCK_WITH_DPDK=OFF)";
  return nullptr;
}

}  // namespace esock::tools
