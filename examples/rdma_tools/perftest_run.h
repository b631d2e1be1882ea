// The measured part of the perftest-compatible tests (perftest's run_iter_bw,
// run_iter_bw_server, run_iter_lat_write, run_iter_lat_send, run_iter_lat), over one esock
// data connection, and perftest's result tables.
#pragma once

#include <cstdint>
#include <vector>

#include "conn.h"
#include "perftest_comm.h"

namespace esock::tools {

enum class Verb { send, write, read };
const char* to_string(Verb v);

struct TestParams {
  Verb verb = Verb::write;
  bool lat = false;
  bool client = false;
  std::uint64_t iters = 0;
  std::uint32_t size = 0;
  std::uint32_t tx_depth = 0;
  std::uint32_t rx_depth = 0;  // Send tests: receives the server keeps posted
  int timeout_ms = 20000;
};

// Registered memory of one side: the message buffer (first half, what we send or where
// Reads land) and the target the peer writes into (second half, advertised as vaddr);
// for Send BW the credit words (perftest's ctrl_buf: [0] our count, [1] the peer's).
class Resources {
 public:
  Resources(rnic::Context& ctx, const TestParams& p);
  std::uint8_t* local() { return buf_.data(); }
  std::uint8_t* target() { return buf_.data() + half_; }
  ddp::stag_t key() const { return key_; }
  std::uint8_t* ctrl() { return ctrl_.data(); }
  ddp::stag_t ctrl_key() const { return ctrl_key_; }
  // What our handshake advertises (set_up_connection / ctx_alloc_credit).
  PingpongDest my_dest(const TestParams& p) const;

 private:
  std::vector<std::uint8_t> buf_;
  std::size_t half_;
  ddp::stag_t key_;
  std::array<std::uint8_t, 8> ctrl_{};
  ddp::stag_t ctrl_key_;
};

// Receives the Send tests need posted before the handshake that releases the client.
bool post_initial_recvs(Conn& ep, Resources& r, const TestParams& p);

// Runs the test; false (with a message on stderr) on any failed completion or timeout.
bool run_bw_client(Conn& ep, Resources& r, const TestParams& p, const PingpongDest& rem,
                   BwReport* out);
bool run_bw_server_send(Conn& ep, Resources& r, const TestParams& p, const PingpongDest& rem,
                        BwReport* out);
bool run_lat(Conn& ep, Resources& r, const TestParams& p, const PingpongDest& rem,
             std::vector<double>* usec);

void print_bw_header();
void print_bw_row(const BwReport& r);
void print_lat_header();
void print_lat_row(const TestParams& p, std::vector<double> usec);
const char* result_line();

}  // namespace esock::tools
