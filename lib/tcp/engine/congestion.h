// Congestion control interface for the TCP engine (RFC 5681 and algorithms that refine
// it). The engine owns loss detection and recovery (RFC 6675 pipe or RFC 6582 NewReno);
// an algorithm only decides cwnd and ssthresh at the points the engine reports. Windows
// are in bytes.
#pragma once

#include <cstdint>
#include <memory>

#include "base/time.h"

namespace esock::tcp {

struct CcAck {
  Instant now;
  std::uint32_t bytes_acked = 0;  // newly acknowledged bytes (snd_una advance)
  std::uint32_t flight_size = 0;  // RFC 5681 FlightSize when the ACK arrived
  Duration srtt{0};               // zero if unknown
  Duration min_rtt{0};            // zero if unknown
};

class CongestionControl {
 public:
  virtual ~CongestionControl();

  // An ACK advancing snd_una while NOT in loss recovery.
  virtual void on_ack(const CcAck& ack) = 0;
  // Fast retransmit, or loss detected from SACK: set ssthresh and cwnd = ssthresh
  // (RFC 5681 3.2 steps 2 and 3 without the 3*SMSS inflation; the engine's recovery,
  // RFC 6675 pipe or RFC 6582, accounts for the segments that left the network).
  virtual void on_congestion(Instant now, std::uint32_t flight_size) = 0;
  // Full ACK ending recovery: cwnd = ssthresh (RFC 6582 3.2 step 3, "deflating").
  virtual void on_recovery_exit(Instant now) = 0;
  // Retransmission timeout: RFC 5681 eq. (4) (or the algorithm's own ssthresh), cwnd = LW.
  virtual void on_rto(Instant now, std::uint32_t flight_size) = 0;
  // The engine is about to send after an idle period longer than the RTO (it decides
  // that; `rto` is passed for algorithms that scale the reduction with it). RFC 5681 4.1:
  // cwnd = RW = min(IW, cwnd).
  virtual void on_idle_restart(Instant now, Duration rto) = 0;

  virtual std::uint32_t cwnd() const = 0;
  virtual std::uint32_t ssthresh() const = 0;
  virtual const char* name() const = 0;
};

enum class CcAlgorithm { reno, cubic };

// RFC 5681 3.1 eq. (1)-(3): the initial window for a sender MSS, used when the caller
// passes initial_cwnd == 0.
std::uint32_t rfc5681_initial_window(std::uint32_t smss);

// `smss` is the sender MSS in bytes (0 is treated as 1); `initial_cwnd` is IW in bytes
// (e.g. RFC 6928's 10 * SMSS), 0 meaning rfc5681_initial_window(smss). Allocates once, at
// connection setup.
std::unique_ptr<CongestionControl> make_congestion_control(CcAlgorithm algorithm,
                                                           std::uint32_t smss,
                                                           std::uint32_t initial_cwnd);

}  // namespace esock::tcp
