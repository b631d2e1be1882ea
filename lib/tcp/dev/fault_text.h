// Fault injection from one line of text, for a process that has no test to configure it
// (libesock's dpdk provider: ESOCK_DPDK_FAULTS, docs/configuration.md):
//   "loss=0.01,reorder=0.02,duplicate=0.01,corrupt=0.001,seed=7"
// Each probability (0..1) applies in both directions, to frames that carry TCP payload only,
// so connection set-up and pure ACKs are spared and a test's time stays bounded. corrupt
// flips a bit in the TCP payload and leaves the checksums wrong: TCP drops the frame, as a
// link's CRC would. Reordered frames go out after the next one or 1 ms. seed (default 1)
// makes a run reproducible.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "tcp/dev/fault_injector.h"

namespace esock::tcp {

// The configuration, or nullopt with *why saying which item is wrong. Empty text is an
// error too: a caller that has no faults does not ask.
std::optional<FaultConfig> parse_fault_text(std::string_view text, std::string* why);

// Whether a frame (FaultFrameInfo) is an IPv4 TCP segment that carries payload.
bool carries_tcp_payload(const FaultFrameInfo& f);

}  // namespace esock::tcp
