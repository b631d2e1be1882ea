// Which sockets esockrun --ddp (ESOCK_DDPMODE_ALL) puts in DDPMODE (docs/configuration.md,
// "Rules"): ddpmode_programs at socket(), ddpmode_ports at connect() and listen(),
// ddpmode_peers at connect(). A socket a rule leaves out goes on as plain kernel TCP; an
// empty rule allows everything. Sockets the application puts in DDPMODE itself are its
// own choice: rules never apply to them.
#pragma once

#include <cstdint>
#include <string>

#include "esock/process/config_values.h"

namespace esock::sockets {

bool rules_allow_program(const Config& c, const std::string& name);
bool rules_allow_port(const Config& c, std::uint16_t port);
bool rules_allow_peer(const Config& c, std::uint32_t ipv4_host_order);

}  // namespace esock::sockets
