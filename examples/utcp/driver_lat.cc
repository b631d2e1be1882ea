// esock_iwarp latency mode: one exchange at a time, the client timing each full round trip.
//   send:  the client Sends size octets, the server answers with a Send of size octets;
//   write: the client Writes size octets into the server's region, then a 4-octet Send
//          (the doorbell: a Send is delivered only after the Write before it is placed,
//          RFC 5040 section 5.5); the server answers the same way into the client's region;
//   read:  the client Reads size octets; the round trip is the Read's completion time.
// Message n (1-based) uses slot (n-1) mod slots of the regions, as in bw mode.
#include <cerrno>
#include <cstring>

#include "driver_impl.h"
#include "pattern.h"

namespace esock::utcp::tool {

bool Driver::lat_client() {
  std::uint64_t next = 1;
  bool in_flight = false;
  Instant posted_at{};
  rtt_us_.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(o_.iters, 1u << 24)));
  start_ = loop_->now();
  auto finish_one = [&] {
    rtt_us_.push_back(micros(loop_->now() - posted_at));
    ++done_ops_;
    bytes_ += o_.size;
    in_flight = false;
    ++next;
  };
  auto on_send = [&](const ddp::Completion& c) {
    if (o_.op == Op::read && in_flight && c.wr_id == next) finish_one();
    return true;
  };
  auto on_recv = [&](std::uint64_t k, std::uint32_t len) {
    if (!in_flight || k != next) return fail("unexpected_message"), false;
    if (o_.op == Op::send) {
      if (len != o_.size) return fail("bad_pong"), false;
      if (o_.verify)
        note_verify(
            pattern_check(pattern_seed_, ((k - 1) % slots_) * o_.size, ring_.message(k, len)));
    } else if (len != 4 ||
               load_be32(ring_.message(k, len).data()) != static_cast<std::uint32_t>(k)) {
      return fail("bad_doorbell"), false;
    }
    finish_one();
    return true;
  };
  auto work = [&](Instant) {
    bool did = false;
    if (!in_flight && next <= o_.iters) {
      posted_at = loop_->now();
      if (!post_data(next) ||
          (o_.op == Op::write && !post_doorbell(static_cast<std::uint32_t>(next)))) {
        if (!failed()) fail("send_queue_full");
        return true;
      }
      in_flight = did = true;
    }
    return drain(on_send, on_recv) || did;
  };
  if (!run_until("lat", work, [&] { return done_ops_ == o_.iters; })) return false;
  end_ = loop_->now();
  if (o_.verify && o_.op != Op::send) check_region(target_, region_len_);
  return true;
}

bool Driver::lat_server() {
  auto none = [](const ddp::Completion&) { return true; };
  auto on_recv = [&](std::uint64_t k, std::uint32_t len) {
    if (k != done_ops_ + 1) return fail("unexpected_message"), false;
    const std::uint64_t off = ((k - 1) % slots_) * o_.size;
    const Ctl& h = *peer_first_;
    int rc = 0;
    if (o_.op == Op::send) {
      if (len != o_.size) return fail("bad_ping"), false;
      if (o_.verify) note_verify(pattern_check(pattern_seed_, off, ring_.message(k, len)));
      const ddp::Sge s = local_.sge(off, o_.size);
      rc = ep_->post_send(k, {&s, 1});
    } else {
      if (len != 4 || h.stag == 0 || h.len < region_len_) return fail("bad_doorbell"), false;
      const ddp::Sge s = local_.sge(off, o_.size);
      rc = ep_->post_write(k, {&s, 1}, h.stag, h.to + off);
      if (rc == 0 && !post_doorbell(static_cast<std::uint32_t>(k))) return false;
    }
    if (rc != 0) return fail(std::string("post_answer:") + std::strerror(rc)), false;
    ++done_ops_;
    bytes_ += o_.size;
    return true;
  };
  if (!run_until(
          "lat", [&](Instant) { return drain(none, on_recv); },
          [&] { return peer_done_.has_value(); }))
    return false;
  if (o_.op == Op::read) {
    done_ops_ = peer_done_->iters;  // one-sided: the client's count
    bytes_ = done_ops_ * o_.size;
  }
  end_ = loop_->now();
  return true;
}

}  // namespace esock::utcp::tool
