#include "perftest_comm.h"

#include <bit>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "base/endian.h"
#include "tool_common.h"

namespace esock::tools {

namespace {
// perftest's version string: peers older than 5.70 refuse to run, and 5.33+ selects the
// 8-octet iteration count in the report exchange.
constexpr char perftest_version[] = "6.06";
constexpr std::size_t version_len = 16;  // MAX_VERSION
constexpr std::uint32_t cycle_buffer = 4096, cache_line = 64;

std::uint64_t double_bits(double v) {
  return std::bit_cast<std::uint64_t>(v);
}
double bits_double(std::uint64_t v) {
  return std::bit_cast<double>(v);
}
}  // namespace

void emit(const PingpongDest& d, std::span<std::uint8_t, pingpong_dest_len> out) {
  std::uint8_t* p = out.data();
  std::memset(p, 0, out.size());
  store_be32(p + 0, d.lid);
  store_be32(p + 4, d.out_reads);
  store_be32(p + 8, d.qpn);
  store_be32(p + 12, d.psn);
  store_be32(p + 16, d.rkey);
  store_be64(p + 24, d.vaddr);
  std::memcpy(p + 32, d.gid.data(), d.gid.size());
  store_be32(p + 48, d.srqn);
  store_be32(p + 52, d.gid_index);
}

PingpongDest parse_dest(std::span<const std::uint8_t, pingpong_dest_len> in) {
  const std::uint8_t* p = in.data();
  PingpongDest d;
  d.lid = load_be32(p + 0);
  d.out_reads = load_be32(p + 4);
  d.qpn = load_be32(p + 8);
  d.psn = load_be32(p + 12);
  d.rkey = load_be32(p + 16);
  d.vaddr = load_be64(p + 24);
  std::memcpy(d.gid.data(), p + 32, d.gid.size());
  d.srqn = load_be32(p + 48);
  d.gid_index = load_be32(p + 52);
  return d;
}

CommChannel::CommChannel(rnic::Context& ctx, Conn& ep, bool client, int timeout_ms)
    : ep_(ep), client_(client), timeout_ms_(timeout_ms) {
  tx_key_ = ctx.reg_mr(tx_.data(), tx_.size(), 0);
  rx_key_ = ctx.reg_mr(rx_.data(), rx_.size(), ddp::access_local_write);
  // post_one_recv_wqe: perftest posts it before connecting, so the peer may speak at once.
  ddp::Sge r{rx_.data(), pingpong_dest_len, rx_key_};
  ep_.post_recv(1, {&r, 1});
}

bool CommChannel::send(std::span<const std::uint8_t> m, bool last) {
  std::memcpy(tx_.data(), m.data(), m.size());
  ddp::Sge s{tx_.data(), static_cast<std::uint32_t>(m.size()), tx_key_};
  if (ep_.post_send(2, {&s, 1}) != 0) {
    std::fprintf(stderr, "comm channel: post_send failed\n");
    return false;
  }
  ddp::Completion c{};
  return wait(true, &c, last);
}

bool CommChannel::wait(bool send_queue, ddp::Completion* c, bool last) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
  const char* what = send_queue ? "comm channel send" : "comm channel receive";
  bool open = true;
  for (;;) {
    const std::size_t n = send_queue ? ep_.poll_send_cq({c, 1}) : ep_.poll_recv_cq({c, 1});
    if (n == 1) {
      if (c->status == ddp::Status::success) return true;
      if (last && flushed_by_peer_close(ep_, *c)) {
        std::fprintf(stderr, "%s: flushed by the peer's close that answered it (counted as sent)\n",
                     what);
        return true;
      }
      std::fprintf(stderr, "%s: completion status %s (%s)\n", what, to_string(c->status),
                   ep_.error().c_str());
      return false;
    }
    // The round that saw the close may also have completed (or flushed) our request.
    if (!open) {
      std::fprintf(stderr, "%s: channel closed (%s)\n", what, ep_.error().c_str());
      return false;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "%s: no completion (timeout)\n", what);
      return false;
    }
    open = ep_.progress(other_ ? 0 : 1);
    if (other_) other_->progress(1);
  }
}

bool CommChannel::recv(std::span<std::uint8_t> out) {
  ddp::Completion c{};
  if (!wait(false, &c)) return false;
  const std::size_t n = std::min<std::size_t>(out.size(), c.byte_len);
  std::memcpy(out.data(), rx_.data(), n);
  ddp::Sge r{rx_.data(), pingpong_dest_len, rx_key_};
  return ep_.post_recv(1, {&r, 1}) == 0;  // before our answer, as rdma_read_data does
}

bool CommChannel::xchg(std::span<const std::uint8_t> mine, std::span<std::uint8_t> theirs,
                       bool last) {
  if (client_) return send(mine) && recv(theirs);
  return recv(theirs) && send(mine, last);
}

bool CommChannel::hand_shake(const PingpongDest& mine, PingpongDest* theirs, bool last) {
  std::array<std::uint8_t, pingpong_dest_len> out{}, in{};
  emit(mine, out);
  if (!xchg(out, in, last)) return false;
  if (theirs) *theirs = parse_dest(in);
  return true;
}

bool CommChannel::prelude(std::string* peer_version) {
  std::array<std::uint8_t, version_len> v{}, rv{};
  std::memcpy(v.data(), perftest_version, sizeof perftest_version);
  if (!xchg(v, rv)) return false;
  rv.back() = 0;
  *peer_version = reinterpret_cast<const char*>(rv.data());
  // check_sys_data: page size and cache line size, big-endian ints (peers >= 5.32).
  std::array<std::uint8_t, 4> mine{}, theirs{};
  store_be32(mine.data(), cycle_buffer);
  if (!xchg(mine, theirs)) return false;
  store_be32(mine.data(), cache_line);
  if (!xchg(mine, theirs)) return false;
  // check_mtu: the IB MTU enum as a decimal string in 2 octets ("3" = 1024, what siw reports
  // for a 1500-octet netdev). rdma_cm QPs take the path MTU from the CM, so it is cosmetic.
  std::array<std::uint8_t, 2> mtu{'3', 0}, rmtu{};
  return xchg(mtu, rmtu);
}

bool CommChannel::xchg_bw_reports(const BwReport& mine, BwReport* theirs) {
  const std::uint64_t out[5] = {mine.size, mine.iters, double_bits(mine.bw_peak),
                                double_bits(mine.bw_avg), double_bits(mine.msg_rate)};
  std::uint64_t in[5] = {};
  for (int i = 0; i < 5; ++i) {
    std::array<std::uint8_t, 8> o{}, r{};
    store_be64(o.data(), out[i]);
    if (!xchg(o, r)) return false;
    in[i] = load_be64(r.data());
  }
  *theirs = {in[0], in[1], bits_double(in[2]), bits_double(in[3]), bits_double(in[4])};
  return true;
}

}  // namespace esock::tools
