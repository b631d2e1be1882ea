// Per-connection TCP settings, with the defaults a general-purpose host uses.
#pragma once

#include <cstdint>

#include "base/time.h"
#include "tcp/engine/congestion.h"
#include "tcp/engine/rtt_estimator.h"

namespace esock::tcp {

struct TcpConfig {
  // Largest segment payload we accept (advertised in our SYN as the MSS option, RFC 9293
  // 3.7.1). The stack clamps it to the interface's MTU (Stack::clamp), so the default
  // lets a jumbo-frame link use its frames; set it lower to cap segments on every link.
  std::uint16_t mss = 65495;
  bool window_scaling = true;  // RFC 7323 section 2
  bool timestamps = true;      // RFC 7323 section 3 (RTTM and PAWS)
  bool sack = true;            // RFC 2018, recovery per RFC 6675
  bool nodelay = false;        // true turns the Nagle algorithm (RFC 9293 3.7.4) off

  std::uint32_t rcv_buf = 4u << 20;  // bytes of in-order + out-of-order data we hold
  std::uint32_t snd_buf = 4u << 20;  // bytes of unacknowledged + unsent data we hold
  // Received frames (mbufs) the in-order queue keeps by reference; past this, data is
  // copied and the frame released (recv_queue.h: the pool is shared by every connection).
  std::uint32_t rx_pinned_frames = 256;
  // Received octets this connection may always hold, whatever the stack's receive memory
  // bound says (rx_frame_budget.h; Linux's tcp_rmem[0]).
  std::uint32_t rx_memory_min = 64 * 1024;

  CcAlgorithm congestion = CcAlgorithm::cubic;  // RFC 9438 by default
  std::uint32_t initial_window_segments = 10;   // RFC 6928 (RFC 5681 allows up to 4)
  RttConfig rtt;

  // Delayed ACKs (RFC 9293 3.8.6.3, RFC 5681 4.2): ACK at least every second full-sized
  // segment and never later than this.
  Duration delayed_ack = 40ms;
  bool quickack = false;  // ACK every segment immediately

  std::uint8_t syn_retries = 6;   // SYN / SYN-ACK retransmissions before giving up
  std::uint8_t max_retries = 15;  // R2 (RFC 9293 3.8.3) for data, then abort
  Duration persist_max = 60s;     // cap of the zero-window probe interval (3.8.6.1)

  // Keepalive (RFC 9293 3.8.4): off by default, as the RFC requires.
  bool keepalive = false;
  Duration keepalive_idle = 7200s;
  Duration keepalive_interval = 75s;
  std::uint8_t keepalive_probes = 9;

  Duration msl = 30s;  // TIME-WAIT lasts 2 * MSL (RFC 9293 3.4.2 allows a smaller MSL)
  // A FIN-WAIT-2 connection the application has already closed cannot be read from; it is
  // dropped after this (common practice; the RFC waits forever). Zero disables.
  Duration orphan_fin_wait2 = 60s;

  // RFC 5961 section 7: at most this many challenge ACKs per second per connection.
  std::uint32_t challenge_ack_limit = 100;
};

}  // namespace esock::tcp
