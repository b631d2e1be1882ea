// Receives posted before the connection is up, on the ULP's behalf. iWARP has no
// receiver-not-ready retry: a Send that finds no posted receive is a fatal error (RFC 5041
// section 7.2, DDP untagged buffer error "no buffer"), so a queue pair must have receives
// posted before the peer can send. The peer may send as soon as it sees the connection
// established, which on an RNIC is before our side's ESTP stream or RAWMODE application has
// posted anything (the runtime attaches them later: at accept(), after connect()'s return).
//
// So the provider posts `count` receives of `size` octets into a buffer of its own before
// rdma_connect/rdma_accept, and the first `count` receives the ULP posts are matched to them
// in order (a receive queue completes in posting order): the data is copied from the slot
// into the ULP's buffer and the completion carries the ULP's work request id. Receives after
// those go straight to the device. No I/O here; the provider registers slot memory and
// posts the slots (ib_verbs.cc). Unit-tested in tests/unit/esock/rdmacm.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <vector>

#include "ddp/cq.h"
#include "ddp/qp.h"

namespace esock::rdmacm {

class EarlyRecvs {
 public:
  void start(std::uint32_t count, std::uint32_t size);
  // Whether an SGE of the ULP's still names registered memory, asked when its slot's data
  // is copied: a region deregistered (and perhaps freed) since the post gets nothing and a
  // local protection error, as a device's STag check would give (RFC 5040 section 7).
  void set_validator(std::function<bool(const ddp::Sge&)> valid) { valid_ = std::move(valid); }
  std::span<std::uint8_t> memory() { return buf_; }
  std::uint8_t* slot(std::uint32_t i) { return buf_.data() + std::size_t{i} * size_; }

  // The ULP posts a receive: true when it takes the next early slot (nothing goes to the
  // device), false when every slot is taken and the receive goes to the device.
  bool assign(std::uint64_t wr_id, std::span<const ddp::Sge> sg);
  // A receive completion from the device: true when it is an early slot's (the first
  // `count` completions), which this consumes; false when it belongs to the ULP's own.
  bool complete(ddp::Status st, std::uint32_t byte_len);
  // The completions matched so far, in order (the slot's octets are in the ULP's buffer).
  std::size_t drain(std::span<ddp::Completion> out);
  bool has_ready() const { return !ready_.empty(); }
  // Every slot delivered: the buffer (and its registration) can go.
  bool finished() const { return delivered_ == count_; }
  void release() { std::vector<std::uint8_t>().swap(buf_); }

 private:
  struct Posted {
    std::uint64_t wr_id;
    std::vector<ddp::Sge> sg;
  };
  struct Done {
    ddp::Status status;
    std::uint32_t byte_len;
  };
  void match();

  std::vector<std::uint8_t> buf_;
  std::uint32_t count_ = 0, size_ = 0;
  std::uint32_t assigned_ = 0;   // ULP receives given a slot
  std::uint32_t completed_ = 0;  // device completions of slots seen
  std::uint32_t delivered_ = 0;  // slots whose completion went to ready_
  std::deque<Posted> waiting_;   // ULP receives whose slot has not completed
  std::deque<Done> done_;        // slot completions no ULP receive has taken yet
  std::deque<ddp::Completion> ready_;
  std::function<bool(const ddp::Sge&)> valid_;
};

}  // namespace esock::rdmacm
