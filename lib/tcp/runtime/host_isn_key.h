// The ISN key shared by this user's stacks on this host until reboot (RFC 6528 section 3:
// "the secret key ... chosen randomly at boot time"). A key per process made a client's
// ISNs and timestamp offsets unrelated across its processes, so half the time a new client
// reusing the 4-tuple a server still held in TIME-WAIT failed RFC 6191's test (newer
// timestamp, higher sequence number) and paid a challenge ACK, an RST and a SYN
// retransmitted a second later (ab, a connection per request, against nginx over dpdk).
// Kept in /dev/shm (gone at reboot), mode 0600, owned by the user; anything else there
// (another owner, another size, a link) is not trusted and the stack keeps a random key.
#pragma once

#include <optional>
#include <string>

#include "tcp/engine/isn.h"

namespace esock::tcp {

// The key in `path` (default: /dev/shm/esock-isn-key.<uid>), made if missing; nullopt when
// it cannot be read or made safely (*why says why).
std::optional<IsnGenerator::Key> host_isn_key(std::string* why, const std::string& path = {});

}  // namespace esock::tcp
