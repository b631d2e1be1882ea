#include "esock/process/rules.h"

#include <algorithm>

namespace esock::sockets {

bool rules_allow_program(const Config& c, const std::string& name) {
  // The kernel keeps a comm of at most 15 characters (TASK_COMM_LEN 16): a longer name in
  // the rule matches on those.
  constexpr std::size_t comm_max = 15;
  return c.ddpmode_programs.empty() ||
         std::any_of(c.ddpmode_programs.begin(), c.ddpmode_programs.end(),
                     [&name](const std::string& p) {
                       return p == name || (name.size() == comm_max && p.size() > comm_max &&
                                            p.compare(0, comm_max, name) == 0);
                     });
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
