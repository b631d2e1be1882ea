// One esock_iwarp run: the runtime (DPDK port + lib/tcp stack), one utcp::Endpoint, the
// control exchange (HELLO/ADVERT at the start, DONE both ways at the end, ctl.h) and the
// measured workload (driver_bw.cc, driver_lat.cc), then the RESULT line (report.cc).
//
// Member order is destruction order reversed: the endpoint goes first, then the runtime
// (its device may still hold mbufs that point into registered memory, attached zero-copy),
// then the registered regions and the context that names them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ctl.h"
#include "esock/rnic/context.h"
#include "esock/utcp/endpoint.h"
#include "loop.h"
#include "options.h"
#include "tcp/runtime/runtime.h"

namespace esock::utcp::tool {

// A registered buffer; peers address it by virtual address (TO = address + offset).
struct Region {
  std::vector<std::uint8_t> mem;
  ddp::stag_t stag = 0;
  bool alloc(rnic::Context& ctx, std::size_t len);
  ddp::Sge sge(std::uint64_t off, std::uint32_t len) {
    return ddp::Sge{mem.data() + off, len, stag};
  }
  std::uint64_t to(std::uint64_t off = 0) const {
    return reinterpret_cast<std::uint64_t>(mem.data()) + off;
  }
};

// Receive buffers for the numbered messages 1..total a side expects (message 0 is the first
// control message, in its own buffer). Receives complete in posting order, so message k is
// in buffer k mod nbuf; consuming k reposts that buffer for k + nbuf.
class RecvRing {
 public:
  bool init(rnic::Context& ctx, std::size_t nbuf, std::uint32_t buf_len, std::uint64_t total);
  int post_initial(Endpoint& ep);
  int repost(Endpoint& ep, std::uint64_t k);
  bytes_view message(std::uint64_t k, std::uint32_t len) const {
    return bytes_view(mem_.mem.data() + (k % nbuf_) * buf_len_, len);
  }
  std::uint64_t total() const { return total_; }
  std::size_t nbuf() const { return nbuf_; }

 private:
  int post(Endpoint& ep, std::uint64_t k);
  Region mem_;
  std::size_t nbuf_ = 0;
  std::uint32_t buf_len_ = 0;
  std::uint64_t total_ = 0;
};

class Driver {
 public:
  explicit Driver(const Options& o) : o_(o) {}
  ~Driver();
  // The whole run; prints the RESULT line; returns the exit status.
  int run();

 private:
  static constexpr std::uint64_t ctl_wr = 1ull << 63;  // wr_id flag of control Sends
  static constexpr std::size_t ctl_slots = 255;        // tx slots after the rx buffer

  // driver.cc
  bool start_runtime();
  bool open();
  utcp::Options endpoint_options() const;
  bool client_hello();
  bool server_hello();
  bool size_workload();
  bool post_first_recv();
  bool exchange_done();
  void shut_down();
  bool post_ctl(const Ctl& c);
  bool post_doorbell(std::uint32_t m);
  bool post_ctl_bytes(const std::uint8_t* p, std::uint32_t len);
  // Rounds of the loop until done() or the run's deadline (then the run fails: `what`).
  template <class W, class D>
  bool run_until(const char* what, W work, D done);
  // Drains both CQs: failed completions end the run; control Sends are counted; ring
  // message 0 / ring_.total() are the peer's first / DONE message; other completions go to
  // on_send(c) / on_recv(k, byte_len).
  template <class S, class R>
  bool drain(S on_send, R on_recv);
  void fail(const std::string& why);
  bool failed() const { return !error_.empty(); }
  bool check_region(const Region& r, std::uint64_t len);
  void note_verify(bool ok) {
    if (!ok) verify_ = Verdict::failed;
  }
  // driver_bw.cc / driver_lat.cc: the measured part. Start and end times in start_/end_.
  bool bw_client();
  bool bw_server();
  bool lat_client();
  bool lat_server();
  bool post_data(std::uint64_t n);
  // report.cc
  void snapshot();
  void print_result();

  Options o_;  // the server's workload fields are replaced by the client's HELLO
  bool client() const { return !o_.listen; }
  std::uint64_t pattern_seed_ = 0;
  std::uint64_t slots_ = 1;       // distinct message-sized slots in the data regions
  std::uint64_t region_len_ = 0;  // slots_ * size
  std::uint64_t n_data_rx_ = 0;   // ring messages before the peer's DONE

  rnic::Context ctx_;
  Region local_;   // what we Send / Write from (pattern with --verify)
  Region target_;  // what the peer Writes into or Reads from / where our Reads land
  Region ctl_;     // control: rx buffer for message 0, then ctl_slots tx slots
  RecvRing ring_;
  std::unique_ptr<tcp::Runtime> rt_;
  std::optional<Loop> loop_;
  std::unique_ptr<Endpoint> ep_;

  Instant deadline_{}, start_{}, end_{};
  std::string error_;
  Verdict verify_ = Verdict::off;
  std::optional<Ctl> peer_first_, peer_done_;  // HELLO or ADVERT; the peer's DONE
  std::uint64_t ctl_posted_ = 0, ctl_done_ = 0;
  std::uint64_t done_ops_ = 0;  // completed data operations (messages, Writes, Reads)
  std::uint64_t bytes_ = 0;     // their payload octets
  std::vector<double> rtt_us_;
  // Snapshots taken before the close (report.cc).
  std::optional<Stats> ep_stats_;
  std::optional<tcp::TcbStats> tcb_stats_;
  std::optional<mpa::Negotiated> negotiated_;
};

}  // namespace esock::utcp::tool
