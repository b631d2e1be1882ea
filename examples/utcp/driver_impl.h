// Driver's loop and completion helpers, shared by driver*.cc (not for other users).
#pragma once

#include <array>

#include "driver.h"

namespace esock::utcp::tool {

template <class W, class D>
bool Driver::run_until(const char* what, W work, D done) {
  auto stop = [&] {
    if (done()) return true;
    if (ep_ && ep_->state() == Endpoint::State::failed) fail("endpoint:" + ep_->error());
    return failed();
  };
  if (!loop_->run(work, stop, deadline_)) fail(std::string("timeout:") + what);
  return !failed() && done();
}

template <class S, class R>
bool Driver::drain(S on_send, R on_recv) {
  std::array<ddp::Completion, 64> cq;
  bool did = false;
  for (std::size_t n; (n = ep_->poll_send_cq(cq)) > 0;) {
    did = true;
    for (std::size_t i = 0; i < n; ++i) {
      const ddp::Completion& c = cq[i];
      if (c.status != ddp::Status::success) {
        fail("send_cq_status_" + std::to_string(static_cast<int>(c.status)) + "_opcode_" +
             std::to_string(static_cast<int>(c.opcode)));
        return true;
      }
      if (c.wr_id & ctl_wr)
        ++ctl_done_;
      else if (!on_send(c))
        return true;
    }
  }
  for (std::size_t n; (n = ep_->poll_recv_cq(cq)) > 0;) {
    did = true;
    for (std::size_t i = 0; i < n; ++i) {
      const ddp::Completion& c = cq[i];
      if (c.status != ddp::Status::success) {
        fail("recv_cq_status_" + std::to_string(static_cast<int>(c.status)));
        return true;
      }
      if (c.wr_id == 0 || c.wr_id == ring_.total()) {
        const bytes_view b = c.wr_id == 0 ? bytes_view(ctl_.mem.data(), c.byte_len)
                                          : ring_.message(c.wr_id, c.byte_len);
        std::optional<Ctl> m = decode(b);
        if (!m || (c.wr_id != 0 && m->type != CtlType::done)) {
          fail("bad_control_message");
          return true;
        }
        (c.wr_id == 0 ? peer_first_ : peer_done_) = m;
        continue;
      }
      if (!on_recv(c.wr_id, c.byte_len)) return true;
      if (ring_.repost(*ep_, c.wr_id) != 0) {
        fail("repost_recv");
        return true;
      }
    }
  }
  return did;
}

}  // namespace esock::utcp::tool
