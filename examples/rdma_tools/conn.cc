#include "conn.h"

#include <chrono>

#include "conn_backends.h"
#include "tool_common.h"

namespace esock::tools {

bool Conn::wait(bool send_queue, ddp::Completion& out, int timeout_ms) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  auto poll = [&] { return (send_queue ? poll_send_cq({&out, 1}) : poll_recv_cq({&out, 1})) == 1; };
  for (;;) {
    if (poll()) return true;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    if (!progress(static_cast<int>(left))) return poll();  // the close may have flushed WRs
  }
}

std::unique_ptr<Transport> Transport::create(const ConnArgs& a, std::string* why) {
  if (a.transport == "ksock") return make_ksock_transport(a, why);
  if (a.transport == "dpdk") return make_utcp_transport(a, why);
  *why = "unknown transport " + a.transport;
  return nullptr;
}

}  // namespace esock::tools
