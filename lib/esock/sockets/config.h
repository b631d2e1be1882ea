// DDPMODE configuration (docs/configuration.md): environment variables over the file named
// by ESOCK_CONFIG over defaults, read once on first use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "mpa/negotiator.h"

namespace esock::sockets {

struct Config {
  std::string provider = "ksock";
  std::uint32_t recv_buffers = 16;
  std::uint32_t recv_buffer_size = 65536;
  std::size_t rndv_threshold = 65536;
  std::uint8_t mpa_revision = 2;
  mpa::Policy mpa_markers = mpa::Policy::allow;
  mpa::Policy mpa_crc = mpa::Policy::require;
  int timeout_ms = 10000;
  bool debug = false;
};

const Config& config();

}  // namespace esock::sockets
