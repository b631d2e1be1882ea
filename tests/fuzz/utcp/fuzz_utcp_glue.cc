// Fuzzes the utcp glue (lib/esock/utcp): TCP's out-of-order segments handed to placement
// (TcbUser::on_out_of_order), the ranges TCP later reports delivered (on_range_delivered),
// and the FPDU records on the transmit side, with two lib/tcp stacks and an iWARP
// endpoint on each joined by a link the input controls frame by frame: each frame in
// flight is delivered, dropped, duplicated, held back behind later ones, or delivered with
// one octet changed and its TCP checksum recomputed (damage that only MPA's CRC or DDP's
// checks can catch). The application posts Sends and RDMA Writes of input-chosen sizes.
// Checks: no crash or sanitizer report; every receive that completes successfully holds
// exactly the octets of its Send; a Write's region, once the Write completes at the
// source, holds exactly its octets when no frame was damaged, and otherwise no octet that
// is neither the Write's nor the region's earlier content. (A damaged ULPDU_Length that
// claims more than was sent leaves the receiver waiting for the rest of an FPDU that never
// comes: the Write is complete at its source, TCP delivered and acknowledged every octet,
// and the target never places the tail. Found by this target; no error can be reported
// before more octets arrive, as with any iWARP receiver: RFC 5044 section 4.)
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <vector>

#include "../tcp/fuzz_reader.h"
#include "esock/utcp/endpoint.h"
#include "tcp/stack/stack.h"
#include "tcp/wire/checksum.h"
#include "tcp/wire/ethernet.h"
#include "tcp/wire/ipv4.h"

using namespace esock;
using namespace std::chrono_literals;
using Bytes = std::vector<std::uint8_t>;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

const tcp::Ipv4Addr ip_a = tcp::Ipv4Addr::from_octets(10, 5, 0, 1);
const tcp::Ipv4Addr ip_b = tcp::Ipv4Addr::from_octets(10, 5, 0, 2);
constexpr std::size_t max_msg = 4096;
constexpr std::size_t recvs = 4;
constexpr std::size_t region_len = 16384;

std::uint8_t pattern(std::uint64_t msg, std::size_t i) {
  return static_cast<std::uint8_t>((msg * 131 + i * 7 + (i >> 8)) & 0xff);
}

// One end of the link: what the stack sends waits in `out` for the script's verdict.
class End final : public tcp::Device {
 public:
  explicit End(std::uint8_t id) : mac_{{0x02, 0, 0, 0, 0, id}} {}
  tcp::MacAddr mac() const override { return mac_; }
  tcp::DeviceCaps caps() const override { return tcp::DeviceCaps{}; }
  std::size_t rx_burst(std::span<tcp::RxFrame> burst) override {
    std::size_t n = 0;
    while (n < burst.size() && !in.empty()) {
      std::uint8_t* p = nullptr;
      burst[n].ref = HeapBuf::make(in.front().size(), &p);
      std::memcpy(p, in.front().data(), in.front().size());
      burst[n].data = bytes_view(p, in.front().size());
      burst[n].csum = 0;
      in.pop_front();
      ++n;
    }
    return n;
  }
  bool tx(const tcp::TxFrame& f) override {
    if (out.size() >= 512) return false;  // a full device: the stack retries
    Bytes b(f.head.begin(), f.head.end());
    for (const tcp::TxPiece& p : f.payload) b.insert(b.end(), p.data.begin(), p.data.end());
    out.push_back(std::move(b));
    return true;
  }
  void tx_flush() override {}
  tcp::DeviceStats stats() const override { return {}; }

  std::deque<Bytes> in, out;

 private:
  tcp::MacAddr mac_;
};

// One octet past the TCP header changed and the TCP checksum made valid again; false when
// the frame carries no TCP payload.
bool damage_keeping_checksum(Bytes& f, std::uint16_t where, std::uint8_t xor_mask) {
  tcp::EthernetView eth;
  if (tcp::EthernetView::check(f, eth) != tcp::EthParseError::none ||
      eth.ethertype() != tcp::ethertype::ipv4)
    return false;
  tcp::Ipv4View ip;
  if (tcp::Ipv4View::check(eth.payload(), ip) != tcp::Ipv4ParseError::none) return false;
  const std::size_t tcp_at = tcp::eth_header_len + (eth.payload().size() - ip.payload().size());
  if (ip.payload().size() < 20) return false;
  const std::size_t hl = std::size_t{static_cast<std::uint8_t>(f[tcp_at + 12] >> 4)} * 4;
  if (hl < 20 || ip.payload().size() <= hl) return false;
  const std::size_t body = ip.payload().size() - hl;
  f[tcp_at + hl + where % body] ^= xor_mask ? xor_mask : 1;
  f[tcp_at + 16] = f[tcp_at + 17] = 0;
  const bytes_view pieces[] = {bytes_view(f.data() + tcp_at + hl, body)};
  tcp::fill_tcp_checksum(ip.src(), ip.dst(), mut_bytes(f.data() + tcp_at, hl), pieces);
  return true;
}

struct Side {
  std::unique_ptr<End> dev;
  std::unique_ptr<tcp::Stack> stack;
  rnic::Context ctx;
  std::unique_ptr<utcp::Endpoint> ep;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tcp::fuzz::Reader r{data, size};
  ManualClock clock;
  Side a, b;
  a.dev = std::make_unique<End>(1);
  b.dev = std::make_unique<End>(2);
  tcp::StackConfig ca;
  ca.iface.ip = ip_a;
  ca.isn_key = tcp::IsnGenerator::Key{1};
  ca.tcp.mss = static_cast<std::uint16_t>(536 + (r.u8() % 4) * 300);  // FPDUs of several sizes
  tcp::StackConfig cb = ca;
  cb.iface.ip = ip_b;
  cb.isn_key = tcp::IsnGenerator::Key{2};
  a.stack = std::make_unique<tcp::Stack>(*a.dev, ca, clock.now());
  b.stack = std::make_unique<tcp::Stack>(*b.dev, cb, clock.now());
  int err = 0;
  tcp::Listener* l = b.stack->listen(4791, 4, &err);
  check(l != nullptr);
  utcp::Options o;
  const std::uint8_t knobs = r.u8();
  o.mpa.markers = knobs & 1 ? mpa::Policy::require : mpa::Policy::refuse;
  // Without CRCs (RFC 5044 section 4.4: for links that protect the octets themselves) a
  // damaged octet cannot be caught, so the script damages frames only with CRCs.
  const bool crc = knobs & 2;
  o.mpa.crc = crc ? mpa::Policy::require : mpa::Policy::refuse;
  o.ooo_placement = !(knobs & 4);
  a.ep = utcp::Endpoint::connect(*a.stack, a.ctx, ip_b, 4791, o, &err);
  check(a.ep != nullptr);

  // Receive buffers and a remote-writable region at b; sources at a.
  std::array<Bytes, recvs> rx;
  std::array<ddp::stag_t, recvs> rx_stag{};
  Bytes region(region_len, 0), src(region_len + max_msg);
  Bytes known(region_len, 0);  // the region as completed Writes left it
  bool damaged = false;        // a frame went out damaged past TCP's checksum
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = pattern(i / 997, i);
  const ddp::stag_t src_stag = a.ctx.reg_mr(src.data(), src.size(), 0);
  const ddp::stag_t region_stag = b.ctx.reg_mr(region.data(), region.size(),
                                               ddp::access_remote_write | ddp::access_local_write);
  std::deque<std::pair<std::uint64_t, std::size_t>> sends;  // (message, length) not yet received
  struct PendingWrite {
    std::size_t off, len, src_off;
  };
  std::deque<PendingWrite> writes;  // posted, not completed, in order
  std::uint64_t next_msg = 0, posted_recvs = 0;
  bool failed = false;

  auto pump = [&] {
    a.stack->poll(clock.now());
    b.stack->poll(clock.now());
    if (!b.ep) {
      if (tcp::Connection* c = b.stack->accept(l)) {
        b.ep = utcp::Endpoint::accept(*b.stack, c, b.ctx, o);
        b.ep->hold_input(true);
      }
    }
    if (b.ep && b.ep->state() == utcp::Endpoint::State::established && posted_recvs == 0) {
      for (std::size_t i = 0; i < recvs; ++i) {
        rx[i].assign(max_msg, 0);
        rx_stag[i] = b.ctx.reg_mr(rx[i].data(), max_msg, ddp::access_local_write);
        const ddp::Sge g{rx[i].data(), max_msg, rx_stag[i]};
        check(b.ep->post_recv(i, {&g, 1}) == 0);
        ++posted_recvs;
      }
      b.ep->hold_input(false);
    }
    a.ep->progress();
    if (b.ep) b.ep->progress();
    using St = utcp::Endpoint::State;
    failed = failed || a.ep->state() == St::failed || (b.ep && b.ep->state() == St::failed);
    // Completions: every success is exactly what was posted.
    ddp::Completion c[8];
    if (b.ep) {
      for (std::size_t n = b.ep->poll_recv_cq(c); n > 0; n = b.ep->poll_recv_cq(c)) {
        for (std::size_t k = 0; k < n; ++k) {
          if (c[k].status != ddp::Status::success) continue;
          check(!sends.empty());
          const auto [msg, len] = sends.front();
          sends.pop_front();
          check(c[k].byte_len == len);
          const std::size_t at = static_cast<std::size_t>(msg % 997) * 3;
          check(std::memcmp(rx[c[k].wr_id].data(), src.data() + at, len) == 0);
          const ddp::Sge g{rx[c[k].wr_id].data(), max_msg, rx_stag[c[k].wr_id]};
          b.ep->post_recv(c[k].wr_id, {&g, 1});
        }
      }
    }
    for (std::size_t n = a.ep->poll_send_cq(c); n > 0; n = a.ep->poll_send_cq(c)) {
      for (std::size_t k = 0; k < n; ++k) {
        if (c[k].opcode != ddp::Opcode::write || c[k].status != ddp::Status::success) continue;
        // A Write completes at a when its octets were acknowledged, so b has placed them
        // (TCP acknowledges only what it took; placement happened before).
        check(!writes.empty());
        const PendingWrite w = writes.front();
        writes.pop_front();
        for (std::size_t i = 0; !failed && i < w.len; ++i) {
          const std::uint8_t got = region[w.off + i], want = src[w.src_off + i];
          check(got == want || (damaged && got == known[w.off + i]));
        }
        // After damage a Write may complete at its source without its tail placed (see the
        // top), so what it left behind is the region as it now is, not the Write's octets:
        // recording the Write's octets would make a later Write over the same range fail
        // the check for an octet that was rightly never changed (found by this target).
        if (damaged)
          std::memcpy(known.data() + w.off, region.data() + w.off, w.len);
        else
          std::memcpy(known.data() + w.off, src.data() + w.src_off, w.len);
      }
    }
    clock.advance(1ms);
  };

  while (r.n > 0) {
    const std::uint8_t op = r.u8();
    switch (op % 8) {
      case 0:
      case 1:
      case 2: {  // the frame at the head of one direction: its verdict
        End& from = op & 8 ? *b.dev : *a.dev;
        End& to = op & 8 ? *a.dev : *b.dev;
        if (from.out.empty()) break;
        const std::size_t i = r.u8() % from.out.size();
        Bytes f = std::move(from.out[i]);
        from.out.erase(from.out.begin() + static_cast<std::ptrdiff_t>(i));
        switch ((op >> 4) % 6) {
          case 0:
          case 1:
            to.in.push_back(std::move(f));
            break;
          case 2:  // lost
            break;
          case 3:  // duplicated
            to.in.push_back(f);
            to.in.push_back(std::move(f));
            break;
          case 4:  // held behind later frames
            from.out.push_back(std::move(f));
            break;
          case 5:  // damaged past TCP's checksum: only with CRCs, nothing else catches it
            if (crc && damage_keeping_checksum(f, r.u16(), r.u8())) damaged = true;
            to.in.push_back(std::move(f));
            break;
        }
        break;
      }
      case 3: {  // every frame waiting, in order (the link catches up)
        for (End* e : {a.dev.get(), b.dev.get()}) {
          End& to = e == a.dev.get() ? *b.dev : *a.dev;
          while (!e->out.empty()) {
            to.in.push_back(std::move(e->out.front()));
            e->out.pop_front();
          }
        }
        break;
      }
      case 4: {  // a Send of 0..max_msg octets, at most `recvs` unreceived
        if (sends.size() >= recvs || a.ep->state() != utcp::Endpoint::State::established) break;
        const std::size_t len = r.u16() % (max_msg + 1);
        const std::uint64_t msg = next_msg++;
        const std::size_t at = static_cast<std::size_t>(msg % 997) * 3;
        const ddp::Sge g{src.data() + at, static_cast<std::uint32_t>(len), src_stag};
        if (a.ep->post_send(msg, {&g, 1}) == 0) sends.emplace_back(msg, len);
        break;
      }
      case 5: {  // an RDMA Write into b's region
        if (a.ep->state() != utcp::Endpoint::State::established) break;
        const std::size_t off = r.u16() % region_len;
        const std::size_t len = 1 + r.u16() % (region_len - off);
        const std::size_t src_off = r.u8() * 16u;
        // Writes that overlap one not yet completed would make the region's final content
        // depend on their order; keep them apart.
        bool overlaps = false;
        for (const PendingWrite& w : writes) overlaps |= off < w.off + w.len && w.off < off + len;
        if (overlaps) break;
        const ddp::Sge g{src.data() + src_off, static_cast<std::uint32_t>(len), src_stag};
        if (a.ep->post_write(1000 + writes.size(), {&g, 1}, region_stag,
                             reinterpret_cast<std::uint64_t>(region.data()) + off) == 0)
          writes.push_back({off, len, src_off});
        break;
      }
      case 6:  // time passes (retransmission timers)
        clock.advance(std::chrono::milliseconds(r.u8()) * 8);
        break;
      case 7:
        break;
    }
    pump();
  }
  // Tear-down with whatever is in flight.
  a.ep.reset();
  b.ep.reset();
  a.stack->poll(clock.now() + 1ms);
  b.stack->poll(clock.now() + 1ms);
  return 0;
}
