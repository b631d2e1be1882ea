// rnic::Verbs (verbs.h) over the software RNIC engine.
#pragma once

#include "esock/rnic/engine.h"
#include "esock/rnic/verbs.h"

namespace esock::rnic {

// The verbs of the software RNIC (engine.h), whatever transport carries it: posting goes
// through the engine so what can be framed leaves at once; memory is registered in the
// connection's context.
class EngineVerbs final : public Verbs {
 public:
  explicit EngineVerbs(Engine& e) : e_(e) {}
  int post_send(std::uint64_t wr_id, std::span<const ddp::Sge> sg) override {
    return e_.post_send(wr_id, sg);
  }
  int post_recv(std::uint64_t wr_id, std::span<const ddp::Sge> sg) override {
    return e_.post_recv(wr_id, sg);
  }
  int post_read(std::uint64_t wr_id, std::span<const ddp::Sge> sink, ddp::stag_t rkey,
                std::uint64_t remote_to) override {
    return e_.post_read(wr_id, sink, rkey, remote_to);
  }
  int post_write(std::uint64_t wr_id, std::span<const ddp::Sge> sg, ddp::stag_t rkey,
                 std::uint64_t remote_to) override {
    return e_.post_write(wr_id, sg, rkey, remote_to);
  }
  ddp::stag_t reg_mr(void* addr, std::size_t len, std::uint32_t access) override {
    return e_.context().reg_mr(addr, len, access);
  }
  int dereg_mr(ddp::stag_t stag) override { return e_.context().dereg_mr(stag); }
  bool reads_from(ddp::stag_t stag) const override { return e_.qp().reads_from(stag); }
  int move_mr(ddp::stag_t stag, void* mem, std::uint64_t* held) override {
    if (const int rc = e_.context().stags().move(stag, mem); rc != 0) return rc;
    *held = e_.qp().seal_sourced(stag);
    return 0;
  }
  bool reads_old(ddp::stag_t stag, std::uint64_t held) const override {
    return e_.qp().reads_from(stag, held);
  }
  bool set_rdmap_ext(bool on) override {
    e_.qp().set_rdmap_ext(on);
    return true;
  }
  bool rdmap_ext() const override { return e_.qp().rdmap_ext(); }
  int post_send_imm(std::uint64_t wr_id, std::uint64_t imm, bool solicited) override {
    return e_.posted(e_.qp().post_send_imm(wr_id, imm, solicited));
  }
  int post_write_imm(std::uint64_t wr_id, std::span<const ddp::Sge> sg, ddp::stag_t rkey,
                     std::uint64_t remote_to, std::uint64_t imm, bool solicited) override {
    return e_.posted(e_.qp().post_write_imm(wr_id, sg, rkey, remote_to, imm, solicited));
  }
  int post_atomic(std::uint64_t wr_id, const ddp::Sge& result,
                  const ddp::AtomicRequest& req) override {
    return e_.posted(e_.qp().post_atomic(wr_id, result, req));
  }
  ddp::TripwireSet* tripwires() override { return &e_.tripwires(); }
  std::size_t poll_send_cq(std::span<ddp::Completion> out) override { return e_.poll_send_cq(out); }
  std::size_t poll_recv_cq(std::span<ddp::Completion> out) override { return e_.poll_recv_cq(out); }

 private:
  Engine& e_;
};

// The C++ verbs of a transport's endpoint (ksock::Endpoint, utcp::Endpoint): work requests
// go to the engine, then the endpoint may push what was framed (posted()).
class EndpointVerbs {
 public:
  virtual ~EndpointVerbs() = default;
  // Work requests: 0 or an errno value (see ddp::Qp).
  int post_send(std::uint64_t wr_id, std::span<const ddp::Sge> sg, bool solicited = false,
                ddp::stag_t invalidate = 0) {
    return posted(engine().post_send(wr_id, sg, solicited, invalidate));
  }
  int post_recv(std::uint64_t wr_id, std::span<const ddp::Sge> sg) {
    return engine().post_recv(wr_id, sg);
  }
  int post_write(std::uint64_t wr_id, std::span<const ddp::Sge> sg, ddp::stag_t rkey,
                 std::uint64_t remote_to) {
    return posted(engine().post_write(wr_id, sg, rkey, remote_to));
  }
  int post_read(std::uint64_t wr_id, std::span<const ddp::Sge> sink, ddp::stag_t rkey,
                std::uint64_t remote_to) {
    return posted(engine().post_read(wr_id, sink, rkey, remote_to));
  }
  std::size_t poll_send_cq(std::span<ddp::Completion> out) { return engine().poll_send_cq(out); }
  std::size_t poll_recv_cq(std::span<ddp::Completion> out) { return engine().poll_recv_cq(out); }

  virtual Engine& engine() = 0;

 protected:
  // After a successful post (rc 0): a transport that does not send from the engine's
  // transmit() itself writes now. Returns rc.
  virtual int posted(int rc) { return rc; }
};

}  // namespace esock::rnic
