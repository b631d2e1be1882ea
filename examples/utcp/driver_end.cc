// esock_iwarp: the end of a run (DONE both ways, close) and the run as a whole.
#include <cstdio>

#include "driver_impl.h"
#include "pattern.h"

namespace esock::utcp::tool {

bool Driver::check_region(const Region& r, std::uint64_t len) {
  const bool ok = r.mem.size() >= len && pattern_check(pattern_seed_, 0, {r.mem.data(), len});
  note_verify(ok);
  return ok;
}

// The client sends its DONE after its last work request completed; its Sends and Writes all
// precede it in the stream, so the server's receive of it fences them (ctl.h). The server
// answers with its own DONE once it has checked what it received, and both verdicts count.
bool Driver::exchange_done() {
  auto none = [](const ddp::Completion&) { return true; };
  auto unexpected = [&](std::uint64_t, std::uint32_t) { return fail("unexpected_message"), false; };
  auto send_done = [&] {
    Ctl d;
    d.type = CtlType::done;
    d.op = o_.op;
    d.mode = o_.mode;
    d.verify = verify_;
    d.size = o_.size;
    d.iters = done_ops_;
    return post_ctl(d);
  };
  if (client() && !send_done()) return false;
  if (!run_until(
          "no_done", [&](Instant) { return drain(none, unexpected); },
          [&] { return peer_done_.has_value(); }))
    return false;
  if (!client()) {
    if (o_.verify && o_.op == Op::write) check_region(target_, region_len_);
    if (!send_done()) return false;
  }
  // The peer's verdict counts too: for Writes only the server can check the octets, for
  // Reads only the client.
  if (o_.verify && peer_done_->verify == Verdict::failed) verify_ = Verdict::failed;
  // Our DONE (and every control Send) acknowledged: the peer has it.
  return run_until(
      "done_not_acked", [&](Instant) { return drain(none, unexpected); },
      [&] { return ctl_done_ == ctl_posted_; });
}

void Driver::shut_down() {
  if (!ep_) return;
  snapshot();
  // The server closes first (RFC 5040 section 5: the LLP closes the stream), once its DONE
  // is acknowledged; the client waits for that FIN. Closing the other way round, the FIN
  // can arrive in the segment that acknowledges the server's DONE, and the endpoint
  // flushes the Send before it sees it acknowledged. Then both wait until both FINs are
  // through; TIME-WAIT is as good as closed here.
  if (client()) {
    auto peer_closed = [&] {
      tcp::Connection* c = ep_->tcp_connection();
      return ep_->state() != Endpoint::State::established || c == nullptr || c->peer_closed();
    };
    loop_->run([](Instant) { return false; }, peer_closed,
               std::min(deadline_, loop_->now() + std::chrono::seconds(3)));
  }
  ep_->close();
  auto closed = [&] {
    if (ep_->state() == Endpoint::State::closed || ep_->state() == Endpoint::State::failed)
      return true;
    tcp::Connection* c = ep_->tcp_connection();
    return c == nullptr || c->state() == tcp::TcpState::time_wait ||
           c->state() == tcp::TcpState::closed;
  };
  loop_->run([](Instant) { return false; }, closed,
             std::min(deadline_, loop_->now() + std::chrono::seconds(3)));
  loop_->set_endpoint(nullptr);
  ep_.reset();
  // Keep answering a little (a lost last ACK brings the peer's FIN again). The memif
  // server (the listener, by this tool's convention) goes first: DPDK 22.11's memif server
  // can crash when its client disconnects while it polls (MACHINE-NOTES.md).
  loop_->linger(client() ? std::chrono::milliseconds(800) : std::chrono::milliseconds(200));
}

int Driver::run() {
  bool ok = start_runtime() && open();
  ok = ok && (client() ? client_hello() : server_hello());
  if (ok) {
    if (o_.mode == Mode::bw)
      ok = client() ? bw_client() : bw_server();
    else
      ok = client() ? lat_client() : lat_server();
  }
  if (ok && end_ == Instant{}) end_ = loop_->now();
  ok = ok && exchange_done();
  if (end_ == Instant{} && loop_) end_ = loop_->now();
  if (ep_ && !ok && !failed()) fail("incomplete");
  if (ep_) {
    if (ok)
      shut_down();
    else
      snapshot();
  }
  print_result();
  if (failed()) return 1;
  return o_.verify && verify_ != Verdict::ok ? 1 : 0;
}

}  // namespace esock::utcp::tool
