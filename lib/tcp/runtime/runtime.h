// A ready-to-poll lib/tcp instance for programs: DPDK EAL, one DPDK port (from a vdev
// string), optional fault injection and pcap capture around it, the Stack, a steady clock
// and a poll loop that busy-polls while there is work and backs off when idle (so two
// stacks can share this machine's cores). Includes no DPDK header.
//
// Device chain, bottom up: DpdkDevice -> FaultInjector (if faults) -> PcapWriter (if pcap)
// -> Stack, so the capture shows what the stack saw and sent (faults happen "on the wire").
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "base/steady_clock.h"
#include "tcp/dev/fault_injector.h"
#include "tcp/dev/idle_backoff.h"
#include "tcp/stack/stack.h"

namespace esock::tcp {

struct RuntimeConfig {
  // One DPDK virtual device, e.g.
  //   net_memif0,role=server,socket=/tmp/esock.sock,socket-abstract=no,bsize=9216
  //   net_tap0,iface=esock0          net_af_packet0,iface=veth0,qdisc_bypass=1
  std::string vdev;
  unsigned core = 0;
  unsigned memory_mb = 256;
  std::string file_prefix;       // EAL runtime dir name; empty: unique per process
  std::uint16_t mtu = 0;         // 0: the port's
  bool mtu_beyond_port = false;  // DpdkDeviceConfig::mtu_beyond_port (memif's large frames)
  StackConfig stack;
  std::optional<FaultConfig> faults;
  std::string pcap_path;           // empty: no capture
  std::uint32_t pcap_snaplen = 0;  // 0: PcapOptions' default (whole frames)
  IdleBackoffConfig idle;
  Duration link_timeout = 10s;  // 0: do not wait (a server whose peer comes later)
};

class Runtime {
 public:
  static std::unique_ptr<Runtime> create(const RuntimeConfig& cfg, std::string* error);
  ~Runtime();

  Stack& stack() { return *stack_; }
  Instant now() const { return clock_.now(); }
  // One round of the stack; true if it did anything.
  bool poll_once() { return stack_->poll(now()); }
  // Polls (backing off when idle) until done() or the deadline; returns done(). The clock
  // is read once per round (it showed up at 11% of a receiver's profile when read thrice).
  template <class F>
  bool run_until_deadline(F done, Instant deadline) {
    while (!done()) {
      Instant t = now();
      if (t >= deadline) return done();
      backoff_.poll_done(stack_->poll(t));
    }
    return true;
  }
  template <class F>
  bool run_until(F done, Duration timeout) {
    return run_until_deadline(done, now() + timeout);
  }
  Device& device();
  // For a process about to exit: removes EAL's runtime directory and abandons DPDK without
  // rte_eal_cleanup (which races EAL's interrupt thread when a memif peer disconnects at the
  // same moment). Nothing may use this runtime afterwards; the destructor then does nothing.
  void abandon_at_exit();
  bool link_up() const;  // the DPDK port's link state (memif: the peer is attached)
  // EAL's runtime directory (/var/run/dpdk/PREFIX), or empty without DPDK.
  std::string eal_runtime_dir() const;
  const FaultInjector* faults() const { return faults_.get(); }

 private:
  Runtime() = default;
  struct Dpdk;
  std::unique_ptr<Dpdk> dpdk_;
  std::unique_ptr<FaultInjector> faults_;
  std::unique_ptr<Device> pcap_;
  std::unique_ptr<Stack> stack_;
  SteadyClock clock_;
  IdleBackoff backoff_;
  Device* top_ = nullptr;
};

}  // namespace esock::tcp
