// Fuzzes the Interface with a fake device: a script of received frames (optionally patched
// to be addressed to us with valid IPv4 checksums, so fragments reach reassembly), timer
// ticks and sends. Sanitizers catch lifetime and bounds errors; the checks catch frames
// the interface emits that do not parse.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/endian.h"
#include "tcp/net/interface.h"
#include "tcp/wire/checksum.h"
#include "tcp/wire/ethernet.h"
#include "tcp/wire/ipv4.h"

using namespace esock;
using namespace esock::tcp;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

const MacAddr kMac{{0x02, 0, 0, 0, 0, 1}};
const Ipv4Addr kIp = Ipv4Addr::from_octets(10, 0, 0, 1);

class FuzzDevice final : public Device {
 public:
  MacAddr mac() const override { return kMac; }
  DeviceCaps caps() const override { return caps_; }
  std::size_t rx_burst(std::span<RxFrame> out) override {
    if (pending_.empty() || out.empty()) return 0;
    std::uint8_t* p = nullptr;
    out[0].ref = HeapBuf::make(pending_.size(), &p);
    std::memcpy(p, pending_.data(), pending_.size());
    out[0].data = bytes_view(p, pending_.size());
    out[0].csum = csum_;
    pending_.clear();
    return 1;
  }
  bool tx(const TxFrame& f) override {
    if (full_) return false;
    std::size_t len = f.head.size();
    for (const TxPiece& p : f.payload) len += p.data.size();
    check(f.head.size() >= eth_header_len && len <= eth_header_len + caps_.mtu);
    EthernetView eth;
    check(EthernetView::check(f.head, eth) == EthParseError::none && eth.src() == kMac);
    return true;
  }
  void tx_flush() override {}
  DeviceStats stats() const override { return {}; }

  DeviceCaps caps_;
  std::vector<std::uint8_t> pending_;
  std::uint8_t csum_ = 0;
  bool full_ = false;
};

class Sink final : public TcpSink {
 public:
  void on_tcp_segment(Instant, Ipv4Addr, Ipv4Addr dst, const TcpRepr&, bytes_view payload,
                      const BufRef& ref) override {
    check(dst == kIp && bool(ref));
    for (std::uint8_t b : payload) sum += b;  // touch every octet
  }
  unsigned sum = 0;
};

// Makes a frame reach the IPv4 layer: our MAC and address, a valid header checksum.
void patch(std::vector<std::uint8_t>& f) {
  if (f.size() < eth_header_len + ipv4_min_header) return;
  store_mac(f.data(), kMac);
  store_be16(f.data() + eth_off_type, ethertype::ipv4);
  std::uint8_t* ip = f.data() + eth_header_len;
  store_be32(ip + ipv4_off_dst, kIp.v);
  const std::size_t hlen = std::size_t{static_cast<unsigned>(ip[0] & 0x0f)} * 4;
  if (hlen < ipv4_min_header || eth_header_len + hlen > f.size()) return;
  store_be16(ip + ipv4_off_csum, 0);
  store_be16(ip + ipv4_off_csum, internet_checksum(bytes_view(ip, hlen)));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  FuzzDevice dev;
  dev.caps_.tx_ip_csum = data[0] & 1;
  dev.caps_.tx_l4_csum = data[0] & 2;
  dev.caps_.max_tx_pieces = static_cast<std::uint16_t>(1 + (data[0] >> 4));
  InterfaceConfig cfg;
  cfg.ip = kIp;
  cfg.gateway = Ipv4Addr::from_octets(10, 0, 0, 254);
  cfg.arp_pending_max = 1 + (data[1] & 3);
  cfg.arp_max_retries = data[1] >> 6;
  cfg.reassembly_max_bytes = 1u << (10 + (data[1] >> 2 & 7));
  cfg.reassembly_timeout = 2s;
  cfg.arp_timeout = 5s;
  Sink sink;
  Interface iface(dev, cfg, sink);
  Instant now{};
  std::size_t i = 2;
  std::vector<std::uint8_t> payload(2048, 0xab);
  while (i < size) {
    const std::uint8_t op = data[i++];
    switch (op & 3) {
      case 0: {  // a received frame: length (2), flags, bytes
        if (size - i < 3) return 0;
        std::size_t len = load_be16(data + i);
        const std::uint8_t flags = data[i + 2];
        i += 3;
        len = std::min(len, size - i);
        dev.pending_.assign(data + i, data + i + len);
        i += len;
        if (flags & 1) patch(dev.pending_);
        dev.csum_ = static_cast<std::uint8_t>(flags >> 4);
        iface.poll(now);
        break;
      }
      case 1:  // time passes
        now += std::chrono::milliseconds(100 * (op >> 2));
        iface.on_timer(now);
        break;
      case 2: {  // a send to one of a few addresses, some on-link, one off-link
        static const Ipv4Addr dsts[4] = {
            Ipv4Addr::from_octets(10, 0, 0, 2), Ipv4Addr::from_octets(10, 0, 0, 3),
            Ipv4Addr::from_octets(192, 0, 2, 1), Ipv4Addr::from_octets(10, 0, 0, 255)};
        TcpRepr h;
        h.flags = tcp_flag::ack;
        h.options.timestamps = TcpTimestamps{1, 2};
        h.options.sack_count = static_cast<std::uint8_t>((op >> 2) & 7) % 5;
        const std::size_t n_pieces = (op >> 5) & 7;
        std::vector<TxPiece> pieces;
        for (std::size_t k = 0; k < n_pieces; ++k)
          pieces.push_back({bytes_view(payload).first(k * 97 % 300), BufRef()});
        iface.send_tcp(now, dsts[(op >> 2) & 3], h, pieces);
        break;
      }
      default:
        dev.full_ = (op >> 2) & 1;
        iface.flush();
        break;
    }
  }
  const InterfaceStats& s = iface.stats();
  check(s.rx_dropped <= s.rx_frames);
  return 0;
}
