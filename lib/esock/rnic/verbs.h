// What the ESTP engine needs from a provider's connection: the verbs of one queue pair and
// its memory registration. Providers built on lib/ddp (the kernel-socket transport, later
// the DPDK stack) use QpVerbs; an rdmacm provider would implement this over libibverbs.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>

#include "ddp/cq.h"
#include "ddp/qp.h"
#include "ddp/stag.h"

namespace esock::rnic {

class Verbs {
 public:
  virtual ~Verbs() = default;
  // 0 or an errno value, as ddp::Qp.
  virtual int post_send(std::uint64_t wr_id, std::span<const ddp::Sge> sg) = 0;
  virtual int post_recv(std::uint64_t wr_id, std::span<const ddp::Sge> sg) = 0;
  virtual int post_read(std::uint64_t wr_id, std::span<const ddp::Sge> sink, ddp::stag_t rkey,
                        std::uint64_t remote_to) = 0;
  // RDMA Write (the extension API's RAWMODE; ESTP itself does not use it yet).
  virtual int post_write(std::uint64_t, std::span<const ddp::Sge>, ddp::stag_t, std::uint64_t) {
    return EOPNOTSUPP;
  }
  // Tagged Offsets are virtual addresses (TO of octet p is (uint64_t)p), as in ksock::Context.
  virtual ddp::stag_t reg_mr(void* addr, std::size_t len, std::uint32_t access) = 0;
  virtual int dereg_mr(ddp::stag_t stag) = 0;
  virtual std::size_t poll_send_cq(std::span<ddp::Completion> out) = 0;
  virtual std::size_t poll_recv_cq(std::span<ddp::Completion> out) = 0;
};

// Verbs over a lib/ddp queue pair, its STag table and completion queues.
class QpVerbs final : public Verbs {
 public:
  QpVerbs(ddp::Qp& qp, ddp::StagTable& stags, std::uint32_t pd, ddp::CompletionQueue& scq,
          ddp::CompletionQueue& rcq)
      : qp_(qp), stags_(stags), pd_(pd), scq_(scq), rcq_(rcq) {}
  int post_send(std::uint64_t wr_id, std::span<const ddp::Sge> sg) override {
    return qp_.post_send(wr_id, sg);
  }
  int post_recv(std::uint64_t wr_id, std::span<const ddp::Sge> sg) override {
    return qp_.post_recv(wr_id, sg);
  }
  int post_read(std::uint64_t wr_id, std::span<const ddp::Sge> sink, ddp::stag_t rkey,
                std::uint64_t remote_to) override {
    return qp_.post_read(wr_id, sink, rkey, remote_to);
  }
  int post_write(std::uint64_t wr_id, std::span<const ddp::Sge> sg, ddp::stag_t rkey,
                 std::uint64_t remote_to) override {
    return qp_.post_write(wr_id, sg, rkey, remote_to);
  }
  ddp::stag_t reg_mr(void* addr, std::size_t len, std::uint32_t access) override {
    return stags_.register_mr(pd_, addr, len, access);
  }
  int dereg_mr(ddp::stag_t stag) override { return stags_.deregister(stag); }
  std::size_t poll_send_cq(std::span<ddp::Completion> out) override { return scq_.poll(out); }
  std::size_t poll_recv_cq(std::span<ddp::Completion> out) override { return rcq_.poll(out); }

 private:
  ddp::Qp& qp_;
  ddp::StagTable& stags_;
  std::uint32_t pd_;
  ddp::CompletionQueue& scq_;
  ddp::CompletionQueue& rcq_;
};

}  // namespace esock::rnic
