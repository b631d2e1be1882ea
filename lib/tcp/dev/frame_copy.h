// Flat copies of transmitted frames, for the devices and wrappers that must keep a frame
// after tx() returns (the in-memory link, the fault injector's held frames, the pcap
// writer's capture). device.h promises that tx() leaves the caller's refs alone, so
// anything kept beyond the call has to be a copy we own.
#pragma once

#include <cstddef>

#include "base/buf_ref.h"
#include "base/bytes.h"
#include "tcp/dev/device.h"

namespace esock::tcp {

// head + every payload piece, in bytes.
std::size_t frame_length(const TxFrame& frame);

// Copies head + payload into `out` (which must hold frame_length(frame) bytes).
void copy_frame(const TxFrame& frame, mut_bytes out);

// A frame copied into one HeapBuf: `data` stays valid while `ref` lives.
struct FlatFrame {
  BufRef ref;
  mut_bytes data;
};
FlatFrame flatten(const TxFrame& frame);

// A received frame copied into its own HeapBuf (so the source's buffer, e.g. an mbuf,
// can go back to its pool).
RxFrame copy_rx(const RxFrame& frame);

}  // namespace esock::tcp
