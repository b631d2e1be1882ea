#include "esock/process/config.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>

namespace esock::sockets {

namespace {

mpa::Policy policy(const std::string& v, mpa::Policy dflt) {
  if (v == "refuse") return mpa::Policy::refuse;
  if (v == "allow") return mpa::Policy::allow;
  if (v == "require") return mpa::Policy::require;
  return dflt;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  const auto e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? std::string{} : s.substr(b, e - b + 1);
}

// name (lower case, no prefix) -> value, from the file then the environment.
std::map<std::string, std::string> settings() {
  static const char* const names[] = {
      "provider",    "recv_buffers", "recv_buffer_size", "rndv_threshold", "mpa_revision",
      "mpa_markers", "mpa_crc",      "timeout_ms",       "debug",          "dpdk_vdev",
      "dpdk_ip",     "dpdk_gateway", "dpdk_core",        "dpdk_memory_mb", "dpdk_file_prefix",
      "dpdk_pcap",   "ddpmode_all",  "progress",         "spin_us",        "dpdk_mtu",
      "fallback",    "fallback_ms",  "sink_threshold"};
  std::map<std::string, std::string> out;
  if (const char* path = std::getenv("ESOCK_CONFIG"); path && *path) {
    std::ifstream f(path);
    for (std::string line; std::getline(f, line);) {
      line = trim(line.substr(0, line.find('#')));
      const auto eq = line.find('=');
      if (line.empty() || eq == std::string::npos) continue;
      const std::string k = trim(line.substr(0, eq));
      bool known = false;
      for (const char* n : names) known = known || k == n;
      if (!known)
        std::fprintf(stderr, "esock: %s: unknown setting '%s' ignored\n", path, k.c_str());
      out[k] = trim(line.substr(eq + 1));
    }
  }
  for (const char* n : names) {
    std::string env = "ESOCK_";
    for (const char* c = n; *c; ++c) env += static_cast<char>(std::toupper(*c));
    if (const char* v = std::getenv(env.c_str())) out[n] = v;
  }
  return out;
}

template <typename T>
void number(const std::map<std::string, std::string>& s, const char* k, T& v) {
  auto it = s.find(k);
  if (it == s.end()) return;
  char* end = nullptr;
  const unsigned long long x = std::strtoull(it->second.c_str(), &end, 0);
  if (end && *end == '\0' && !it->second.empty()) v = static_cast<T>(x);
}

Config load() {
  Config c;
  const auto s = settings();
  for (auto [k, v] : {std::pair{"provider", &c.provider},
                      {"dpdk_vdev", &c.dpdk_vdev},
                      {"dpdk_ip", &c.dpdk_ip},
                      {"dpdk_gateway", &c.dpdk_gateway},
                      {"dpdk_file_prefix", &c.dpdk_file_prefix},
                      {"dpdk_pcap", &c.dpdk_pcap},
                      {"progress", &c.progress},
                      {"fallback", &c.fallback}})
    if (auto it = s.find(k); it != s.end()) *v = it->second;
  number(s, "dpdk_core", c.dpdk_core);
  number(s, "dpdk_memory_mb", c.dpdk_memory_mb);
  number(s, "dpdk_mtu", c.dpdk_mtu);
  int all = 0;
  number(s, "ddpmode_all", all);
  c.ddpmode_all = all != 0;
  number(s, "recv_buffers", c.recv_buffers);
  number(s, "recv_buffer_size", c.recv_buffer_size);
  number(s, "rndv_threshold", c.rndv_threshold);
  number(s, "sink_threshold", c.sink_threshold);
  number(s, "mpa_revision", c.mpa_revision);
  number(s, "timeout_ms", c.timeout_ms);
  number(s, "spin_us", c.spin_us);
  number(s, "fallback_ms", c.fallback_ms);
  int dbg = 0;
  number(s, "debug", dbg);
  c.debug = dbg != 0;
  if (auto it = s.find("mpa_markers"); it != s.end())
    c.mpa_markers = policy(it->second, c.mpa_markers);
  if (auto it = s.find("mpa_crc"); it != s.end()) c.mpa_crc = policy(it->second, c.mpa_crc);
  // Out-of-range values fall back to sane ones rather than fail a connection later.
  if (c.recv_buffers < 4) c.recv_buffers = 4;  // stream-protocol.md section 6: R >= 4
  if (c.recv_buffers > 1024) c.recv_buffers = 1024;
  if (c.recv_buffer_size < 256) c.recv_buffer_size = 256;
  if (c.recv_buffer_size > (1u << 24)) c.recv_buffer_size = 1u << 24;
  if (c.mpa_revision != 1) c.mpa_revision = 2;
  if (c.timeout_ms <= 0) c.timeout_ms = 10000;
  if (c.dpdk_memory_mb < 64) c.dpdk_memory_mb = 64;
  // 65000: the frame plus DPDK's headroom still fits an mbuf's 16-bit data room.
  if (c.dpdk_mtu != 0 && (c.dpdk_mtu < 576 || c.dpdk_mtu > 65000)) {
    std::fprintf(stderr, "esock: ESOCK_DPDK_MTU must be 576..65000 (or 0), not %u: 0\n",
                 c.dpdk_mtu);
    c.dpdk_mtu = 0;
  }
  if (c.progress != "auto" && c.progress != "inline" && c.progress != "thread") {
    std::fprintf(stderr, "esock: ESOCK_PROGRESS must be auto, inline or thread, not '%s': auto\n",
                 c.progress.c_str());
    c.progress = "auto";
  }
  if (c.spin_us > 1'000'000) c.spin_us = 1'000'000;
  if (c.fallback != "auto" && c.fallback != "fallback" && c.fallback != "fail") {
    std::fprintf(stderr, "esock: ESOCK_FALLBACK must be auto, fallback or fail, not '%s': auto\n",
                 c.fallback.c_str());
    c.fallback = "auto";
  }
  if (c.fallback_ms <= 0 || c.fallback_ms > c.timeout_ms)
    c.fallback_ms = std::min(500, c.timeout_ms);
  return c;
}

}  // namespace

const Config& config() {
  static const Config c = load();
  return c;
}

}  // namespace esock::sockets
