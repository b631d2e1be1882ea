// Completion queue: a bounded ring of work completions (verbs semantics). Overflow is a
// reported condition, not a crash: the completion is dropped and counted, and the owner
// treats a set overflowed() as the verbs "CQ overrun" (a catastrophic error for the QPs).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ddp/stag.h"

namespace esock::ddp {

// send_imm .. recv_imm: RFC 7306 (Immediate Data, the Write it follows, the two atomics).
enum class Opcode : std::uint8_t {
  send,
  recv,
  write,
  read,
  send_imm,
  write_imm,
  fetch_add,
  cmp_swap,
  recv_imm,
};

enum class Status : std::uint8_t {
  success,
  local_length_error,      // receive buffer too small for the incoming Send
  local_protection_error,  // a local STag failed validation
  local_qp_operation_error,
  remote_access_error,     // peer reported a protection / tagged buffer error
  remote_operation_error,  // peer reported an operation / untagged buffer error
  remote_invalid_request_error,
  flushed,  // WR never executed: QP left RTS (verbs "flush error")
  general_error,
};

struct Completion {
  std::uint64_t wr_id = 0;
  Opcode opcode = Opcode::send;
  Status status = Status::success;
  std::uint32_t byte_len = 0;
  bool solicited = false;       // Send with Solicited Event (RFC 5040 Send with SE)
  stag_t invalidated_stag = 0;  // Send with Invalidate (RFC 5040, Send with Invalidate)
  std::uint64_t imm = 0;        // recv_imm: the 8 octets of Immediate Data, read big-endian
};

// A bounded FIFO of completions. The ring starts small and doubles up to `capacity` as
// completions pile up: an idle connection's two queues cost a few hundred octets rather
// than 2 x 4096 entries zero-filled at its set-up (the set-up of 10,000 connections spent
// its time so). Past `capacity` a completion is dropped and counted, as a verbs CQ
// overflows.
class CompletionQueue {
 public:
  explicit CompletionQueue(std::size_t capacity = 4096)
      : capacity_(capacity ? capacity : 1), ring_(std::min<std::size_t>(capacity_, initial)) {}
  void push(const Completion& c) {
    if (count_ == ring_.size() && !grow()) {
      ++dropped_;
      return;
    }
    ring_[(head_ + count_) % ring_.size()] = c;
    ++count_;
  }
  std::size_t poll(std::span<Completion> out) {
    std::size_t n = 0;
    while (n < out.size() && count_ > 0) {
      out[n++] = ring_[head_];
      head_ = (head_ + 1) % ring_.size();
      --count_;
    }
    return n;
  }
  std::size_t size() const { return count_; }
  std::size_t capacity() const { return capacity_; }
  bool overflowed() const { return dropped_ != 0; }
  std::uint64_t dropped() const { return dropped_; }

 private:
  static constexpr std::size_t initial = 16;
  // The entries in order at the front of a ring twice as large (at most capacity_).
  bool grow() {
    if (ring_.size() >= capacity_) return false;
    std::vector<Completion> bigger(std::min(capacity_, ring_.size() * 2));
    for (std::size_t i = 0; i < count_; ++i) bigger[i] = ring_[(head_ + i) % ring_.size()];
    ring_ = std::move(bigger);
    head_ = 0;
    return true;
  }

  std::size_t capacity_;
  std::vector<Completion> ring_;
  std::size_t head_ = 0;
  std::size_t count_ = 0;
  std::uint64_t dropped_ = 0;
};

}  // namespace esock::ddp
