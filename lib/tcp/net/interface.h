// One IPv4 interface over one Device: Ethernet demux, ARP (RFC 826) cache, resolution and
// replies, IPv4 (RFC 791) with fragment reassembly (RFC 815 style hole tracking, bounded,
// timed out), ICMP echo replies (RFC 792), and TCP segments handed to a TcpSink after
// their checksum is verified. Outbound TCP segments are built here (headers, checksums in
// software or offloaded) so the TCP engine never touches bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "base/buf_ref.h"
#include "base/bytes.h"
#include "base/time.h"
#include "tcp/dev/device.h"
#include "tcp/wire/addr.h"
#include "tcp/wire/tcp.h"

namespace esock::tcp {

struct InterfaceConfig {
  Ipv4Addr ip;
  std::uint8_t prefix_len = 24;
  Ipv4Addr gateway;            // 0.0.0.0: none (off-link destinations unreachable)
  Duration arp_timeout = 60s;  // cache entry lifetime
  Duration arp_retry = 1s;     // resolution retransmit interval
  std::uint8_t arp_max_retries = 3;
  std::size_t arp_pending_max = 64;             // frames held per unresolved neighbour (copied)
  std::size_t arp_max_entries = 1024;           // neighbours cached (bounds an ARP flood)
  Duration reassembly_timeout = 30s;            // RFC 791: a lifetime, here fixed
  std::size_t reassembly_max_bytes = 4u << 20;  // all partial datagrams together
  std::uint8_t ttl = 64;
  // ICMP echo replies: at most this many per second on average, in bursts of at most
  // icmp_echo_burst (a peer cannot make the stack send at its own rate); 0: unlimited.
  std::uint32_t icmp_echo_per_sec = 1000;
  std::uint32_t icmp_echo_burst = 50;
};

// Receives verified TCP segments addressed to this interface.
class TcpSink {
 public:
  virtual ~TcpSink() = default;
  // `payload` points into the frame (or a reassembled datagram) kept alive by `ref`.
  virtual void on_tcp_segment(Instant now, Ipv4Addr src, Ipv4Addr dst, const TcpRepr& hdr,
                              bytes_view payload, const BufRef& ref) = 0;
};

struct InterfaceStats {
  std::uint64_t rx_frames = 0, rx_dropped = 0;  // dropped: not for us, malformed, bad csum
  std::uint64_t arp_requests_rx = 0, arp_replies_tx = 0, arp_requests_tx = 0;
  std::uint64_t arp_table_full = 0;  // a neighbour not learned: arp_max_entries live ones
  std::uint64_t ip_fragments_rx = 0, ip_reassembled = 0, ip_reassembly_dropped = 0;
  std::uint64_t icmp_echo_replies = 0;
  std::uint64_t icmp_echo_rate_limited = 0;  // requests left unanswered (icmp_echo_per_sec)
  std::uint64_t tcp_rx = 0, tcp_tx = 0, tcp_bad_csum = 0;
  std::uint64_t tcp_bad_header = 0;  // checksum good, header unparseable (RFC 9293 3.1)
  std::uint64_t tx_no_route = 0, tx_arp_dropped = 0, tx_device_full = 0;
  std::uint64_t tx_too_big = 0;  // segment larger than the MTU (we never fragment)
};

class Interface {
 public:
  Interface(Device& dev, const InterfaceConfig& cfg, TcpSink& tcp);
  ~Interface();
  Interface(const Interface&) = delete;
  Interface& operator=(const Interface&) = delete;

  // Receives up to one burst (rx_burst_size frames) from the device and processes it.
  // Returns frames handled.
  static constexpr std::size_t rx_burst_size = 32;
  std::size_t poll(Instant now);
  // ARP retries and expiry, reassembly timeouts.
  void on_timer(Instant now);
  // Hands queued frames to the device (once per poll-loop iteration).
  void flush();

  // Sends one TCP segment from this interface's address. Payload pieces are attached or
  // copied by the device (see device.h). Returns false when the frame could not be queued
  // (no route, ARP unresolved and its queue full, device full): TCP treats it as loss.
  // While ARP resolves, the frame is copied into a bounded per-neighbour queue.
  bool send_tcp(Instant now, Ipv4Addr dst, const TcpRepr& hdr, std::span<const TxPiece> payload);

  Ipv4Addr ip() const;
  MacAddr mac() const;
  // Largest TCP payload in one unfragmented segment with no options (MTU - 40).
  std::uint16_t mss() const;
  const InterfaceStats& stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace esock::tcp
