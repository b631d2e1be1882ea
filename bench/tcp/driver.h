// bench_tcp's driver: starts server/client process pairs per configuration, collects the
// clients' result lines (workload.h) and prints the comparison table.
#pragma once

#include <string>

#include "roles.h"

namespace esock::bench {

struct DriverOptions {
  std::string modes = "busy,backoff,kernel,kernel-busy";
  unsigned client_core = 0;
  unsigned server_core = 1;
};

int run_driver(const RoleOptions& plan, const DriverOptions& d);

}  // namespace esock::bench
