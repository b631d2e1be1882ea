// DDPMODE configuration (docs/configuration.md): environment variables over the file named
// by ESOCK_CONFIG (else the system's, system_config_path) over defaults, validated
// (config_parse.h), read once on first use.
#pragma once

#include <vector>

#include "esock/process/config_parse.h"
#include "esock/process/config_values.h"

namespace esock::sockets {

// The configuration as the library reads it (file and environment), with every problem;
// the library's config() is this, read once. esockrun checks with it before exec.
Config read_config(std::vector<ConfigIssue>* issues);

const Config& config();
// False when the configuration has errors (printed when first read): DDPMODE connect and
// listen then fail with EINVAL.
bool config_ok();
// Whether a socket (implicit: made DDPMODE by esockrun --ddp) falls back to plain TCP.
inline bool falls_back(bool implicit) {
  return config().fallback == "fallback" || (config().fallback == "auto" && implicit);
}

}  // namespace esock::sockets
