// The rdma_tools' view of an iWARP connection, whatever carries it: the kernel-socket
// transport (esock::ksock) or esock's own DPDK TCP stack (esock::utcp). The tools speak
// rping's and perftest's protocols through this and nothing else, so the same wire
// behaviour is checked against siw over both transports (tests/interop/siw).
//
// A Transport is one per process: the software RNIC context (memory registration) and
// what connections share (for DPDK: the EAL, the port and the TCP stack). It must outlive
// every Conn made from it. Progress happens only inside calls (no threads).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "ddp/cq.h"
#include "ddp/qp.h"
#include "esock/rnic/context.h"
#include "mpa/negotiator.h"

namespace esock::tools {

class Conn {
 public:
  virtual ~Conn() = default;

  // Work requests: 0 or an errno value (see ddp::Qp).
  virtual int post_send(std::uint64_t wr_id, std::span<const ddp::Sge> sg) = 0;
  virtual int post_recv(std::uint64_t wr_id, std::span<const ddp::Sge> sg) = 0;
  virtual int post_write(std::uint64_t wr_id, std::span<const ddp::Sge> sg, ddp::stag_t rkey,
                         std::uint64_t remote_to) = 0;
  virtual int post_read(std::uint64_t wr_id, std::span<const ddp::Sge> sink, ddp::stag_t rkey,
                        std::uint64_t remote_to) = 0;
  virtual std::size_t poll_send_cq(std::span<ddp::Completion> out) = 0;
  virtual std::size_t poll_recv_cq(std::span<ddp::Completion> out) = 0;

  // Moves data: may wait up to timeout_ms when there is nothing to do (a poll-mode
  // transport runs one round and backs off instead). False once the stream is over.
  virtual bool progress(int timeout_ms) = 0;
  // Orderly close: what is queued goes out, then FIN; waits up to timeout_ms for the peer's.
  virtual void close(int timeout_ms) = 0;

  virtual const mpa::Negotiated& negotiated() const = 0;
  virtual const std::string& error() const = 0;
  // Established and the peer has not closed.
  virtual bool alive() const = 0;

  // Drive progress until a completion arrives on the send (or receive) queue, or timeout.
  bool wait_send(ddp::Completion& out, int timeout_ms) { return wait(true, out, timeout_ms); }
  bool wait_recv(ddp::Completion& out, int timeout_ms) { return wait(false, out, timeout_ms); }

 private:
  bool wait(bool send_queue, ddp::Completion& out, int timeout_ms);
};

struct ConnArgs;

class Transport {
 public:
  // The transport named by a.transport ("ksock" or "dpdk"); null with *why.
  static std::unique_ptr<Transport> create(const ConnArgs& a, std::string* why);
  virtual ~Transport() = default;

  rnic::Context& ctx() { return ctx_; }
  // TCP connect and MPA as the initiator (cfg.initiator is set here); null with *why,
  // which names a refused TCP connection "refused" and an MPA reject "rejected".
  virtual std::unique_ptr<Conn> connect(const std::string& host, std::uint16_t port,
                                        const mpa::Config& cfg, std::string* why) = 0;
  virtual bool listen(const std::string& addr, std::uint16_t port, std::string* why) = 0;
  // The next connection on the listening port, with MPA as the responder.
  virtual std::unique_ptr<Conn> accept(const mpa::Config& cfg, std::string* why) = 0;
  // Lets time pass while answering the peer (a poll-mode stack must keep polling).
  virtual void idle(int ms) = 0;
  // What the tools print as their own address.
  virtual std::string describe() const = 0;

 protected:
  rnic::Context ctx_;
};

}  // namespace esock::tools
