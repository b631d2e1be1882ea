// Command line of esock_iwarp (see usage() in options.cc). The names and the RESULT keys
// are a contract: benchmark scripts (bench/) and tests/integration/utcp drive the tool.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tcp/wire/addr.h"

namespace esock::utcp::tool {

enum class Op : std::uint8_t { send = 1, write = 2, read = 3 };
enum class Mode : std::uint8_t { bw = 1, lat = 2 };
const char* to_string(Op o);
const char* to_string(Mode m);

struct Options {
  std::string vdev;
  tcp::Ipv4Addr ip;
  std::uint8_t prefix_len = 24;
  unsigned core = 0;
  std::string file_prefix;
  std::uint16_t mtu = 0;

  bool listen = false;  // else connect
  tcp::Ipv4Addr peer;
  std::uint16_t port = 0;

  Op op = Op::write;
  Mode mode = Mode::bw;
  std::uint32_t size = 0;
  std::uint64_t iters = 0;  // --iters, or --bytes rounded up to whole messages
  std::uint32_t depth = 16;

  bool markers = true, crc = true, placement = true;
  double loss_pct = 0, reorder_pct = 0;  // percent, as on the command line
  std::uint64_t seed = 1;
  bool verify = false;
  std::uint32_t idle_sleep_us = 50;
  bool busy = false;
  double timeout_s = 120;
  std::string pcap;
};

// Parses argv; on error or --help prints to stderr/stdout and returns nullopt with
// *exit_code set (0 for --help, 2 for a bad command line).
std::optional<Options> parse_options(int argc, char** argv, int* exit_code);

}  // namespace esock::utcp::tool
