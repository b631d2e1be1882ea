// The DPDK runtime (EAL) as an RAII object. No DPDK header leaks out of lib/tcp/dpdk: users
// see port ids and strings.
//
// DPDK allows one rte_eal_init() per process, ever (a second one fails even after
// rte_eal_cleanup()), so Eal::init() succeeds at most once per process; a child process
// (fork + exec) gets its own. esock's standard line needs no host set-up (MACHINE-NOTES.md):
//   -l <core> --no-pci --no-huge --no-shconf -m <mb> --file-prefix esock-<pid>-<n>
//   --log-level=<level> [--no-telemetry] [--vdev=<devargs>]...
// --no-huge makes IOVA = VA, which is what lets DpdkDevice attach heap memory to mbufs.
// EAL always creates <runtime dir>/<prefix> (/var/run/dpdk/<prefix> as root) and never
// removes it; ~Eal does.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace esock::tcp::dpdk {

struct EalOptions {
  unsigned core = 0;                    // the lcore this process polls on (-l)
  unsigned memory_mb = 256;             // -m: enough for a few 8k-mbuf pools with jumbo room
  std::vector<std::string> vdevs;       // e.g. "net_memif0,role=server,socket=/tmp/x.sock"
  std::string log_level = "error";      // DPDK's global log level: quiet unless broken
  std::string file_prefix;              // empty: esock-<pid>-<n>
  bool telemetry = false;               // telemetry adds a control thread on the other core
  std::vector<std::string> extra_args;  // appended verbatim (before vdevs)
};

class Eal {
 public:
  // Initialises DPDK. nullptr with *error (rte_strerror text) on failure, including a
  // second call in the same process.
  static std::unique_ptr<Eal> init(const EalOptions& options, std::string* error);
  // rte_eal_cleanup(), then removes the runtime directory. Every DpdkDevice must be gone.
  ~Eal();
  Eal(const Eal&) = delete;
  Eal& operator=(const Eal&) = delete;

  const std::string& file_prefix() const { return prefix_; }
  const std::string& runtime_dir() const { return runtime_dir_; }
  const std::vector<std::string>& args() const { return args_; }

  // Hot-plugs a virtual device after init (rte_dev_probe) and returns its ethdev port id,
  // or -1 with *error. The device name is devargs up to the first comma.
  int add_vdev(const std::string& devargs, std::string* error);
  // Detaches a hot-plugged or --vdev device by name (its port must be closed first).
  bool remove_vdev(const std::string& name, std::string* error);
  // The port id of an ethdev by name ("net_memif0"), or -1.
  static int find_port(const std::string& name);

 private:
  Eal() = default;
  std::string prefix_;
  std::string runtime_dir_;
  std::vector<std::string> args_;
};

// Two net_ring ports in this process wired back to back (what a transmits, b receives),
// built with rte_eth_from_rings over two new rte_rings of `ring_size` slots (power of two).
struct RingPair {
  int a = -1;
  int b = -1;
};
bool make_ring_pair(const std::string& name, unsigned ring_size, RingPair* out, std::string* error);

}  // namespace esock::tcp::dpdk
