// Command line of esock_tcp (see usage() in options.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tcp/wire/addr.h"

namespace esock::tcp::tool {

enum class Pattern { prng, counter };

struct Options {
  std::string vdev;
  Ipv4Addr ip;
  std::uint8_t prefix_len = 24;
  Ipv4Addr gateway;
  unsigned core = 0;
  std::string file_prefix;
  std::uint16_t mtu = 0;

  bool listen = false;  // else connect
  Ipv4Addr peer;
  std::uint16_t port = 0;

  std::optional<std::uint64_t> send;  // bytes to send, then FIN
  bool recv = false;                  // receive until FIN
  bool echo = false;                  // send back what arrives; FIN after the peer's FIN
  Pattern pattern = Pattern::prng;
  std::optional<std::uint64_t> abort_after;  // RST once this many bytes moved
  bool expect_reset = false;                 // success means: the peer reset us

  double loss = 0, reorder = 0;
  std::uint64_t seed = 1;
  std::string pcap;
  std::uint32_t pcap_snaplen = 0;
  std::uint32_t idle_sleep_us = 50;
  double timeout_s = 120;
  double connect_timeout_s = 15;
  double link_timeout_s = 10;
  double linger_s = 1;  // keep answering after the end (a lost last ACK is retransmitted for)
};

// Parses argv; on error or --help prints to stderr and returns nullopt with *exit_code set.
std::optional<Options> parse_options(int argc, char** argv, int* exit_code);

}  // namespace esock::tcp::tool
