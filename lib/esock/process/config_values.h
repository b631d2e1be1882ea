// The settings' values (docs/configuration.md) and their defaults: what config.h reads and
// config_parse.h fills.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "mpa/negotiator.h"

namespace esock::sockets {

struct Config {
  std::string provider = "ksock";
  std::uint32_t recv_buffers = 16;
  std::uint32_t recv_buffer_size = 65536 + 16;  // a 64 KiB write is one DATA message
  // Writes of at least this go by rendezvous. 256 KiB by measurement (bench/esock/README.md):
  // below it one rendezvous round trip per write costs more than the copy it saves.
  std::size_t rndv_threshold = 262144;
  // Blocking reads and writes of at least this use the reader's sink (RDMA Write, no extra
  // round trip). 64 KiB by measurement (bench/esock/README.md); 0 disables sinks.
  std::size_t sink_threshold = 65536;
  // In the asynchronous zero-copy modes, blocking reads of at least this return before
  // their data (ddpmode/read_async.h); 0 disables. 1 MiB by measurement (bench/azsdp/README.md):
  // the page moves and guards cost 25 us a 64 KiB read here, where a copy takes 2 us, and
  // about what a copy does from 1 MiB (bench_page_flip).
  std::size_t async_read_threshold = 1048576;
  // In the asynchronous modes, how long the peer's advertised data waits for a read before
  // it is fetched ahead into a bounce buffer (DdpRuntime::prefetch): a reader that comes
  // back within it gets the data zero-copy; the peer's waiting writer is released this
  // much later than TCP's buffering would release it.
  unsigned prefetch_us = 1000;
  // Writes of at least rndv_threshold (docs/sockets.md, "Zero-copy modes"): copy (always
  // copied), sync (zero-copy, write returns once pulled) or async (zero-copy, write
  // returns at once, the pages write-guarded until pulled). Per socket: ESOCK_ZCOPY_MODE.
  std::string zcopy = "sync";
  std::uint8_t mpa_revision = 2;
  mpa::Policy mpa_markers = mpa::Policy::allow;
  mpa::Policy mpa_crc = mpa::Policy::require;
  int timeout_ms = 10000;
  // What esock prints on stderr (log.h): error, warn, info or debug. debug is the same as
  // log == "debug" (ESOCK_DEBUG=1, the older spelling, sets it).
  std::string log = "warn";
  bool debug = false;
  bool ddpmode_all = false;  // every IPv4 TCP socket starts in DDPMODE (esockrun --ddp)
  // Rules narrowing ddpmode_all (rules.h, the libxlio.conf idea): only in these programs,
  // only connections to or listeners on these ports, only connections to these peers. An
  // empty list allows everything; a socket a rule leaves out stays plain kernel TCP.
  std::vector<std::string> ddpmode_programs;
  std::vector<std::pair<std::uint16_t, std::uint16_t>> ddpmode_ports;  // inclusive ranges
  std::vector<std::pair<std::uint32_t, int>> ddpmode_peers;            // IPv4 (host order), prefix
  // Who polls an own stack (runtime.h): auto, inline or thread; and how long an
  // application thread spins on an idle stack before it sleeps between rounds.
  std::string progress = "auto";
  unsigned spin_us = 200;
  // A peer that does not speak esock (docs/sockets.md, "Peers without esock"): fall back to
  // plain TCP (fallback), fail (fail), or auto: fall back on the sockets esockrun --ddp made
  // DDPMODE, fail on those the application made DDPMODE itself. fallback_ms: how long a
  // silent peer is given before it counts as one.
  std::string fallback = "auto";
  int fallback_ms = 500;
  // The dpdk provider (docs/configuration.md, "DPDK provider").
  std::string dpdk_vdev;  // DPDK devargs of the one port, e.g. net_memif0,role=server,...
  std::string dpdk_ip;    // the stack's own IPv4 address, A.B.C.D/NN
  std::string dpdk_gateway;
  unsigned dpdk_core = 0;
  unsigned dpdk_memory_mb = 256;
  std::string dpdk_file_prefix;  // EAL runtime directory name (empty: unique per process)
  std::string dpdk_pcap;         // capture every frame of the port to this file
  std::string dpdk_faults;       // fault injection on the port (tcp/dev/fault_text.h); empty: none
  unsigned dpdk_mtu = 0;         // 576..65000; 0: automatic (dpdk.cc: jumbo on memif)
};

// Read when ESOCK_CONFIG is not set, if it exists.
inline constexpr const char* system_config_path = "/etc/esock/esock.conf";

}  // namespace esock::sockets
