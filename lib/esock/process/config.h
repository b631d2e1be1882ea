// DDPMODE configuration (docs/configuration.md): environment variables over the file named
// by ESOCK_CONFIG (else the system's, system_config_path) over defaults, validated
// (config_parse.h), read once on first use.
#pragma once

#include <string>
#include <vector>

#include "esock/process/config_parse.h"
#include "esock/process/config_values.h"

namespace esock::sockets {

// The configuration as the library reads it (file and environment), with every problem;
// the library's config() is this, read once. esockrun checks with it before exec.
Config read_config(std::vector<ConfigIssue>* issues);
// A digest of what read_config reads (the ESOCK_* variables and the file): esockrun sets
// ESOCK_CONFIG_CHECKED to it, and the library stays quiet about warnings esockrun printed
// only while it reads the same.
std::string config_fingerprint();

const Config& config();
// False when the configuration has errors (printed when first read): a DDPMODE connect or
// listen then fails with EINVAL, or, on a socket ESOCK_DDPMODE_ALL armed, goes plain.
bool config_ok();
// Whether a socket (implicit: made DDPMODE by esockrun --ddp) falls back to plain TCP.
inline bool falls_back(bool implicit) {
  return config().fallback == "fallback" || (config().fallback == "auto" && implicit);
}

}  // namespace esock::sockets
