// rnic::Verbs (what ESTP and RAWMODE use) over libibverbs: one RC queue pair, a send and a
// receive completion queue on one completion channel, a protection domain of its own (one
// connection's STags are never valid on another), and the connection's registrations.
//
// STags: reg_mr returns the region's rkey, which is also the key ESTP and RAWMODE put in
// their SGEs; the region's lkey (equal on siw and most RNICs, not promised by verbs) is
// looked up when a work request is posted. Tagged Offsets are virtual addresses, as
// ibv_reg_mr's iova and the software RNIC's (rnic/verbs.h).
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <unordered_map>

#include "esock/rdmacm/device_info.h"
#include "esock/rdmacm/early_recvs.h"
#include "esock/rnic/verbs.h"

namespace esock::rdmacm {

// What the queue pair is created with: the connection's needs within the device's limits.
struct QpSizes {
  std::uint32_t send_wr = 0, recv_wr = 0, send_sge = 0, recv_sge = 0;
  std::uint32_t max_inline = 0;
};
QpSizes qp_sizes(const DeviceLimits& dev, std::uint32_t recv_buffers);

class IbVerbs final : public rnic::Verbs {
 public:
  IbVerbs(ibv_context* ctx, const DeviceLimits& dev) : ctx_(ctx), dev_(dev) {}
  ~IbVerbs() override;  // the queue pair must be gone already (rdma_destroy_qp)
  IbVerbs(const IbVerbs&) = delete;
  IbVerbs& operator=(const IbVerbs&) = delete;

  // The PD, the channel (non-blocking) and both CQs, armed: 0 or an errno.
  int create(const QpSizes& sizes);
  ibv_pd* pd() const { return pd_; }
  ibv_qp_init_attr qp_init_attr() const;
  // After rdma_create_qp: the queue pair and the capabilities it got (inline size).
  void attach_qp(ibv_qp* qp, const ibv_qp_cap& cap);
  // Posts `count` receives of `size` octets of our own before the connection is up
  // (early_recvs.h): 0 or an errno.
  int post_early_receives(std::uint32_t count, std::uint32_t size);

  // The completion channel: readable when a completion arrived on an armed CQ.
  int channel_fd() const;
  // Reads and acknowledges the channel's events and re-arms both CQs (no waiting): true if
  // there was any. Completions then stay in the CQs for poll_*_cq.
  bool take_channel_events();

  // Work requests posted and not yet completed (the send queue): what a graceful
  // disconnect waits for.
  std::size_t sends_outstanding() const { return posted_ops_.size(); }
  // A completion in error other than a flush: the queue pair failed.
  bool failed() const { return failed_; }

  int post_send(std::uint64_t wr_id, std::span<const ddp::Sge> sg) override;
  int post_recv(std::uint64_t wr_id, std::span<const ddp::Sge> sg) override;
  int post_read(std::uint64_t wr_id, std::span<const ddp::Sge> sink, ddp::stag_t rkey,
                std::uint64_t remote_to) override;
  int post_write(std::uint64_t wr_id, std::span<const ddp::Sge> sg, ddp::stag_t rkey,
                 std::uint64_t remote_to) override;
  ddp::stag_t reg_mr(void* addr, std::size_t len, std::uint32_t access) override;
  int dereg_mr(ddp::stag_t stag) override;
  std::size_t poll_send_cq(std::span<ddp::Completion> out) override;
  std::size_t poll_recv_cq(std::span<ddp::Completion> out) override;

 private:
  // SGEs in libibverbs' form; EINVAL for an unknown STag or more SGEs than the queue has.
  int to_ibv(std::span<const ddp::Sge> sg, std::uint32_t max, ibv_sge* out,
             std::uint32_t* total) const;
  int post(ibv_wr_opcode op, ddp::Opcode posted, std::uint64_t wr_id, std::span<const ddp::Sge> sg,
           ddp::stag_t rkey, std::uint64_t remote_to);

  ibv_context* ctx_;
  DeviceLimits dev_;
  QpSizes sizes_;
  ibv_pd* pd_ = nullptr;
  ibv_comp_channel* channel_ = nullptr;
  ibv_cq* send_cq_ = nullptr;
  ibv_cq* recv_cq_ = nullptr;
  ibv_qp* qp_ = nullptr;
  std::unordered_map<ddp::stag_t, ibv_mr*> mrs_;  // by rkey
  std::deque<ddp::Opcode> posted_ops_;            // the send queue completes in order
  EarlyRecvs early_;
  ibv_mr* early_mr_ = nullptr;
  bool failed_ = false;
};

}  // namespace esock::rdmacm
