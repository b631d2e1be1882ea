// Test fixture for the interface: a fake Device (vectors of frames), a sink that records
// TCP segments, and builders for the frames a peer would send.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "base/endian.h"
#include "tcp/net/interface.h"
#include "tcp/wire/arp.h"
#include "tcp/wire/checksum.h"
#include "tcp/wire/ethernet.h"
#include "tcp/wire/icmp.h"
#include "tcp/wire/ipv4.h"

namespace esock::tcp::test {

using Bytes = std::vector<std::uint8_t>;

class FakeDevice final : public Device {
 public:
  struct Sent {
    Bytes bytes;  // head + pieces, concatenated
    TxOffload offload;
    std::size_t pieces = 0;
    bool attached = false;  // some piece carried a ref
  };

  MacAddr mac() const override { return mac_; }
  DeviceCaps caps() const override { return caps_; }
  std::size_t rx_burst(std::span<RxFrame> out) override {
    std::size_t n = 0;
    while (n < out.size() && !rx.empty()) {
      std::uint8_t* p = nullptr;
      // Each frame in its own heap block, as a NIC's mbuf would be.
      out[n].ref = HeapBuf::make(rx.front().first.size(), &p);
      if (!rx.front().first.empty())
        std::memcpy(p, rx.front().first.data(), rx.front().first.size());
      out[n].data = bytes_view(p, rx.front().first.size());
      out[n].csum = rx.front().second;
      rx.pop_front();
      ++n;
    }
    stats_.rx_frames += n;
    return n;
  }
  bool tx(const TxFrame& f) override {
    if (full) {
      ++stats_.tx_dropped;
      return false;
    }
    Sent s;
    s.bytes.assign(f.head.begin(), f.head.end());
    for (const TxPiece& p : f.payload) {
      s.bytes.insert(s.bytes.end(), p.data.begin(), p.data.end());
      if (p.ref) s.attached = true;
    }
    s.offload = f.offload;
    s.pieces = f.payload.size();
    sent.push_back(std::move(s));
    ++stats_.tx_frames;
    return true;
  }
  void tx_flush() override { ++flushes; }
  DeviceStats stats() const override { return stats_; }

  MacAddr mac_{{0x02, 0, 0, 0, 0, 0x01}};
  DeviceCaps caps_;
  std::deque<std::pair<Bytes, std::uint8_t>> rx;
  std::vector<Sent> sent;
  bool full = false;
  int flushes = 0;

 private:
  DeviceStats stats_;
};

struct Segment {
  Ipv4Addr src, dst;
  TcpRepr hdr;
  std::string payload;
  bool has_ref = false;
};

class RecordingSink final : public TcpSink {
 public:
  void on_tcp_segment(Instant, Ipv4Addr src, Ipv4Addr dst, const TcpRepr& hdr, bytes_view payload,
                      const BufRef& ref) override {
    segs.push_back({src, dst, hdr, std::string(payload.begin(), payload.end()), bool(ref)});
  }
  std::vector<Segment> segs;
};

inline const Ipv4Addr kOurIp = Ipv4Addr::from_octets(10, 0, 0, 1);
inline const Ipv4Addr kPeerIp = Ipv4Addr::from_octets(10, 0, 0, 2);
inline const Ipv4Addr kOtherIp = Ipv4Addr::from_octets(10, 0, 0, 3);
inline const Ipv4Addr kGateway = Ipv4Addr::from_octets(10, 0, 0, 254);
inline const Ipv4Addr kRemoteIp = Ipv4Addr::from_octets(192, 0, 2, 7);
inline const MacAddr kOurMac{{0x02, 0, 0, 0, 0, 0x01}};
inline const MacAddr kPeerMac{{0x02, 0, 0, 0, 0, 0x02}};
inline const MacAddr kGwMac{{0x02, 0, 0, 0, 0, 0xfe}};

inline Bytes eth_frame(const MacAddr& dst, const MacAddr& src, std::uint16_t type,
                       const Bytes& payload) {
  Bytes f(eth_header_len);
  emit_ethernet({dst, src, type}, f);
  f.insert(f.end(), payload.begin(), payload.end());
  return f;
}

inline Bytes arp_frame(ArpOp op, const MacAddr& sha, Ipv4Addr spa, const MacAddr& tha, Ipv4Addr tpa,
                       const MacAddr& eth_dst) {
  Bytes a(arp_len);
  emit_arp({op, sha, spa, tha, tpa}, a);
  return eth_frame(eth_dst, sha, ethertype::arp, a);
}

// A TCP segment (header + data) with a correct checksum for src -> dst.
inline Bytes tcp_segment(Ipv4Addr src, Ipv4Addr dst, const TcpRepr& h, const std::string& data) {
  Bytes s(tcp_header_len(h));
  emit_tcp(h, s);
  s.insert(s.end(), data.begin(), data.end());
  const bytes_view body[] = {bytes_view(s).subspan(tcp_header_len(h))};
  fill_tcp_checksum(src, dst, mut_bytes(s.data(), tcp_header_len(h)), body);
  return s;
}

// An IPv4 datagram (or fragment) carrying `l4` octets.
inline Bytes ipv4_packet(Ipv4Addr src, Ipv4Addr dst, std::uint8_t proto, const Bytes& l4,
                         std::uint16_t id = 1, std::uint16_t frag_off = 0, bool mf = false) {
  Ipv4Repr r;
  r.src = src;
  r.dst = dst;
  r.protocol = proto;
  r.id = id;
  r.frag_offset = frag_off;
  r.more_frags = mf;
  r.payload_len = static_cast<std::uint16_t>(l4.size());
  Bytes p(ipv4_min_header);
  emit_ipv4(r, p);
  p.insert(p.end(), l4.begin(), l4.end());
  return p;
}

inline TcpRepr sample_hdr() {
  TcpRepr h;
  h.src_port = 40000;
  h.dst_port = 4791;
  h.seq = 1000;
  h.ack = 2000;
  h.flags = tcp_flag::ack | tcp_flag::psh;
  h.window = 512;
  h.options.timestamps = TcpTimestamps{1, 2};
  return h;
}

// The peer's frame carrying one TCP segment to us.
inline Bytes peer_tcp_frame(const std::string& data, TcpRepr h = sample_hdr()) {
  return eth_frame(
      kOurMac, kPeerMac, ethertype::ipv4,
      ipv4_packet(kPeerIp, kOurIp, ip_proto_tcp, tcp_segment(kPeerIp, kOurIp, h, data)));
}

class NetTest : public ::testing::Test {
 protected:
  InterfaceConfig config() const {
    InterfaceConfig c;
    c.ip = kOurIp;
    c.prefix_len = 24;
    c.gateway = kGateway;
    return c;
  }
  Interface& iface() {
    if (!if_) if_ = std::make_unique<Interface>(dev, cfg, sink);
    return *if_;
  }
  void feed(Bytes frame, std::uint8_t csum = 0) {
    dev.rx.emplace_back(std::move(frame), csum);
    iface().poll(now);
  }
  // Teaches the interface the peer's MAC (an ARP request from the peer for us) and forgets
  // the reply it sent.
  void learn_peer() {
    feed(arp_frame(ArpOp::request, kPeerMac, kPeerIp, MacAddr{}, kOurIp, MacAddr::broadcast()));
    dev.sent.clear();
  }
  bool send(const std::string& data, Ipv4Addr dst = kPeerIp) {
    const TxPiece p{bytes_view(reinterpret_cast<const std::uint8_t*>(data.data()), data.size()),
                    BufRef()};
    return iface().send_tcp(now, dst, sample_hdr(),
                            std::span<const TxPiece>(&p, data.empty() ? 0 : 1));
  }

  FakeDevice dev;
  RecordingSink sink;
  InterfaceConfig cfg = config();
  Instant now{1'000'000'000};
  std::unique_ptr<Interface> if_;
};

}  // namespace esock::tcp::test
