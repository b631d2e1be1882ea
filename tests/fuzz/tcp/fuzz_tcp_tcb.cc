// Drives one TCB with segments, user calls and time steps decoded from the input, after a
// real handshake, and checks the invariants the engine must keep whatever the peer sends:
// SND.UNA <= SND.NXT <= SND.MAX, nothing emitted beyond what the application gave, windows
// and queues within their bounds, and no crash or sanitizer report.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "base/seq32.h"
#include "fuzz_reader.h"
#include "tcp/engine/tcb.h"

using namespace esock;
using namespace esock::tcp;

namespace {

struct Sink : SegmentSink {
  bool emit(Instant, const FourTuple&, const TcpRepr& h, std::span<const TxPiece> p) override {
    std::size_t n = 0;
    for (const TxPiece& x : p) n += x.data.size();
    if (n > 65535) std::abort();
    last = h;
    ++count;
    return true;
  }
  TcpRepr last;
  std::uint64_t count = 0;
};

using fuzz::Reader;

void check(const Tcb& t) {
  TcbInfo i = t.info();
  if (t.state() == TcpState::closed || t.state() == TcpState::syn_sent) return;
  if (seq_gt(i.snd_una, i.snd_nxt) || seq_gt(i.snd_nxt, i.snd_max)) std::abort();
  if (t.reassembly().bytes_held() > (1u << 20)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Reader r{data, size};
  TcpConfig cfg;
  cfg.rcv_buf = 1 << 20;
  cfg.snd_buf = 1 << 20;
  std::uint8_t knobs = r.u8();
  cfg.sack = knobs & 1;
  cfg.timestamps = knobs & 2;
  cfg.window_scaling = knobs & 4;
  cfg.nodelay = knobs & 8;
  cfg.keepalive = knobs & 16;
  Sink sink;
  FourTuple tuple{Ipv4Addr{1}, Ipv4Addr{2}, 1000, 2000};
  Tcb tcb(cfg, tuple, sink, nullptr);
  Instant now{1'000'000'000};
  const std::uint32_t iss = 100, peer_iss = r.u32();
  tcb.open_active(now, iss, 0);

  // The peer's SYN-ACK with fuzzed options.
  TcpRepr synack;
  synack.src_port = 2000;
  synack.dst_port = 1000;
  synack.seq = peer_iss;
  synack.ack = iss + 1;
  synack.flags = tcp_flag::syn | tcp_flag::ack;
  synack.window = r.u16();
  std::uint8_t o = r.u8();
  if (o & 1) synack.options.mss = static_cast<std::uint16_t>(r.u16() | 64);
  if (o & 2) synack.options.wscale = static_cast<std::uint8_t>(r.u8() % 16);
  synack.options.sack_permitted = o & 4;
  if (o & 8) synack.options.timestamps = TcpTimestamps{r.u32(), 0};
  tcb.on_segment(now, synack, {}, BufRef());

  std::vector<std::uint8_t> payload(4096, 0x5a);
  std::uint32_t peer_seq = peer_iss + 1, tsval = 1;
  while (r.n > 0) {
    check(tcb);
    switch (r.u8() % 8) {
      case 0:
      case 1:
      case 2: {  // a segment from the peer, near the expected numbers
        TcpRepr s;
        s.src_port = 2000;
        s.dst_port = 1000;
        s.flags = r.u8();
        s.seq = peer_seq + static_cast<std::int16_t>(r.u16());
        s.ack = tcb.snd_una() + static_cast<std::int16_t>(r.u16());
        s.window = r.u16();
        if (synack.options.timestamps) s.options.timestamps = TcpTimestamps{tsval += r.u8() % 4, 0};
        std::uint8_t nsack = r.u8() % 5;
        for (std::uint8_t k = 0; k < nsack && k < 4; ++k) {
          std::uint32_t left = tcb.snd_una() + r.u16();
          s.options.sacks[k] = SackBlock{left, left + r.u16()};
        }
        s.options.sack_count = std::min<std::uint8_t>(nsack, 4);
        std::size_t len = r.u16() % payload.size();
        tcb.on_segment(now, s, std::span<const std::uint8_t>(payload.data(), len), BufRef());
        if (r.u8() & 1) peer_seq += static_cast<std::uint32_t>(len);
        break;
      }
      case 3:
        tcb.send(now, std::span<const std::uint8_t>(payload.data(), r.u16() % 4096));
        break;
      case 4: {
        std::vector<std::uint8_t> out(r.u16() % 8192);
        tcb.recv(now, out);
        break;
      }
      case 5:
        now += Duration(std::int64_t{r.u16()} * 100'000);
        break;  // up to 6.5 s
      case 6:
        if (r.u8() == 0xff) tcb.close(now);
        break;
      case 7:
        if (r.u8() == 0xff) tcb.abort(now);
        break;
    }
    if (tcb.next_deadline() <= now) tcb.on_timer(now);
  }
  check(tcb);
  return 0;
}
