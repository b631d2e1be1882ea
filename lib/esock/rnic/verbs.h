// What the ESTP engine and RAWMODE need from a provider's connection: the verbs of one queue
// pair and its memory registration. The software RNIC's providers (ksock, dpdk) use
// EngineVerbs (engine_verbs.h); an rdmacm provider would implement this over libibverbs.
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
  // Whether the connection may still read the memory of region `stag` after it was
  // deregistered: octets sent from it by reference that the transport may retransmit
  // (ddp::Qp::reads_from; what is not sent yet re-checks the region and is never read).
  // The owner gives the memory back to the application only once this is false. A
  // provider whose deregistration waits for the device itself (an RNIC's) answers false.
  virtual bool reads_from(ddp::stag_t) const { return false; }
  // Copy-on-write (AZ-SDP): the peer's later Reads of region `stag` are answered from `mem`,
  // a copy of the region's octets at the same Tagged Offsets (ddp::StagTable::move). *held
  // names what the transport may still read of the old memory (reads_old). 0, EINVAL, or
  // EOPNOTSUPP where the device reads registered memory itself (an RNIC: its Read
  // Responses may be on their way from the old pages at any time).
  virtual int move_mr(ddp::stag_t, void* /*mem*/, std::uint64_t* /*held*/) { return EOPNOTSUPP; }
  // After move_mr: whether the transport may still read the region's old memory (octets
  // sent from it by reference, not yet released).
  virtual bool reads_old(ddp::stag_t, std::uint64_t /*held*/) const { return false; }
  // RFC 7306 (ddp/qp.h has the semantics). A provider whose device cannot do them (an
  // RNIC, siw) keeps these defaults: set_rdmap_ext answers false (the Hello never offers
  // them) and posting fails with EOPNOTSUPP.
  virtual bool set_rdmap_ext(bool /*on*/) { return false; }
  virtual bool rdmap_ext() const { return false; }
  virtual int post_send_imm(std::uint64_t, std::uint64_t /*imm*/, bool /*solicited*/) {
    return EOPNOTSUPP;
  }
  virtual int post_write_imm(std::uint64_t, std::span<const ddp::Sge>, ddp::stag_t, std::uint64_t,
                             std::uint64_t /*imm*/, bool /*solicited*/) {
    return EOPNOTSUPP;
  }
  virtual int post_atomic(std::uint64_t, const ddp::Sge& /*result*/, const ddp::AtomicRequest&) {
    return EOPNOTSUPP;
  }
  // The connection's tripwires, or nullptr where this process never sees the peer's Writes
  // land (a device places them).
  virtual ddp::TripwireSet* tripwires() { return nullptr; }
  virtual std::size_t poll_send_cq(std::span<ddp::Completion> out) = 0;
  virtual std::size_t poll_recv_cq(std::span<ddp::Completion> out) = 0;
};

}  // namespace esock::rnic
