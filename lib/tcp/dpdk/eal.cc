#include "tcp/dpdk/eal.h"

#include <rte_bus_vdev.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_ring.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <system_error>

namespace esock::tcp::dpdk {
namespace {

// rte_eal_init may run once per process (see eal.h); this records that it has.
std::atomic<bool> eal_used{false};
std::atomic<unsigned> prefix_seq{0};

std::string errno_text(const char* what, int err) {
  return std::string(what) + ": " + rte_strerror(err < 0 ? -err : err);
}

}  // namespace

std::unique_ptr<Eal> Eal::init(const EalOptions& o, std::string* error) {
  if (eal_used.exchange(true)) {
    if (error) *error = "EAL: already initialised in this process (DPDK allows it once)";
    return nullptr;
  }
  std::unique_ptr<Eal> eal(new Eal());
  eal->prefix_ = o.file_prefix.empty()
                     ? "esock-" + std::to_string(::getpid()) + "-" + std::to_string(prefix_seq++)
                     : o.file_prefix;
  auto& a = eal->args_;
  a = {"esock",
       "-l",
       std::to_string(o.core),
       "--no-pci",
       "--no-huge",
       "--no-shconf",
       "-m",
       std::to_string(o.memory_mb),
       "--file-prefix",
       eal->prefix_,
       "--log-level=" + o.log_level};
  if (!o.telemetry) a.push_back("--no-telemetry");
  for (const auto& x : o.extra_args) a.push_back(x);
  for (const auto& v : o.vdevs) a.push_back("--vdev=" + v);
  // rte_eal_init may permute argv; give it a private array of pointers into our strings.
  std::vector<char*> argv;
  for (auto& s : a) argv.push_back(s.data());
  argv.push_back(nullptr);
  const int r = rte_eal_init(static_cast<int>(a.size()), argv.data());
  if (r < 0) {
    if (error) *error = errno_text("EAL: rte_eal_init", rte_errno);
    // EAL may have created its directory before failing; it is ours to remove.
    std::error_code ec;
    std::filesystem::remove_all(std::filesystem::path("/var/run/dpdk") / eal->prefix_, ec);
    return nullptr;
  }
  eal->runtime_dir_ = rte_eal_get_runtime_dir();
  return eal;
}

Eal::~Eal() {
  rte_eal_cleanup();
  // EAL never removes its runtime directory (MACHINE-NOTES.md); a unique prefix per run
  // keeps them from colliding, and this keeps them from piling up.
  if (!runtime_dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(runtime_dir_, ec);
  }
}

int Eal::find_port(const std::string& name) {
  std::uint16_t port = 0;
  if (rte_eth_dev_get_port_by_name(name.c_str(), &port) != 0) return -1;
  return port;
}

int Eal::add_vdev(const std::string& devargs, std::string* error) {
  const std::string name = devargs.substr(0, devargs.find(','));
  const int r = rte_dev_probe(devargs.c_str());
  if (r < 0) {
    if (error) *error = errno_text(("EAL: rte_dev_probe(" + devargs + ")").c_str(), r);
    return -1;
  }
  const int port = find_port(name);
  if (port < 0 && error) *error = "EAL: " + name + " probed but no ethdev port has that name";
  return port;
}

bool Eal::remove_vdev(const std::string& name, std::string* error) {
  const int r = rte_eal_hotplug_remove("vdev", name.c_str());
  if (r < 0) {
    if (error) *error = errno_text(("EAL: rte_eal_hotplug_remove(" + name + ")").c_str(), r);
    return false;
  }
  return true;
}

bool make_ring_pair(const std::string& name, unsigned ring_size, RingPair* out,
                    std::string* error) {
  // Single producer / single consumer: one core drives both ports (ARCHITECTURE.md).
  const unsigned flags = RING_F_SP_ENQ | RING_F_SC_DEQ;
  rte_ring* ab = rte_ring_create((name + "_ab").c_str(), ring_size, SOCKET_ID_ANY, flags);
  rte_ring* ba = rte_ring_create((name + "_ba").c_str(), ring_size, SOCKET_ID_ANY, flags);
  if (!ab || !ba) {
    if (error) *error = errno_text("EAL: rte_ring_create", rte_errno);
    rte_ring_free(ab);
    rte_ring_free(ba);
    return false;
  }
  // Port a receives from ba and transmits into ab; port b the other way round.
  out->a = rte_eth_from_rings((name + "_a").c_str(), &ba, 1, &ab, 1, SOCKET_ID_ANY);
  out->b = rte_eth_from_rings((name + "_b").c_str(), &ab, 1, &ba, 1, SOCKET_ID_ANY);
  if (out->a < 0 || out->b < 0) {
    if (error) *error = errno_text("EAL: rte_eth_from_rings", rte_errno);
    return false;
  }
  return true;
}

}  // namespace esock::tcp::dpdk
