// esock_iwarp bandwidth mode: the client keeps --depth work requests outstanding in one
// direction; message n (1-based) uses slot (n-1) mod slots of the data regions, so the
// regions stay bounded (max_region) while every octet of them is covered.
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "driver_impl.h"
#include "pattern.h"

namespace esock::utcp::tool {

// Posts data work request n (Send, Write or Read of one slot). False when the send queue
// is full (try again later) or the post failed (the run failed).
bool Driver::post_data(std::uint64_t n) {
  const std::uint64_t off = ((n - 1) % slots_) * o_.size;
  const Ctl& peer = *peer_first_;
  int rc = 0;
  if (o_.op == Op::read) {
    const ddp::Sge s = target_.sge(off, o_.size);
    rc = ep_->post_read(n, {&s, 1}, peer.stag, peer.to + off);
  } else {
    const ddp::Sge s = local_.sge(off, o_.size);
    rc = o_.op == Op::send ? ep_->post_send(n, {&s, 1})
                           : ep_->post_write(n, {&s, 1}, peer.stag, peer.to + off);
  }
  if (rc == 0) return true;
  if (rc != ENOMEM) fail(std::string("post_") + to_string(o_.op) + ":" + std::strerror(rc));
  return false;
}

bool Driver::bw_client() {
  std::uint64_t window = o_.depth;
  // Sends need posted receives: stay within half of what the server keeps posted.
  if (o_.op == Op::send)
    window = std::min<std::uint64_t>(window, std::max<std::uint64_t>(1, peer_first_->depth / 2));
  std::uint64_t posted = 0;
  start_ = loop_->now();
  auto on_send = [&](const ddp::Completion& c) {
    // Work requests complete in posting order (RFC 5040 section 5.5; verbs).
    if (c.wr_id != done_ops_ + 1) return fail("completion_out_of_order"), false;
    ++done_ops_;
    bytes_ += o_.size;
    return true;
  };
  auto unexpected = [&](std::uint64_t, std::uint32_t) { return fail("unexpected_message"), false; };
  auto work = [&](Instant) {
    bool did = false;
    while (posted < o_.iters && posted - done_ops_ < window && post_data(posted + 1)) {
      ++posted;
      did = true;
    }
    return drain(on_send, unexpected) || did;
  };
  if (!run_until("bw", work, [&] { return done_ops_ == o_.iters; })) return false;
  end_ = loop_->now();
  if (o_.verify && o_.op == Op::read) check_region(target_, region_len_);
  return true;
}

// The server sees Sends (each checked as it arrives, since its buffer is reposted at once)
// or nothing at all (Writes and Reads are one-sided): the client's DONE ends the phase.
bool Driver::bw_server() {
  auto none = [](const ddp::Completion&) { return true; };
  auto on_recv = [&](std::uint64_t k, std::uint32_t len) {
    if (k != done_ops_ + 1 || len != o_.size) return fail("bad_send_message"), false;
    if (o_.verify)
      note_verify(
          pattern_check(pattern_seed_, ((k - 1) % slots_) * o_.size, ring_.message(k, len)));
    ++done_ops_;
    bytes_ += len;
    end_ = loop_->now();
    return true;
  };
  if (!run_until(
          "bw", [&](Instant) { return drain(none, on_recv); },
          [&] { return peer_done_.has_value(); }))
    return false;
  if (o_.op != Op::send) {
    // One-sided: the client's count is the truth (DONE fences its Writes).
    done_ops_ = peer_done_->iters;
    bytes_ = done_ops_ * o_.size;
    end_ = loop_->now();
  } else if (done_ops_ != o_.iters) {
    fail("sends_missing");
    return false;
  }
  return true;
}

}  // namespace esock::utcp::tool
