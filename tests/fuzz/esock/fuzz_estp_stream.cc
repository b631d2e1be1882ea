// Fuzzes the ESTP engine (lib/esock/estp) as a hostile peer and a random application: the
// input is a script of peer Sends (raw octets, or well-formed messages with fuzzed fields),
// completions with any status, and application calls (sinks of section 6.2 included). Invariants:
// no crash or sanitizer report; every Send the engine posts is a well-formed ESTP message from
// registered memory; at most R receives are posted; a failed stream posts nothing more; readable()
// agrees with what read() returns; reads never report more octets than the buffer holds.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <vector>

#include "esock/estp/stream.h"

using namespace esock;
using namespace esock::estp;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

struct Verbs final : rnic::Verbs {
  struct Wr {
    std::uint64_t wr_id;
    std::uint8_t* addr;
    std::uint32_t len;
    ddp::stag_t lkey;
  };
  int post_send(std::uint64_t wr_id, std::span<const ddp::Sge> sg) override {
    check(sg.size() == 1 && covers(sg[0]));
    check(parse({sg[0].addr, sg[0].length}).has_value());
    ++posts;
    if (fail_posts) return EINVAL;
    sends.push_back({wr_id, sg[0].addr, sg[0].length, sg[0].lkey});
    return 0;
  }
  int post_recv(std::uint64_t wr_id, std::span<const ddp::Sge> sg) override {
    check(sg.size() == 1 && covers(sg[0]));
    ++posts;
    if (fail_posts) return EINVAL;
    recvs.push_back({wr_id, sg[0].addr, sg[0].length, sg[0].lkey});
    return 0;
  }
  int post_read(std::uint64_t wr_id, std::span<const ddp::Sge> sink, ddp::stag_t,
                std::uint64_t) override {
    check(sink.size() == 1 && covers(sink[0]));
    ++posts;
    if (fail_posts) return EINVAL;
    reads.push_back({wr_id, sink[0].addr, sink[0].length, sink[0].lkey});
    return 0;
  }
  int post_write(std::uint64_t wr_id, std::span<const ddp::Sge> sg, ddp::stag_t,
                 std::uint64_t) override {
    check(sg.size() == 1 && covers(sg[0]));
    ++posts;
    if (fail_posts) return EINVAL;
    writes.push_back({wr_id, sg[0].addr, sg[0].length, sg[0].lkey});
    return 0;
  }
  ddp::stag_t reg_mr(void* addr, std::size_t len, std::uint32_t) override {
    if (fail_reg) return 0;
    mrs[next] = {static_cast<std::uint8_t*>(addr), len};
    return next++;
  }
  int dereg_mr(ddp::stag_t s) override { return mrs.erase(s) ? 0 : EINVAL; }
  std::size_t poll_send_cq(std::span<ddp::Completion> out) override { return drain(scq, out); }
  std::size_t poll_recv_cq(std::span<ddp::Completion> out) override { return drain(rcq, out); }

  bool covers(const ddp::Sge& e) const {
    const auto it = mrs.find(e.lkey);
    if (it == mrs.end()) return false;
    const std::uint8_t* b = it->second.first;
    return e.addr >= b && e.length <= it->second.second &&
           static_cast<std::size_t>(e.addr - b) <= it->second.second - e.length;
  }
  static std::size_t drain(std::deque<ddp::Completion>& q, std::span<ddp::Completion> out) {
    std::size_t n = 0;
    for (; n < out.size() && !q.empty(); ++n, q.pop_front()) out[n] = q.front();
    return n;
  }

  std::map<ddp::stag_t, std::pair<std::uint8_t*, std::size_t>> mrs;
  std::deque<Wr> sends, recvs, reads, writes;
  std::deque<ddp::Completion> scq, rcq;
  std::uint64_t posts = 0;
  bool fail_posts = false, fail_reg = false;
  ddp::stag_t next = 1;
};

struct Script {
  const std::uint8_t* p;
  std::size_t n;
  std::uint8_t u8() { return n ? (--n, *p++) : 0; }
  std::uint32_t u16() { return std::uint32_t{u8()} << 8 | u8(); }
};

ddp::Status status(std::uint8_t b) {
  return b % 4 == 0 ? static_cast<ddp::Status>(1 + b / 4 % 8) : ddp::Status::success;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Script sc{data, size};
  const std::uint8_t knobs = sc.u8();
  const bool msgmode = knobs & 1, initiator = knobs & 2;
  const std::uint32_t R = 1 + (knobs >> 2) % 8, B = 256 + 64 * sc.u8();
  // Bit 5: the peer takes sinks (section 6.2); bit 6: rendezvous (and sinks) from 4 KiB.
  const std::size_t T = (knobs & 0x40) ? 4096u : 0u;
  const Params local{R, B, T, msgmode, T};
  const Hello peer{msgmode, 1u + sc.u8() % 8, 256u + 16u * sc.u8(), false, (knobs & 0x20) != 0};
  Verbs v;
  std::vector<std::uint8_t> src(1 << 16, 0x5a), zbuf(1 << 16), rbuf(1 << 16), sbuf(1 << 16);
  Stream s(v, local, peer);
  if (s.start(initiator) != 0) return 0;
  bool zc_pending = false;
  std::uint32_t id = 1;
  while (sc.n > 0) {
    const std::uint8_t op = sc.u8();
    const std::uint64_t posts_before = v.posts;
    const bool failed_before = s.error() != 0;
    switch (op % 17) {
      case 0:
      case 1: {  // the peer sends octets of its choosing
        if (v.recvs.empty()) break;
        std::vector<std::uint8_t> msg;
        if (op % 17 == 0) {
          const std::size_t len = std::min<std::size_t>(sc.u16() % 600, sc.n);
          msg.assign(sc.p, sc.p + len);
          sc.p += len, sc.n -= len;
        } else {
          Message m{.type = static_cast<Type>(1 + sc.u8() % 8)};
          m.flags = static_cast<std::uint16_t>(sc.u8() & 1);
          m.credits = sc.u8() % 4;
          m.length = sc.u16();
          if (sc.u8() & 1)
            m.id = id++;
          else
            m.id = sc.u8();
          m.stag = 7;
          m.to = 0x1000;
          if (m.type == Type::credit || m.type == Type::fin || m.type == Type::sinkcancel)
            m.length = 0;
          if (m.type == Type::data) m.length %= 300;
          msg.assign(m.type == Type::data ? hdr_len + m.length : wire_size(m), 0xcc);
          emit_header(m, msg);
        }
        const auto r = v.recvs.front();
        v.recvs.pop_front();
        if (!msg.empty()) std::memcpy(r.addr, msg.data(), std::min<std::size_t>(msg.size(), r.len));
        v.rcq.push_back(
            {.wr_id = r.wr_id,
             .opcode = ddp::Opcode::recv,
             .status = msg.size() > r.len ? ddp::Status::local_length_error : status(sc.u8()),
             .byte_len = static_cast<std::uint32_t>(msg.size())});
        break;
      }
      case 2: {  // the application reads (and readable() must have told the truth)
        const bool peek = sc.u8() & 1;
        const std::size_t want = 1 + sc.u16() % rbuf.size();
        const bool said = s.readable();
        const mut_bytes dst{rbuf.data(), want};
        const ReadOut r = s.read({&dst, 1}, peek);
        check(r.n <= want);
        const bool got = r.n > 0 || r.eom || r.err != EAGAIN;
        if (!zc_pending && !s.sink_out()) check(said == got);
        break;
      }
      case 3: {  // the application writes
        const std::size_t n = sc.u16() % 3000;
        const auto w = s.write({src.data(), n}, sc.u8() & 1);
        check(w <= static_cast<std::ptrdiff_t>(n));
        break;
      }
      case 4:
        if (!s.rndv_active())
          s.start_rndv({src.data(), 1 + sc.u16() % src.size()});
        else
          s.rndv_finished();
        break;
      case 5:
        if (zc_pending) {
          if (const auto r = s.pull_result()) check(r->n <= zbuf.size()), zc_pending = false;
        } else if (s.pull_needed() && s.pull({zbuf.data(), 1 + sc.u16() % zbuf.size()}) == 0) {
          zc_pending = true;
        }
        break;
      case 6:
        s.pull_bounce();
        break;
      case 7: {  // the transport took the Sends
        const ddp::Status st = status(sc.u8());
        while (!v.sends.empty()) {
          v.scq.push_back({.wr_id = v.sends.front().wr_id, .status = st});
          v.sends.pop_front();
        }
        while (!v.writes.empty()) {
          v.scq.push_back(
              {.wr_id = v.writes.front().wr_id, .opcode = ddp::Opcode::write, .status = st});
          v.writes.pop_front();
        }
        break;
      }
      case 8: {  // a Read Response (only into a sink still registered: its STag check)
        if (v.reads.empty()) break;
        const auto r = v.reads.front();
        v.reads.pop_front();
        ddp::Status st = status(sc.u8());
        if (!v.mrs.count(r.lkey)) st = ddp::Status::local_protection_error;
        if (st == ddp::Status::success) std::memset(r.addr, 0xa5, r.len);
        v.scq.push_back({.wr_id = r.wr_id, .opcode = ddp::Opcode::read, .status = st});
        break;
      }
      case 9:  // the queue pair left RTS
        for (const auto& r : v.recvs)
          v.rcq.push_back(
              {.wr_id = r.wr_id, .opcode = ddp::Opcode::recv, .status = ddp::Status::flushed});
        v.recvs.clear();
        break;
      case 10:
        s.shutdown_write();
        break;
      case 11:
        if (sc.u8() & 1)
          s.cancel_pull(), zc_pending = false;
        else
          s.cancel_rndv();
        break;
      case 12:
        s.fail(ECONNRESET);
        break;
      case 13:
        v.fail_posts = sc.u8() % 8 == 0;
        v.fail_reg = sc.u8() % 8 == 0;
        break;
      case 14:  // a reader offers its buffer as a sink, or collects the outcome
        if (s.sink_out()) {
          if (const auto r = s.sink_result()) check(r->n <= sbuf.size());
        } else if (s.sink_possible(sbuf.size())) {
          s.offer_sink(sbuf);
        }
        break;
      case 15:
        s.cancel_sink();
        break;
      case 16:  // a writer uses the peer's sink, finishes, or gives up
        if (!s.sink_write_active()) {
          if (s.sink_writable()) {
            const auto k = s.write_sink({src.data(), 1 + sc.u16() % src.size()});
            check(k <= static_cast<std::ptrdiff_t>(src.size()));
          }
        } else if (sc.u8() & 1) {
          s.sink_write_finished();
        } else {
          s.cancel_sink_write();
        }
        break;
    }
    s.progress();
    check(v.recvs.size() <= R);
    if (failed_before) check(v.posts == posts_before);  // a failed stream is silent
    if (s.error() != 0) check(s.readable() && s.writable() && s.tx_idle());
  }
  return 0;
}
