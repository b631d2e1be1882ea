// A scripted rnic::Verbs for driving one ESTP engine alone: it records every post, lets the
// test play the peer (deliver any Send payload, hostile or not, into the oldest posted
// receive), complete work requests with any status, and make any verb fail. Nothing
// completes by itself, so every interleaving is the test's choice.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <vector>

#include "esock/estp/stream.h"
#include "esock/estp/wire.h"
#include "esock/rnic/verbs.h"

namespace esock::estp::testing {

class FakeVerbs final : public rnic::Verbs {
 public:
  struct Sent {
    std::uint64_t wr_id;
    std::vector<std::uint8_t> bytes;  // gathered at post time: what went on the wire
    bool completed = false;
  };
  struct Recv {
    std::uint64_t wr_id;
    std::uint8_t* addr;
    std::uint32_t len;
    ddp::stag_t lkey;
  };
  struct Read {
    std::uint64_t wr_id;
    std::uint8_t* addr;
    std::uint32_t len;
    ddp::stag_t lkey, rkey;
    std::uint64_t remote_to;
    bool completed = false;
  };
  struct Mr {
    void* addr;
    std::size_t len;
    std::uint32_t access;
  };

  // --- rnic::Verbs ---
  int post_send(std::uint64_t wr_id, std::span<const ddp::Sge> sg) override {
    if (send_error != 0) return send_error;
    Sent s{wr_id, {}};
    for (const ddp::Sge& e : sg) {
      EXPECT_TRUE(covers(e.lkey, e.addr, e.length)) << "send from unregistered memory";
      s.bytes.insert(s.bytes.end(), e.addr, e.addr + e.length);
    }
    sends.push_back(std::move(s));
    return 0;
  }
  int post_recv(std::uint64_t wr_id, std::span<const ddp::Sge> sg) override {
    if (recv_error != 0) return recv_error;
    EXPECT_EQ(sg.size(), 1u);
    EXPECT_TRUE(covers(sg[0].lkey, sg[0].addr, sg[0].length)) << "receive into unregistered memory";
    recvs.push_back(Recv{wr_id, sg[0].addr, sg[0].length, sg[0].lkey});
    ++recv_posts;
    return 0;
  }
  int post_read(std::uint64_t wr_id, std::span<const ddp::Sge> sink, ddp::stag_t rkey,
                std::uint64_t remote_to) override {
    if (read_error != 0) return read_error;
    EXPECT_EQ(sink.size(), 1u);
    EXPECT_TRUE(covers(sink[0].lkey, sink[0].addr, sink[0].length)) << "read into unregistered";
    reads.push_back(Read{wr_id, sink[0].addr, sink[0].length, sink[0].lkey, rkey, remote_to});
    return 0;
  }
  ddp::stag_t reg_mr(void* addr, std::size_t len, std::uint32_t access) override {
    if (reg_budget == 0) return 0;
    if (reg_budget > 0) --reg_budget;
    const ddp::stag_t s = next_stag_++;
    mrs[s] = Mr{addr, len, access};
    return s;
  }
  int dereg_mr(ddp::stag_t stag) override {
    deregistered.push_back(stag);
    return mrs.erase(stag) ? 0 : EINVAL;
  }
  bool reads_from(ddp::stag_t stag) const override { return reading.count(stag) != 0; }
  int move_mr(ddp::stag_t stag, void* mem, std::uint64_t* held) override {
    if (move_error != 0) return move_error;
    const auto it = mrs.find(stag);
    if (it == mrs.end()) return EINVAL;
    it->second.addr = mem;
    *held = reading.count(stag) ? 1 : 0;  // a segment sent from the old memory is held
    if (*held) reading_old.insert(stag);
    return 0;
  }
  bool reads_old(ddp::stag_t stag, std::uint64_t held) const override {
    return held != 0 && reading_old.count(stag) != 0;
  }
  std::size_t poll_send_cq(std::span<ddp::Completion> out) override { return drain(scq, out); }
  std::size_t poll_recv_cq(std::span<ddp::Completion> out) override { return drain(rcq, out); }

  // --- the peer and the RNIC, played by the test ---
  // One Send from the peer lands in the oldest posted receive (RFC 5041 untagged QN 0
  // buffers are consumed in order). byte_len is the Send's size, as a real RNIC reports it.
  void deliver(bytes_view payload, ddp::Status st = ddp::Status::success) {
    ASSERT_FALSE(recvs.empty()) << "peer sent without a posted receive (a credit violation)";
    const Recv r = recvs.front();
    recvs.pop_front();
    if (!payload.empty())
      std::memcpy(r.addr, payload.data(), std::min<std::size_t>(payload.size(), r.len));
    rcq.push_back(ddp::Completion{.wr_id = r.wr_id,
                                  .opcode = ddp::Opcode::recv,
                                  .status = st,
                                  .byte_len = static_cast<std::uint32_t>(payload.size())});
  }
  // A receive completion exactly as given (a misbehaving provider).
  void complete_recv_raw(const ddp::Completion& c) { rcq.push_back(c); }
  // The queue pair left RTS: every posted receive completes flushed.
  void flush_recvs() {
    for (const Recv& r : recvs)
      rcq.push_back(ddp::Completion{
          .wr_id = r.wr_id, .opcode = ddp::Opcode::recv, .status = ddp::Status::flushed});
    recvs.clear();
  }
  // Completes every Send not yet completed (the transport took the octets).
  void complete_sends(ddp::Status st = ddp::Status::success) {
    for (Sent& s : sends) {
      if (s.completed) continue;
      s.completed = true;
      scq.push_back(ddp::Completion{.wr_id = s.wr_id,
                                    .opcode = ddp::Opcode::send,
                                    .status = st,
                                    .byte_len = static_cast<std::uint32_t>(s.bytes.size())});
    }
  }
  // Completes the oldest outstanding RDMA Read: the Read Response carries `data` (the
  // peer's source octets at the requested offset), copied into the sink on success.
  void complete_read(bytes_view data, ddp::Status st = ddp::Status::success) {
    auto it = std::find_if(reads.begin(), reads.end(), [](const Read& r) { return !r.completed; });
    ASSERT_NE(it, reads.end()) << "no outstanding RDMA Read";
    it->completed = true;
    if (st == ddp::Status::success && !data.empty()) {
      ASSERT_EQ(data.size(), it->len) << "a Read Response fills the whole sink";
      ASSERT_TRUE(mrs.count(it->lkey)) << "read sink deregistered before completion";
      std::memcpy(it->addr, data.data(), data.size());
    }
    scq.push_back(ddp::Completion{
        .wr_id = it->wr_id, .opcode = ddp::Opcode::read, .status = st, .byte_len = it->len});
  }

  // Everything posted as a Send, parsed as ESTP (each must be a well-formed message).
  std::vector<Message> messages() const {
    std::vector<Message> out;
    for (const Sent& s : sends) {
      const auto m = parse(s.bytes);
      EXPECT_TRUE(m) << "the engine sent a malformed ESTP message";
      if (m) out.push_back(*m);
    }
    return out;
  }
  bool registered(ddp::stag_t s) const { return mrs.count(s) != 0; }

  std::vector<Sent> sends;
  std::deque<Recv> recvs;  // posted, not yet consumed
  std::vector<Read> reads;
  std::map<ddp::stag_t, Mr> mrs;
  std::vector<ddp::stag_t> deregistered;
  std::set<ddp::stag_t> reading;      // regions the "RNIC" still reads (a Read Response in flight)
  std::set<ddp::stag_t> reading_old;  // ... moved ones whose old memory it still reads
  std::deque<ddp::Completion> scq, rcq;
  std::size_t recv_posts = 0;
  int send_error = 0, recv_error = 0, read_error = 0;  // non-zero: that post fails so
  int move_error = 0;                                  // non-zero: move_mr fails so
  int reg_budget = -1;                                 // registrations left (-1: unlimited)

 private:
  bool covers(ddp::stag_t s, const std::uint8_t* p, std::size_t n) const {
    const auto it = mrs.find(s);
    if (it == mrs.end()) return false;
    const auto* base = static_cast<const std::uint8_t*>(it->second.addr);
    return p >= base && n <= it->second.len &&
           static_cast<std::size_t>(p - base) <= it->second.len - n;
  }
  static std::size_t drain(std::deque<ddp::Completion>& q, std::span<ddp::Completion> out) {
    std::size_t n = 0;
    for (; n < out.size() && !q.empty(); ++n) {
      out[n] = q.front();
      q.pop_front();
    }
    return n;
  }
  ddp::stag_t next_stag_ = 0x100;
};

// The octets of one ESTP message as a peer would send it (DATA: header + payload).
inline std::vector<std::uint8_t> wire(Message m, bytes_view payload = {}) {
  if (m.type == Type::data) m.length = static_cast<std::uint32_t>(payload.size());
  m.payload = payload;
  std::vector<std::uint8_t> v(wire_size(m));
  EXPECT_NE(emit_header(m, v), 0u);
  if (!payload.empty()) std::memcpy(v.data() + hdr_len, payload.data(), payload.size());
  return v;
}

// One engine whose peer is the test. The peer's Hello is given; the fake outlives the stream.
struct Lone {
  explicit Lone(Params local, Hello peer = Hello{false, 4, 4096}, bool initiator = false)
      : stream(std::make_unique<Stream>(v, local, peer)) {
    start_rc = stream->start(initiator);
  }
  Stream& s() { return *stream; }
  // The peer sends m; the engine reacts.
  void from_peer(const Message& m, bytes_view payload = {}) {
    v.deliver(wire(m, payload));
    stream->progress();
  }
  void from_peer_raw(bytes_view octets) {
    v.deliver(octets);
    stream->progress();
  }
  // Messages the engine sent since the last call.
  std::vector<Message> sent() {
    auto all = v.messages();
    std::vector<Message> out(all.begin() + static_cast<long>(seen_), all.end());
    seen_ = all.size();
    return out;
  }
  // One read into a fresh buffer of n octets.
  ReadOut read(std::vector<std::uint8_t>& buf, std::size_t n, bool peek = false) {
    buf.assign(n, 0);
    const mut_bytes dst{buf};
    return stream->read({&dst, 1}, peek);
  }

  FakeVerbs v;
  std::unique_ptr<Stream> stream;
  int start_rc = 0;

 private:
  std::size_t seen_ = 0;
};

// Local engine parameters (R receive buffers of B octets) and a recognisable payload, for
// the tests over FakeVerbs.
inline Params local(std::uint32_t R = 4, std::uint32_t B = 1024, bool msgmode = false) {
  return Params{R, B, 0, msgmode};
}
inline std::vector<std::uint8_t> bytes(std::size_t n, std::uint8_t seed = 1) {
  std::vector<std::uint8_t> v(n);
  std::iota(v.begin(), v.end(), seed);
  return v;
}

}  // namespace esock::estp::testing
