// The four child roles bench_tcp's driver starts, each a separate process with its own
// core (DPDK's EAL can be initialised once per process, so every esock run is a fresh
// client and a fresh server). Clients print result lines (workload.h) on stdout.
#pragma once

#include <cstdint>
#include <string>

#include "workload.h"

namespace esock::bench {

struct RoleOptions {
  unsigned core = 0;
  // esock: never sleep when idle (else the runtime's back-off); kernel: spin on
  // MSG_DONTWAIT calls (else block in send/recv).
  bool busy_poll = true;
  std::uint32_t spin_polls = 0;  // esock back-off: empty polls before sleeping; 0: runtime's
  std::string socket;            // esock: memif control socket path
  std::string file_prefix;       // esock: EAL runtime directory name
  std::uint16_t port = 0;        // kernel: server port on 127.0.0.1 (0: pick, print "ready <port>")
  unsigned timeout_s = 120;      // a whole role gives up after this
  ClientPlan plan;
};

int esock_server(const RoleOptions& o);
int esock_client(const RoleOptions& o);
int kernel_server(const RoleOptions& o);
int kernel_client(const RoleOptions& o);

// Pins the calling thread to one core (kernel roles; EAL pins the esock ones).
bool pin_to_core(unsigned core);

}  // namespace esock::bench
