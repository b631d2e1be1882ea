// Why a received TCP segment (or its payload) was discarded without being processed, in
// the spirit of Linux's `enum skb_drop_reason`. Every such path in the TCP input counts
// exactly one reason: the engine (per Tcb, TcbStats::drops), the stack for segments that
// find no connection (StackStats::drops, which also sums every Tcb's counters and the
// interface's checksum and header failures). lib/tcp/README.md lists where each is counted.
//
// A segment is counted once, at the point where the rest of it is thrown away; a segment
// that was partly used (say its ACK) and whose payload is then discarded counts too, since
// that payload is what the peer will have to send again.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace esock::tcp {

enum class DropReason : std::uint8_t {
  // Interface (lib/tcp/net), before demultiplexing. Counted there as
  // InterfaceStats::tcp_bad_csum / tcp_bad_header and folded into StackStats::drops.
  bad_checksum,  // RFC 9293 3.1: checksum over pseudo-header, header and data fails
  bad_header,    // RFC 9293 3.1: data offset below 5 or past the segment, or a bad option

  // Stack, no connection (RFC 9293 3.10.7.1-2, no_tcb.cc).
  no_connection,      // 3.10.7.1 CLOSED: answered with a reset unless it is one
  listen_rst,         // 3.10.7.2 first: an RST to a listener is ignored
  listen_ack,         // 3.10.7.2 second: an ACK to a listener is answered with a reset
  listen_no_syn,      // 3.10.7.2 fourth: neither SYN, ACK nor RST
  listen_tuple_busy,  // a SYN for a four-tuple whose CLOSED connection is not yet released
  syn_data,           // text in a SYN (no TCP Fast Open): the peer sends it again later

  // Engine, SYN-SENT (3.10.7.3) and the handshake.
  handshake_bad_ack,    // 3.10.7.3 first / 3.10.7.4 fifth (SYN-RECEIVED): ACK not for our SYN
  syn_sent_rst_no_ack,  // 3.10.7.3 second: an RST that does not acknowledge our SYN
  syn_sent_no_syn,      // 3.10.7.3 fifth: neither SYN nor RST

  // Engine, synchronized states (3.10.7.4), in the order the checks run.
  conn_closed,        // the TCB is CLOSED, or closed while this segment was processed
  ts_missing,         // RFC 7323 3.2: no TSopt once timestamps were negotiated
  paws,               // RFC 7323 5.3 R1: TSval older than TS.Recent
  old_sequence,       // 3.10.7.4 first: all of it (or all its text) is before RCV.NXT
  beyond_window,      // 3.10.7.4 first: it (or its text) starts past the receive window
  rst_out_of_window,  // RFC 5961 3.2: an RST outside the window is dropped silently
  rst_inexact,        // RFC 5961 3.2: in-window RST with SEG.SEQ != RCV.NXT: challenge ACK
  syn_in_window,      // RFC 5961 4.2: SYN in a synchronized state: challenge ACK
  no_ack,             // 3.10.7.4 fifth: the ACK bit is off
  ack_unsent,         // 3.10.7.4 fifth: SEG.ACK > SND.NXT (acknowledges nothing we sent)
  ack_too_old,        // RFC 5961 5.2: SEG.ACK < SND.UNA - MAX.SND.WND: challenge ACK
  data_after_fin,     // 3.10.7.4 seventh: text after the peer's FIN is ignored
  orphan_data,        // RFC 2525 2.17: data for a connection nobody will read: reset
  ooo_queue_full,     // the out-of-order store is full (TcbStats::ooo_dropped)
  rx_memory,          // the stack's received octets at their bound (StackConfig::rx_memory_max)
};

// Keep equal to the last enumerator + 1.
inline constexpr std::size_t drop_reason_count =
    static_cast<std::size_t>(DropReason::rx_memory) + 1;

// The enumerator's name ("paws", "old_sequence", ...).
const char* to_string(DropReason r);

// One counter per reason. Plain data: copied into snapshots, summed by the stack.
struct DropCounters {
  std::array<std::uint64_t, drop_reason_count> count{};

  std::uint64_t& operator[](DropReason r) { return count[static_cast<std::size_t>(r)]; }
  std::uint64_t operator[](DropReason r) const { return count[static_cast<std::size_t>(r)]; }
  std::uint64_t total() const;
  DropCounters& operator+=(const DropCounters& o);
  bool operator==(const DropCounters&) const = default;
};

// "reason=n reason=n ..." for the non-zero counters, "none" when all are zero.
std::string to_string(const DropCounters& d);

}  // namespace esock::tcp
