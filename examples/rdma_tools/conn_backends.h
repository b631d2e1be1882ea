// The Transport implementations behind Transport::create (conn_ksock.cc, conn_utcp.cc).
#pragma once

#include <memory>
#include <string>

#include "conn.h"

namespace esock::tools {

struct ConnArgs;

std::unique_ptr<Transport> make_ksock_transport(const ConnArgs& a, std::string* why);
// Without DPDK in the build this fails with a message saying so.
std::unique_ptr<Transport> make_utcp_transport(const ConnArgs& a, std::string* why);

}  // namespace esock::tools
