// Interface: construction, the receive loop and Ethernet demux, timers.
#include "tcp/net/interface.h"

#include <array>

#include "tcp/net/interface_impl.h"

namespace esock::tcp {

namespace {

std::uint32_t prefix_mask(std::uint8_t prefix_len) {
  if (prefix_len == 0) return 0;
  if (prefix_len >= 32) return 0xffffffffu;
  return ~std::uint32_t{0} << (32 - prefix_len);
}

ArpCacheConfig arp_config(const InterfaceConfig& c) {
  ArpCacheConfig a;
  a.timeout = c.arp_timeout;
  a.retry = c.arp_retry;
  a.max_retries = c.arp_max_retries;
  a.pending_max = c.arp_pending_max;
  a.max_entries = c.arp_max_entries;
  return a;
}

}  // namespace

Interface::Impl::Impl(Device& d, const InterfaceConfig& c, TcpSink& t)
    : dev(d),
      cfg(c),
      tcp(t),
      mac(d.mac()),
      caps(d.caps()),
      mask(prefix_mask(c.prefix_len)),
      arp(arp_config(c)),
      reassembly(c.reassembly_timeout, c.reassembly_max_bytes),
      echo_limit(c.icmp_echo_per_sec, c.icmp_echo_burst) {}

void Interface::Impl::on_frame(Instant now, const RxFrame& f) {
  ++stats.rx_frames;
  EthernetView eth;
  if (EthernetView::check(f.data, eth) != EthParseError::none) return drop();
  // Unicast to us or broadcast (ARP requests); no multicast groups are joined.
  const MacAddr dst = eth.dst();
  if (dst != mac && !dst.is_broadcast()) return drop();
  switch (eth.ethertype()) {
    case ethertype::arp:
      return on_arp(now, eth.payload());
    case ethertype::ipv4:
      return on_ipv4(now, eth, f);
    default:
      return drop();
  }
}

Interface::Interface(Device& dev, const InterfaceConfig& cfg, TcpSink& tcp)
    : impl_(std::make_unique<Impl>(dev, cfg, tcp)) {}

Interface::~Interface() = default;

std::size_t Interface::poll(Instant now) {
  std::array<RxFrame, rx_burst_size> burst;
  const std::size_t n = impl_->dev.rx_burst(burst);
  for (std::size_t i = 0; i < n; ++i) impl_->on_frame(now, burst[i]);
  return n;  // the burst's refs are released here, after the sink had its chance
}

void Interface::on_timer(Instant now) {
  Impl& m = *impl_;
  std::size_t dropped = 0;
  m.retry.clear();
  m.arp.on_timer(now, &m.retry, &dropped);
  m.stats.tx_arp_dropped += dropped;
  for (const Ipv4Addr ip : m.retry) m.send_arp(ArpOp::request, MacAddr::broadcast(), {}, ip);
  m.stats.ip_reassembly_dropped += m.reassembly.expire(now);
}

void Interface::flush() {
  impl_->dev.tx_flush();
}

bool Interface::send_tcp(Instant now, Ipv4Addr dst, const TcpRepr& hdr,
                         std::span<const TxPiece> payload) {
  return impl_->send_tcp(now, dst, hdr, payload);
}

Ipv4Addr Interface::ip() const {
  return impl_->cfg.ip;
}
MacAddr Interface::mac() const {
  return impl_->mac;
}
std::uint16_t Interface::mss() const {
  // RFC 9293 3.7.1: MSS = MTU - 20 (IPv4 header) - 20 (TCP header without options).
  return static_cast<std::uint16_t>(impl_->caps.mtu > 40 ? impl_->caps.mtu - 40 : 0);
}
const InterfaceStats& Interface::stats() const {
  return impl_->stats;
}

}  // namespace esock::tcp
