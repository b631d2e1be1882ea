// Interface internals shared by interface.cc (demux, timers), interface_arp.cc,
// interface_ipv4.cc (receive) and interface_tx.cc (send). Not a public header.
#pragma once

#include <optional>
#include <vector>

#include "tcp/net/arp_cache.h"
#include "tcp/net/interface.h"
#include "tcp/net/ipv4_reassembly.h"
#include "tcp/net/token_bucket.h"
#include "tcp/wire/arp.h"
#include "tcp/wire/ethernet.h"
#include "tcp/wire/ipv4.h"

namespace esock::tcp {

struct Interface::Impl {
  Impl(Device& d, const InterfaceConfig& c, TcpSink& t);

  // Receive (interface.cc, interface_arp.cc, interface_ipv4.cc).
  void on_frame(Instant now, const RxFrame& f);
  void on_arp(Instant now, bytes_view packet);
  void on_ipv4(Instant now, const EthernetView& eth, const RxFrame& f);
  void deliver(Instant now, const EthernetView& eth, const Ipv4View& ip, bytes_view payload,
               const BufRef& ref, std::uint8_t csum);
  void on_tcp(Instant now, Ipv4Addr src, Ipv4Addr dst, bytes_view segment, const BufRef& ref,
              std::uint8_t csum);
  void on_icmp(Instant now, const EthernetView& eth, const Ipv4View& ip, bytes_view message);
  void drop() { ++stats.rx_dropped; }

  // Send (interface_arp.cc, interface_tx.cc).
  void send_arp(ArpOp op, const MacAddr& eth_dst, const MacAddr& tha, Ipv4Addr tpa);
  void release(std::vector<PendingFrame>& frames, const MacAddr& mac);
  std::optional<Ipv4Addr> next_hop(Ipv4Addr dst) const;
  bool send_tcp(Instant now, Ipv4Addr dst, const TcpRepr& hdr, std::span<const TxPiece> payload);

  Device& dev;
  const InterfaceConfig cfg;
  TcpSink& tcp;
  const MacAddr mac;
  const DeviceCaps caps;
  const std::uint32_t mask;  // from cfg.prefix_len
  ArpCache arp;
  Ipv4Reassembly reassembly;
  InterfaceStats stats;
  std::uint16_t next_ip_id = 0;
  TokenBucket echo_limit;
  std::vector<PendingFrame> released;  // scratch, reused
  std::vector<Ipv4Addr> retry;         // scratch, reused
};

}  // namespace esock::tcp
