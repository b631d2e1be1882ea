#include "tcp/dev/memif_frames.h"

#include <algorithm>
#include <cstdlib>

namespace esock::tcp {
namespace {

constexpr unsigned ethernet_header = 14;
constexpr unsigned memif_port_mtu = 1500;
constexpr unsigned bsize_max = 65535;  // memif's buffer size is a 16-bit field

// The number devargs give for `key` (",key=N"), or 0.
unsigned devarg_number(const std::string& devargs, const std::string& key) {
  const std::string k = "," + key + "=";
  const std::size_t at = devargs.find(k);
  if (at == std::string::npos) return 0;
  return static_cast<unsigned>(std::strtoul(devargs.c_str() + at + k.size(), nullptr, 10));
}

}  // namespace

bool is_memif(const std::string& devargs) {
  return devargs.rfind("net_memif", 0) == 0;
}

MemifFrames memif_frames(const std::string& devargs, unsigned mtu) {
  MemifFrames f{devargs, mtu};
  if (!is_memif(devargs)) return f;
  if (f.mtu == 0) f.mtu = memif_default_mtu;
  if (f.mtu <= memif_port_mtu) return f;
  if (const unsigned bsize = devarg_number(devargs, "bsize"); bsize != 0) {
    const unsigned fits = bsize > ethernet_header ? bsize - ethernet_header : 0;
    f.mtu = std::max(memif_port_mtu, std::min(f.mtu, fits));
    return f;
  }
  const unsigned frame = f.mtu + ethernet_header;
  f.devargs += ",bsize=" + std::to_string(std::min(bsize_max, (frame + 1023) / 1024 * 1024));
  return f;
}

}  // namespace esock::tcp
