// Fuzzes the stack's listen / passive-open path: one tcp::Stack over a fake device, one
// listener with a tiny backlog (2 accepted, 2 half-open) so the half-open backlog fills and
// SYN cookies (or, with them off, eviction of the oldest half-open connection) take over.
// The input is a script: segments from a few hundred remote (address, port) pairs, with
// sequence numbers from the input or derived from what the stack last sent to that remote
// (so handshakes complete, including ACKs that echo a SYN cookie and its TSval), always
// with valid IPv4 and TCP checksums; time steps (past the 64 s cookie tick); accept, send,
// recv, close and abort on accepted connections. Checks: every frame the stack emits parses
// as Ethernet/ARP or Ethernet/IPv4/TCP with correct checksums, the listener's queues and
// the stack's connection count stay within their bounds, a SYN cookie is accepted only
// from the ACK of a SYN-ACK sent to that remote less than 128 s before, and no more
// distinct cookies are accepted than were sent.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "fuzz_reader.h"
#include "tcp/stack/stack.h"
#include "tcp/wire/arp.h"
#include "tcp/wire/checksum.h"
#include "tcp/wire/ethernet.h"
#include "tcp/wire/ipv4.h"
#include "tcp/wire/tcp.h"

using namespace esock;
using namespace esock::tcp;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

using Bytes = std::vector<std::uint8_t>;

const MacAddr kMac{{0x02, 0, 0, 0, 0, 1}};
const Ipv4Addr kIp = Ipv4Addr::from_octets(10, 0, 0, 1);
const Ipv4Addr kGateway = Ipv4Addr::from_octets(10, 0, 0, 254);
// Three on-link peers and one behind the gateway.
const std::array<Ipv4Addr, 4> kPeers{
    Ipv4Addr::from_octets(10, 0, 0, 2), Ipv4Addr::from_octets(10, 0, 0, 3),
    Ipv4Addr::from_octets(10, 0, 0, 4), Ipv4Addr::from_octets(192, 0, 2, 7)};
constexpr std::uint16_t kPort = 80;  // the listener; kPort + 1 has none
constexpr std::uint16_t kPeerPortBase = 40000;
constexpr std::size_t kRemotes = 256;  // peer (low 2 bits) x 64 source ports
constexpr std::size_t kBacklog = 2, kSynBacklog = 2, kMaxHeld = 4;

MacAddr mac_of(Ipv4Addr ip) {
  return MacAddr{{0x02, 0, 0, 0, 0, static_cast<std::uint8_t>(ip.v & 0xff)}};
}

// What the stack last sent to one remote (address, port), for replies that fit.
struct Remote {
  TcpRepr last;  // its last segment of any kind
  std::uint32_t last_len = 0;
  TcpRepr synack;           // its last SYN-ACK (a SYN cookie when the backlog was full)
  std::uint32_t tsval = 1;  // the remote's own timestamp clock
};

class FuzzDevice final : public Device {
 public:
  MacAddr mac() const override { return kMac; }
  DeviceCaps caps() const override { return DeviceCaps{}; }  // no offloads: check checksums
  std::size_t rx_burst(std::span<RxFrame> out) override {
    std::size_t n = 0;
    while (n < out.size() && !rx_.empty()) {
      std::uint8_t* p = nullptr;
      out[n].ref = HeapBuf::make(rx_.front().size(), &p);
      std::memcpy(p, rx_.front().data(), rx_.front().size());
      out[n].data = bytes_view(p, rx_.front().size());
      out[n].csum = 0;
      rx_.pop_front();
      ++n;
    }
    return n;
  }
  bool tx(const TxFrame& f) override {
    if (full_polls_ > 0) return false;
    Bytes b(f.head.begin(), f.head.end());
    for (const TxPiece& p : f.payload) b.insert(b.end(), p.data.begin(), p.data.end());
    check(b.size() <= eth_header_len + DeviceCaps{}.mtu);
    EthernetView eth;
    check(EthernetView::check(b, eth) == EthParseError::none && eth.src() == kMac);
    if (eth.ethertype() == ethertype::arp) {
      ArpRepr a;
      check(parse_arp(eth.payload(), &a) == ArpParseError::none);
      check(a.spa == kIp && a.sha == kMac);
      if (a.op == ArpOp::request) answer_arp(a.tpa);
      return true;
    }
    check(eth.ethertype() == ethertype::ipv4);
    Ipv4View ip;
    check(Ipv4View::check(eth.payload(), ip) == Ipv4ParseError::none);
    check(ip.protocol() == ip_proto_tcp && !ip.is_fragment() && ip.src() == kIp);
    check(tcp_checksum_ok(ip.src(), ip.dst(), ip.payload()));
    TcpRepr h;
    bytes_view payload;
    check(parse_tcp(ip.payload(), &h, &payload) == TcpParseError::none);
    check(h.src_port == kPort || h.src_port == kPort + 1);
    check(h.dst_port >= kPeerPortBase && h.dst_port < kPeerPortBase + kRemotes / 4);
    std::size_t peer = 0;
    while (peer < kPeers.size() && kPeers[peer] != ip.dst()) ++peer;
    check(peer < kPeers.size());
    Remote& r = remotes_[(h.dst_port - kPeerPortBase) * 4 + peer];
    r.last = h;
    r.last_len =
        static_cast<std::uint32_t>(payload.size()) + h.has(tcp_flag::syn) + h.has(tcp_flag::fin);
    if (h.has(tcp_flag::syn) && h.has(tcp_flag::ack)) {
      r.synack = h;
      synacks_.push_back({&r - remotes_.data(), h.seq, now_});
    }
    return true;
  }
  void tx_flush() override {}
  DeviceStats stats() const override { return {}; }

  // The neighbour answers at once (its reply arrives with the next poll).
  void answer_arp(Ipv4Addr who) {
    bool known = who == kGateway;
    for (Ipv4Addr p : kPeers) known |= p == who;
    if (!known) return;
    Bytes f(eth_header_len + arp_len);
    emit_ethernet({kMac, mac_of(who), ethertype::arp}, f);
    emit_arp({ArpOp::reply, mac_of(who), who, kMac, kIp},
             mut_bytes(f.data() + eth_header_len, arp_len));
    rx_.push_back(std::move(f));
  }

  std::deque<Bytes> rx_;
  std::array<Remote, kRemotes> remotes_{};
  struct SynAck {
    std::ptrdiff_t who;
    std::uint32_t seq;
    Instant when;
  };
  std::vector<SynAck> synacks_;  // every SYN-ACK sent, cookie or not
  Instant now_;
  int full_polls_ = 0;       // the device refuses frames for this many more polls
  bool must_drain_ = false;  // and takes them again for at least one poll after
};

using fuzz::Reader;

// A frame from remote `who` to us carrying `h` and `data`, checksums valid.
Bytes peer_tcp_frame(std::size_t who, const TcpRepr& h, bytes_view data) {
  const Ipv4Addr src = kPeers[who % 4];
  const std::size_t hl = tcp_header_len(h);
  Bytes s(hl);
  emit_tcp(h, s);
  s.insert(s.end(), data.begin(), data.end());
  const bytes_view body[] = {bytes_view(s).subspan(hl)};
  fill_tcp_checksum(src, kIp, mut_bytes(s.data(), hl), body);
  Ipv4Repr ip;
  ip.src = src;
  ip.dst = kIp;
  ip.protocol = ip_proto_tcp;
  ip.payload_len = static_cast<std::uint16_t>(s.size());
  Bytes f(eth_header_len + ipv4_min_header);
  const MacAddr from = who % 4 == 3 ? mac_of(kGateway) : mac_of(src);
  emit_ethernet({kMac, from, ethertype::ipv4}, mut_bytes(f.data(), eth_header_len));
  emit_ipv4(ip, mut_bytes(f.data() + eth_header_len, ipv4_min_header));
  f.insert(f.end(), s.begin(), s.end());
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Reader r{data, size};
  const std::uint8_t knobs = r.u8();
  StackConfig cfg;
  cfg.iface.ip = kIp;
  cfg.iface.prefix_len = 24;
  cfg.iface.gateway = kGateway;
  cfg.isn_key = IsnGenerator::Key{7, 1, 2, 3};
  cfg.syn_cookies = knobs & 1;
  cfg.tcp.timestamps = !(knobs & 2);
  cfg.tcp.sack = !(knobs & 4);
  cfg.tcp.window_scaling = !(knobs & 8);
  cfg.tcp.nodelay = knobs & 16;
  if (knobs & 32) cfg.tcp.rcv_buf = cfg.tcp.snd_buf = 4096;
  FuzzDevice dev;
  Instant now{1'000'000'000};
  auto stack = std::make_unique<Stack>(dev, cfg, now);
  int err = 0;
  Listener* l = stack->listen(kPort, kBacklog, &err, kSynBacklog);
  check(l != nullptr);

  std::vector<Connection*> held;
  std::uint64_t released = 0;  // closed or aborted by us: may linger (FIN-WAIT, TIME-WAIT)
  // SYN cookies accepted so far, and the distinct (remote, cookie) pairs among them: a
  // cookie is stateless, so the same ACK replayed once its connection is gone is accepted
  // again (stateless by design), and only distinct cookies are bounded by those sent.
  std::uint64_t cookies_accepted = 0;
  std::vector<std::pair<std::size_t, std::uint32_t>> cookies_used;
  static std::array<std::uint8_t, 8192> text;
  for (std::size_t k = 0; k < text.size(); ++k) text[k] = static_cast<std::uint8_t>(k * 7);

  while (r.n > 0) {
    const std::uint8_t op = r.u8();
    std::optional<std::pair<std::size_t, std::uint32_t>> sent_ack;  // (who, ack) of a segment
    switch (op % 8) {
      case 0:
      case 1:
      case 2: {  // a segment from one remote
        const std::size_t who = r.u8();
        Remote& rm = dev.remotes_[who];
        TcpRepr h;
        h.src_port = static_cast<std::uint16_t>(kPeerPortBase + who / 4);
        h.flags = r.u8();
        const std::uint8_t ctl = r.u8();
        h.dst_port = ctl & 0x80 ? kPort + 1 : kPort;
        const std::uint8_t w = r.u8();
        h.window = static_cast<std::uint16_t>(w ? (w << 8) | 0xff : 0);
        std::uint32_t echo = 0;  // the TSval a reply echoes
        switch (ctl & 3) {
          case 0:  // numbers from the input
            h.seq = r.u32();
            h.ack = r.u32();
            echo = r.u32();
            break;
          case 1:  // the reply to the stack's last segment
          case 3:  // the same, off by a little
            h.seq = rm.last.ack;
            h.ack = rm.last.seq + rm.last_len;
            if (rm.last.options.timestamps) echo = rm.last.options.timestamps->tsval;
            if ((ctl & 3) == 3) {
              h.seq += static_cast<std::uint32_t>(static_cast<std::int8_t>(r.u8()));
              h.ack += static_cast<std::uint32_t>(static_cast<std::int8_t>(r.u8()));
            }
            break;
          case 2:  // the reply to the stack's last SYN-ACK (completes a cookie handshake)
            h.seq = rm.synack.ack;
            h.ack = rm.synack.seq + 1;
            if (rm.synack.options.timestamps) echo = rm.synack.options.timestamps->tsval;
            break;
        }
        if (ctl & 4) h.options.mss = r.u16();
        if (ctl & 8) h.options.wscale = r.u8();
        h.options.sack_permitted = ctl & 16;
        if (ctl & 32) h.options.timestamps = TcpTimestamps{rm.tsval += 1 + r.u8(), echo};
        std::size_t len = 0;
        if (ctl & 64) len = std::size_t{r.u8()} * 4;
        dev.rx_.push_back(peer_tcp_frame(who, h, bytes_view(text.data(), len)));
        if (h.dst_port == kPort) sent_ack = {who, h.ack};
        break;
      }
      case 3: {  // time passes: ms, 100 ms, s, or more than one cookie tick
        const std::uint8_t t = r.u8();
        const std::int64_t v = t & 63;
        static constexpr std::int64_t unit[4] = {1'000'000, 100'000'000, 1'000'000'000,
                                                 4'000'000'000};
        now += Duration(v * unit[t >> 6] + (t >> 6 == 3 ? 64'000'000'000 : 0));
        break;
      }
      case 4:
        if (held.size() < kMaxHeld) {
          if (Connection* c = stack->accept(l)) held.push_back(c);
        }
        break;
      case 5:
        if (!held.empty()) {
          Connection* c = held[r.u8() % held.size()];
          c->send(bytes_view(text.data(), std::size_t{r.u8()} * 32));
        } else {
          r.u16();
        }
        break;
      case 6:
        if (!held.empty()) {
          Connection* c = held[r.u8() % held.size()];
          std::array<std::uint8_t, 4096> buf;
          c->recv(mut_bytes(buf.data(), std::size_t{r.u8()} * 16));
        } else {
          r.u16();
        }
        break;
      case 7: {  // close, abort, half-close, or a device that refuses frames for a while
        const std::uint8_t b = r.u8();
        if ((b & 3) == 3) {
          // Up to 64 polls, then at least one poll that drains. This target found that a
          // full device made Stack::blocked_ double every poll (a connection refused for
          // its data and its ACK was queued twice, and each copy retried it); it was capped
          // at 4 polls until that was fixed
          // (StackDrop.AFullDeviceRetriesEachConnectionOncePerPoll).
          if (dev.full_polls_ == 0 && !dev.must_drain_) dev.full_polls_ = 1 + ((b >> 2) & 63);
          break;
        }
        if (held.empty()) break;
        const std::size_t i = (b >> 2) % held.size();
        Connection* c = held[i];
        if ((b & 3) == 2) {
          c->shutdown_send();
          break;
        }
        if (b & 1)
          stack->abort(c);
        else
          stack->close(c);
        held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
        ++released;
        break;
      }
    }
    // One poll-loop round (1 ms, the stack's timer granularity), and more while ARP
    // replies the device queued wait to be received.
    now += std::chrono::milliseconds(1);
    dev.now_ = now;
    auto poll = [&] {
      stack->poll(now);
      if (dev.full_polls_ > 0)
        dev.must_drain_ = --dev.full_polls_ == 0;
      else
        dev.must_drain_ = false;
    };
    poll();
    for (int k = 0; k < 3 && !dev.rx_.empty(); ++k) poll();

    check(l->half_open() <= kSynBacklog && l->pending() <= kBacklog);
    // Half-open and waiting connections, the ones we hold, the ones we let go that may
    // still be closing: a SYN flood must not add to it.
    check(stack->connection_count() <= kSynBacklog + kBacklog + held.size() + released);
    const StackStats s = stack->stats();
    // A cookie is accepted only from the ACK of a SYN-ACK the stack sent to that remote
    // less than two 64 s ticks ago, at most one per segment.
    if (s.syn_cookies_accepted != cookies_accepted) {
      check(s.syn_cookies_accepted == cookies_accepted + 1 && sent_ack.has_value());
      cookies_accepted = s.syn_cookies_accepted;
      const auto [who, ack] = *sent_ack;
      bool sent = false;
      for (const FuzzDevice::SynAck& a : dev.synacks_)
        sent |= std::size_t(a.who) == who && a.seq == ack - 1 && now - a.when < 128s;
      check(sent);
      const std::pair<std::size_t, std::uint32_t> used{who, ack - 1};
      if (std::find(cookies_used.begin(), cookies_used.end(), used) == cookies_used.end())
        cookies_used.push_back(used);
    }
    check(cookies_used.size() <= s.syn_cookies_sent);
    check(cfg.syn_cookies || s.syn_cookies_sent == 0);
  }
  for (Connection* c : held) stack->abort(c);
  stack->poll(now + std::chrono::milliseconds(1));
  return 0;
}
