// Frame sizes on net_memif links. A memif link joins two processes on one host, so it can
// carry jumbo frames whatever a NIC would: a segment's fixed costs (TCP, MPA framing, the
// burst) are paid per frame while the per-octet passes (checksum, CRC32c, copies) stay the
// same, so larger frames are nearly free throughput (bench/esock/README.md: 1 MiB DDPMODE
// streaming 1.1 GB/s at MTU 1500, 4.4 GB/s at 9000; 16000 measured no worse than 9000 and
// above it, 32000 and 65000, no better).
#pragma once

#include <string>

namespace esock::tcp {

inline constexpr unsigned memif_default_mtu = 16000;

bool is_memif(const std::string& devargs);

struct MemifFrames {
  std::string devargs;  // the devargs to open the port with
  unsigned mtu = 0;     // the MTU to run (0: the port's)
};

// The devargs and MTU for a port opened with `devargs` and a configured `mtu` (0: the
// default: memif_default_mtu on memif, the port's elsewhere). Other devices are returned
// as given. DPDK 22.11's memif refuses to configure an MTU above 1500 but carries frames
// up to its buffer size (bsize), and corrupts a frame that spans buffers: so the buffers
// are sized to the frame (whole KiB, at most 65535), or a bsize the devargs already set
// lowers the MTU to what one buffer holds (never below 1500, the port's own).
MemifFrames memif_frames(const std::string& devargs, unsigned mtu);

}  // namespace esock::tcp
