#include "esock/process/rules.h"

#include <algorithm>

namespace esock::sockets {

bool rules_allow_program(const Config& c, const std::string& name) {
  return c.ddpmode_programs.empty() ||
         std::find(c.ddpmode_programs.begin(), c.ddpmode_programs.end(), name) !=
             c.ddpmode_programs.end();
}

bool rules_allow_port(const Config& c, std::uint16_t port) {
  return c.ddpmode_ports.empty() ||
         std::any_of(c.ddpmode_ports.begin(), c.ddpmode_ports.end(),
                     [port](const auto& r) { return port >= r.first && port <= r.second; });
}

bool rules_allow_peer(const Config& c, std::uint32_t a) {
  return c.ddpmode_peers.empty() ||
         std::any_of(c.ddpmode_peers.begin(), c.ddpmode_peers.end(), [a](const auto& n) {
           const std::uint32_t mask = n.second == 0 ? 0 : ~std::uint32_t{0} << (32 - n.second);
           return (a & mask) == (n.first & mask);
         });
}

}  // namespace esock::sockets
