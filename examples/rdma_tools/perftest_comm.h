// perftest's out-of-band channel when run with -R (rdma_cm): a second iWARP connection on
// the test port, used only for strictly alternating Sends (linux-rdma/perftest,
// src/perftest_communication.c). The client always speaks first in an exchange; each side
// keeps one receive posted for the peer's next message (at most sizeof(pingpong_dest)).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "conn.h"

namespace esock::tools {

// perftest's struct pingpong_dest as its -R handshake sends it: 56 octets, every integer
// big-endian (perftest's HAVE_ENDIAN build), the 4 octets after rkey are padding.
struct PingpongDest {
  std::uint32_t lid = 0, out_reads = 0, qpn = 0, psn = 0, rkey = 0;
  std::uint64_t vaddr = 0;
  std::array<std::uint8_t, 16> gid{};
  std::uint32_t srqn = 0, gid_index = 0;
};
inline constexpr std::size_t pingpong_dest_len = 56;
void emit(const PingpongDest& d, std::span<std::uint8_t, pingpong_dest_len> out);
PingpongDest parse_dest(std::span<const std::uint8_t, pingpong_dest_len> in);

// perftest's struct bw_report_data as xchg_bw_reports sends it (peer version >= 5.33).
struct BwReport {
  std::uint64_t size = 0, iters = 0;
  double bw_peak = 0, bw_avg = 0, msg_rate = 0;
};

class CommChannel {
 public:
  CommChannel(rnic::Context& ctx, Conn& ep, bool client, int timeout_ms);
  // ctx_xchg_data: the client sends then receives, the server receives then sends.
  // last: the peer closes after this exchange (ctx_close_connection's handshake), so the
  // server's answer may complete as flushed by that close (wait_last_send_ok).
  bool xchg(std::span<const std::uint8_t> mine, std::span<std::uint8_t> theirs, bool last = false);
  bool hand_shake(const PingpongDest& mine, PingpongDest* theirs, bool last = false);
  // exchange_versions + check_sys_data + check_mtu, in perftest's order.
  bool prelude(std::string* peer_version);
  bool xchg_bw_reports(const BwReport& mine, BwReport* theirs);
  Conn& endpoint() { return ep_; }
  // While waiting on this channel, keep driving `other` too: a passive perftest server
  // sits in a handshake while the peer's RDMA Writes/Reads arrive on the test connection.
  void also_progress(Conn* other) { other_ = other; }

 private:
  bool send(std::span<const std::uint8_t> m, bool last = false);
  bool recv(std::span<std::uint8_t> out);
  bool wait(bool send_queue, ddp::Completion* c, bool last = false);

  Conn& ep_;
  bool client_;
  int timeout_ms_;
  Conn* other_ = nullptr;
  std::array<std::uint8_t, 64> tx_{}, rx_{};
  ddp::stag_t tx_key_, rx_key_;
};

}  // namespace esock::tools
