// esock_iwarp: iWARP (RDMAP/DDP/MPA, RFC 5040/5041/5044) over esock's own TCP stack on one
// DPDK virtual device, one process per side. The client drives a Send, RDMA Write or RDMA
// Read workload in bandwidth or ping-pong latency mode; both sides print one RESULT line.
// Command line and RESULT keys: usage() in options.cc, report.cc.
//
//   esock_iwarp --vdev net_memif0,role=server,socket=/tmp/m.sock,socket-abstract=no,bsize=2048
//               --ip 10.90.0.1/24 --core 0 --listen 7600
//   esock_iwarp --vdev net_memif0,role=client,socket=/tmp/m.sock,socket-abstract=no,bsize=2048
//               --ip 10.90.0.2/24 --core 1 --connect 10.90.0.1:7600
//               --op write --mode bw --size 64k --bytes 256m --verify
#include <sodium.h>

#include <cstdio>

#include "driver.h"
#include "options.h"

int main(int argc, char** argv) {
  using namespace esock::utcp::tool;
  int code = 0;
  std::optional<Options> o = parse_options(argc, argv, &code);
  if (!o) return code;
  // lib/tcp's ISN generator keys come from libsodium (RFC 6528).
  if (sodium_init() < 0) {
    std::fprintf(stderr, "esock_iwarp: libsodium failed to initialise\n");
    return 1;
  }
  Driver d(*o);
  return d.run();
}
