// Verbs workloads for the utcp pair tests: bulk RDMA Writes fenced by a Send, a train of
// Sends, and RDMA Reads, each verified octet by octet and for completion order.
#pragma once

#include <algorithm>
#include <array>
#include <string>

#include "utcp_pair.h"

namespace esock::utcp::test {

struct Outcome {
  bool ok = false;
  std::string why;
};

// A writes `total` octets into B's region in `chunk`-sized RDMA Writes (at most `depth`
// outstanding), then a 4-octet Send; B's receive completion for that Send means every Write
// before it is placed (RFC 5040 section 5.5 ordering). B's region must then equal A's.
inline Outcome write_then_send(UtcpPair& p, std::size_t total, std::size_t chunk,
                               std::size_t depth = 32) {
  auto src = UtcpPair::region(p.ctx_a, total + 4, 7, true);
  auto dst = UtcpPair::region(p.ctx_b, total + 4, 0, false);
  const ddp::Sge fence_rx = dst.sge(total, 4);
  if (p.eb->post_recv(99, {&fence_rx, 1}) != 0) return {false, "post_recv"};
  std::size_t posted = 0, done = 0;
  bool fence_posted = false, fenced = false, fence_sent = false;
  std::array<ddp::Completion, 64> cq;
  const bool ok = p.run_until(
      [&] {
        while (posted < total && posted - done * chunk < depth * chunk) {
          const std::size_t n = std::min(chunk, total - posted);
          const ddp::Sge s = src.sge(posted, n);
          if (p.ea->post_write(posted / chunk, {&s, 1}, dst.stag, dst.to(posted)) != 0) break;
          posted += n;
        }
        for (std::size_t k = p.ea->poll_send_cq(cq), i = 0; i < k; ++i) {
          if (cq[i].status != ddp::Status::success) return true;
          if (cq[i].wr_id == 1000000)
            fence_sent = true;
          else
            ++done;
        }
        if (posted == total && !fence_posted) {
          const ddp::Sge s = src.sge(total, 4);
          fence_posted = p.ea->post_send(1000000, {&s, 1}) == 0;
        }
        for (std::size_t k = p.eb->poll_recv_cq(cq), i = 0; i < k; ++i) fenced = cq[i].wr_id == 99;
        return (fenced && fence_sent) || p.ea->state() == Endpoint::State::failed ||
               p.eb->state() == Endpoint::State::failed;
      },
      600s);
  if (!ok || !fenced || !fence_sent)
    return {false, "not fenced: a=" + p.ea->error() + " b=" + p.eb->error()};
  if (!std::equal(src.mem.begin(), src.mem.end(), dst.mem.begin()))
    return {false, "destination differs from source"};
  return {true, {}};
}

// A sends `count` messages of `size` octets; B has every receive posted up front (or
// posts them late, `post_late`), and must complete them in order with the right content.
inline Outcome send_train(UtcpPair& p, std::size_t count, std::size_t size,
                          bool post_late = false) {
  auto src = UtcpPair::region(p.ctx_a, count * size, 3, true);
  auto dst = UtcpPair::region(p.ctx_b, count * size, 0, false);
  std::size_t rposted = 0, sposted = 0, sdone = 0, rdone = 0;
  std::array<ddp::Completion, 64> cq;
  std::string bad;
  auto post_recvs = [&](std::size_t upto) {
    for (; rposted < upto; ++rposted) {
      const ddp::Sge s = dst.sge(rposted * size, size);
      if (p.eb->post_recv(rposted, {&s, 1}) != 0) break;
    }
  };
  if (!post_late) post_recvs(std::min<std::size_t>(count, 200));
  std::uint64_t rounds = 0;
  const bool ok = p.run_until(
      [&] {
        ++rounds;
        // Late posting: receives trail the sends, so early segments often find no buffer yet.
        post_recvs(std::min(
            count, post_late ? std::min(sposted, rdone + 100) / 2 + rounds / 50 : rdone + 200));
        while (sposted < count && sposted - sdone < 64) {
          const ddp::Sge s = src.sge(sposted * size, size);
          if (p.ea->post_send(sposted, {&s, 1}) != 0) break;
          ++sposted;
        }
        for (std::size_t k = p.ea->poll_send_cq(cq), i = 0; i < k; ++i) ++sdone;
        for (std::size_t k = p.eb->poll_recv_cq(cq), i = 0; i < k; ++i) {
          if (cq[i].wr_id != rdone || cq[i].status != ddp::Status::success ||
              cq[i].byte_len != size)
            bad = "receive completion " + std::to_string(cq[i].wr_id) + " out of order or failed";
          ++rdone;
        }
        return (rdone == count && sdone == count) || !bad.empty() ||
               p.ea->state() == Endpoint::State::failed || p.eb->state() == Endpoint::State::failed;
      },
      600s);
  if (!bad.empty()) return {false, bad};
  if (!ok || rdone != count || sdone != count)
    return {false, "received " + std::to_string(rdone) + "/" + std::to_string(count) + " sent " +
                       std::to_string(sdone) + "/" + std::to_string(count) + " a=" + p.ea->error() +
                       " b=" + p.eb->error()};
  if (!std::equal(src.mem.begin(), src.mem.end(), dst.mem.begin()))
    return {false, "received data differs"};
  return {true, {}};
}

// A reads `total` octets of B's region in `chunk`-sized RDMA Reads.
inline Outcome read_bulk(UtcpPair& p, std::size_t total, std::size_t chunk) {
  auto src = UtcpPair::region(p.ctx_b, total, 11, true);
  auto dst = UtcpPair::region(p.ctx_a, total, 0, false);
  std::size_t posted = 0, done = 0;
  std::array<ddp::Completion, 64> cq;
  std::string bad;
  const bool ok = p.run_until(
      [&] {
        while (posted < total && posted - done < 8 * chunk) {
          const std::size_t n = std::min(chunk, total - posted);
          const ddp::Sge s = dst.sge(posted, n);
          if (p.ea->post_read(posted, {&s, 1}, src.stag, src.to(posted)) != 0) break;
          posted += n;
        }
        for (std::size_t k = p.ea->poll_send_cq(cq), i = 0; i < k; ++i) {
          if (cq[i].status != ddp::Status::success || cq[i].wr_id != done)
            bad = "read completion " + std::to_string(cq[i].wr_id) + " status " +
                  std::to_string(static_cast<int>(cq[i].status)) + " expected " +
                  std::to_string(done);
          done += std::min(chunk, total - done);
        }
        return done == total || !bad.empty() || p.ea->state() == Endpoint::State::failed ||
               p.eb->state() == Endpoint::State::failed;
      },
      600s);
  if (!bad.empty()) return {false, bad};
  if (!ok || done != total) return {false, "read " + std::to_string(done) + " a=" + p.ea->error()};
  if (!std::equal(src.mem.begin(), src.mem.end(), dst.mem.begin()))
    return {false, "read data differs"};
  return {true, {}};
}

}  // namespace esock::utcp::test
