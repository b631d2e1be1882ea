// RAWMODE (docs/sockets.md, "Extension API"): the application drives the connection's queue
// pair through the esock_ C API. This engine (no I/O, single owner: the runtime lock) keeps
// the regions the application registered, validates work requests before they reach the
// queue pair (so bad arguments are errno values, not Terminates), and buffers completions
// for esock_poll_cq so the socket's descriptor can signal "completions pending".
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "esock/rnic/verbs.h"

namespace esock::sockets {

// The validated form of an application's scatter/gather entry.
struct RawSge {
  void* addr;
  std::uint32_t length;
  std::uint32_t lkey;
};

enum class RawOp : std::uint8_t { send, recv, write, read };

class RawQp {
 public:
  explicit RawQp(rnic::Verbs& v) : v_(v) {}
  ~RawQp();
  RawQp(const RawQp&) = delete;
  RawQp& operator=(const RawQp&) = delete;

  // 0 or errno (see esock.h): the region is remembered so dereg and SGE checks need no
  // provider round trip and close can revoke every remote right at once.
  int reg_mr(void* addr, std::size_t len, int access, ddp::stag_t* out);
  int dereg_mr(ddp::stag_t stag);
  // Revokes every region (close): later peer accesses fail with a Terminate, never touch
  // memory the application may free after close(). True when the transport still holds
  // octets sent from one of them by reference (Verbs::reads_from): the caller must end
  // the connection (reset) before the application gets the memory back.
  bool dereg_all();

  // 0 or errno. rkey/remote_to are used by write and read only.
  int post(RawOp op, std::uint64_t wr_id, std::span<const RawSge> sg, ddp::stag_t rkey,
           std::uint64_t remote_to);

  // RFC 7306 (esock.h): Immediate Data, alone (sg empty, write false) or behind an RDMA
  // Write; an atomic with its 8-octet result. 0 or errno, as post().
  int post_imm(std::uint64_t wr_id, std::span<const RawSge> sg, bool write, ddp::stag_t rkey,
               std::uint64_t remote_to, std::uint64_t imm, bool solicited);
  int post_atomic(std::uint64_t wr_id, const RawSge& result, const ddp::AtomicRequest& req);

  // Tripwires (esock.h): [addr, addr+len) must lie in one registered region with remote
  // write. 0 (and *id) or EINVAL (len 0), EFAULT, EACCES, ENOMEM, EOPNOTSUPP (the provider
  // sees no Writes).
  int tripwire_arm(void* addr, std::size_t len, std::uint64_t cookie, bool persistent,
                   std::uint32_t* id);
  int tripwire_disarm(std::uint32_t id);
  std::size_t tripwire_poll(std::span<ddp::TripwireEvent> out);

  // Moves new completions from the provider's queues into the local buffer (after progress).
  void collect();
  // Completions or tripwire events wait: the socket's descriptor reads as readable.
  bool pending() const { return !cq_.empty() || (tw_ != nullptr && tw_->pending()); }
  std::size_t take(std::span<ddp::Completion> out);
  // The connection failed (errno); posting fails with it from now on.
  void fail(int err) {
    if (error_ == 0) error_ = err;
  }
  int error() const { return error_; }
  // Our direction is closed (shutdown): posting send-queue work fails with EPIPE.
  void shut_write() { write_shut_ = true; }

 private:
  struct Region {
    std::uintptr_t base;
    std::size_t len;
    int access;
    ddp::stag_t stag;
  };
  const Region* find(ddp::stag_t stag) const;
  int check(std::span<const RawSge> sg, bool sink, std::vector<ddp::Sge>& out) const;
  int may_send() const;
  int posted(int rc) const;

  rnic::Verbs& v_;
  std::vector<Region> regions_;
  std::deque<ddp::Completion> cq_;
  ddp::TripwireSet* tw_ = nullptr;  // the provider's, once a tripwire was armed
  int error_ = 0;
  bool write_shut_ = false;
};

}  // namespace esock::sockets
