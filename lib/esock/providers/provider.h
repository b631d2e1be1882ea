// Providers carry DDPMODE connections (docs/sockets.md, "Providers"): they turn a TCP
// stream into an iWARP connection (MPA negotiation) and give the runtime its verbs. Two
// kinds:
// * kernel TCP (ksock, the portable default): the runtime connects and accepts kernel
//   sockets and hands the connected descriptor over (establish); the progress thread
//   waits on the descriptor each connection gives it (poll_fd).
// * own stack (dpdk: lib/tcp on a DPDK port, in the plugin libesock_dpdk.so): connections
//   open in the provider's stack (connect, listen); the progress thread polls the stack
//   (poll_once), backing off when idle. Everything is called under the runtime lock.
#pragma once

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "esock/providers/transport_state.h"
#include "esock/rnic/verbs.h"
#include "mpa/negotiator.h"

namespace esock::sockets {

struct Config;

// How often a full pass looks at every connection (the runtime's service of every socket,
// an own stack's progress of every endpoint), besides the rounds that look only at those
// with something to do: `period` per 10 connections, at most a second. The passes then
// cost the same per second however many connections are held, and bound what a missed
// event could delay.
constexpr std::chrono::nanoseconds full_pass_period(std::chrono::nanoseconds period,
                                                    std::size_t conns) {
  const auto p = period * static_cast<long>(std::max<std::size_t>(1, conns / 10));
  return std::min<std::chrono::nanoseconds>(std::chrono::seconds(1), p);
}

// getsockname/getpeername's contract for an IPv4 name: truncate to *len, report the full
// size; 0, or -1 with EFAULT.
inline int copy_sockaddr(const sockaddr_in& a, sockaddr* addr, socklen_t* len) {
  if (addr == nullptr || len == nullptr) {
    errno = EFAULT;
    return -1;
  }
  std::memcpy(addr, &a, *len < sizeof a ? *len : sizeof a);
  *len = sizeof a;
  return 0;
}

// A connection's transport and protocol counters, for esock-stat (stats_layout.h).
struct ConnCounters {
  std::uint64_t tcp_retransmits = 0;
  std::uint64_t fpdus_tx = 0, fpdus_rx = 0;        // MPA FPDUs (RFC 5044)
  std::uint64_t ooo_segments = 0, ooo_placed = 0;  // offered ahead of a hole; placed early
  bool terminated = false;                         // a Terminate was sent or received
};

class ProviderConn {
 public:
  virtual ~ProviderConn() = default;  // releases the transport (closes its descriptor)
  virtual rnic::Verbs& verbs() = 0;
  virtual const mpa::Negotiated& negotiated() const = 0;
  virtual ConnCounters counters() const { return {}; }
  // The progress thread polls this descriptor for poll_events() and then calls on_ready().
  virtual int poll_fd() const = 0;
  virtual short poll_events() const = 0;
  virtual void on_ready(short revents) = 0;
  // Frames what the queue pair has and writes what the transport takes now (no waiting).
  virtual void flush() = 0;
  // Whether the transport did anything for this connection since the last call (octets,
  // ACKs, completions, a state change): the runtime's round services a connection only
  // then, or when its own work is due, or on its periodic full pass (progress.cc). A
  // provider that cannot tell says true.
  virtual bool take_activity() { return true; }
  // A provider that tells when take_activity() turns true calls the hook then (under the
  // runtime lock, from its rounds or a flush): the runtime's rounds then look only at the
  // connections named so, and at those with their own work due (progress.cc). One that
  // cannot (reports_activity() false) has its connections looked at every round.
  virtual bool reports_activity() const { return false; }
  void set_activity_hook(void (*fn)(void*), void* ctx) {
    activity_fn_ = fn;
    activity_ctx_ = ctx;
  }
  virtual bool output_pending() const = 0;
  virtual TransportState transport_state() const = 0;
  // Orderly end of our direction (TCP FIN after the queued octets).
  virtual void shutdown() = 0;
  // Whether shutdown() ends both directions (rdma_disconnect takes the queue pair out of
  // RTS): octets the peer sends after it are never read, and the LLP's close then resets
  // the connection, dropping what it still had to send. Close waits for the peer to have
  // everything first (estp::Stream::fin_delivered).
  virtual bool shutdown_ends_both() const { return false; }
  // Abortive close (SO_LINGER with a zero time, socket(7)): the transport resets at once,
  // whatever is queued. Kernel TCP does it itself when its socket closes (the option is on
  // it); an own stack resets its connection here.
  virtual void abort() {}
  // While on, nothing is read from the transport (the kernel or stack buffers it, flow
  // control pushes back): RAWMODE starts so, until the application's first work request.
  virtual void hold_input(bool on) = 0;
  // getsockname/getpeername semantics (0, or -1 with errno).
  virtual int name(bool peer, sockaddr* addr, socklen_t* len) const = 0;
  // The kernel socket SO_*/TCP_* options go to, or -1 (the socket layer keeps one).
  virtual int option_fd() const { return poll_fd(); }
  // Own-stack providers: EINPROGRESS while TCP and MPA are being set up, 0 once
  // established, an errno when set-up failed (setup_error() says why).
  virtual int setup_state() const { return 0; }
  virtual std::string setup_error() const { return {}; }
  // Whether a fork child may take the connection over (runtime/fork_handover.h): its state
  // is all in process memory fork copies, and its transport a descriptor fork shares.
  virtual bool survives_fork() const { return false; }
  // A peer that does not speak esock (docs/sockets.md, "Peers without esock"), while MPA is
  // being set up: its first octets are not MPA's (nothing of them was consumed), or it has
  // sent nothing. take_plain() then gives the kernel socket away (-1 if there is none).
  virtual bool peer_not_mpa() const { return false; }
  virtual bool peer_silent() const { return false; }
  virtual int take_plain() { return -1; }
  // Own stacks, instead: carries the connection on as plain TCP through fd, the runtime's
  // end of an AF_UNIX stream pair (non-blocking, close-on-exec, high), which the provider
  // owns from now on, also when it returns false (utcp/plain_relay.h).
  // Memory the transport may still send from by reference after the connection is
  // released (a copy-on-write's copy, an ESTP stream's send buffers: runtime.cc): the
  // provider frees it once nothing points into it. Transports that copy what they send
  // free it now.
  virtual void keep_while_sent(std::shared_ptr<void> /*mem*/) {}
  virtual bool relay_plain(int fd) {
    ::close(fd);
    return false;
  }
  // A negotiated responder whose transport is a descriptor (ksock): the peer's MPA Request
  // as it arrived, so another process can take the connection over (Provider::
  // adopt_negotiated). Empty when the provider cannot hand connections over.
  virtual bytes_view mpa_request() const { return {}; }

 protected:
  void activity() const {
    if (activity_fn_ != nullptr) activity_fn_(activity_ctx_);
  }

 private:
  void (*activity_fn_)(void*) = nullptr;
  void* activity_ctx_ = nullptr;
};

// A passive open whose MPA set-up the runtime runs off the accept path (under the runtime
// lock): an own stack's listener, or a kernel listening socket (ksock).
class ProviderListener {
 public:
  virtual ~ProviderListener() = default;  // stops listening; waiting connections are reset
  virtual bool pending() const = 0;       // a TCP connection waits in the accept queue
  // A descriptor that polls readable when pending() may be true, for a progress thread
  // that sleeps in poll(2); -1 when the stack's own polling covers it.
  virtual int poll_fd() const { return -1; }
  // Takes the oldest and starts MPA as the responder (settle it with setup_state());
  // null when none is pending.
  virtual std::unique_ptr<ProviderConn> accept(const mpa::Config& cfg) = 0;
  // getsockname(2) of the listener: its address family's name, truncated to *len.
  virtual int name(sockaddr* addr, socklen_t* len) const = 0;
};

class Provider {
 public:
  virtual ~Provider() = default;
  virtual const char* name() const = 0;
  // esock's own RDMAP engine (lib/ddp) runs the connections, so RFC 7306 and tripwires work
  // (ksock, dpdk); false where a device does (rdmacm).
  virtual bool software_rnic() const { return true; }
  // Kernel-TCP providers: takes ownership of tcp_fd (connected, close-on-exec,
  // non-blocking) and starts MPA as the initiator (the Request goes out), moved on in the
  // runtime's rounds (poll_fd, on_ready, setup_state; peer_silent and peer_not_mpa tell a
  // peer without esock), input held until the stream's receives are posted. Null when the
  // provider has no kernel-TCP connections.
  virtual std::unique_ptr<ProviderConn> initiate(int /*tcp_fd*/, const mpa::Config& /*cfg*/) {
    return nullptr;
  }

  // Named counters of the provider's own stack and port for esock-stat (stats_layout.h),
  // e.g. {"tcp.retransmits", n}; read under the runtime lock every 100 ms.
  virtual void counters(std::vector<std::pair<std::string, std::uint64_t>>* /*out*/) const {}

  // Own-stack providers (the rest of the class; all under the runtime lock).
  virtual bool own_stack() const { return false; }
  // An own stack on the kernel's own addresses (rdmacm: an RNIC or siw serves a kernel
  // interface): sockets bind as the kernel would, a listener listens on the bound address,
  // and a peer without esock gets a plain kernel TCP socket rather than a connection in the
  // stack.
  virtual bool kernel_addresses() const { return false; }
  // Brings the stack up (once): 0 or an errno with *why.
  virtual int start(std::string* /*why*/) { return 0; }
  // Active open: TCP, then MPA as the initiator, progressed by poll_once(). Null with
  // *err (EAFNOSUPPORT, EADDRNOTAVAIL, ENETUNREACH...) and *why when it cannot start.
  virtual std::unique_ptr<ProviderConn> connect(const sockaddr_in& /*dst*/,
                                                const mpa::Config& /*cfg*/, int* err,
                                                std::string* /*why*/) {
    *err = EOPNOTSUPP;
    return nullptr;
  }
  // Passive open on the socket's bound address (an own stack with addresses of its own
  // listens on the port only; a provider on the kernel's addresses, on that address).
  virtual std::unique_ptr<ProviderListener> listen(const sockaddr_in& /*local*/, int /*backlog*/,
                                                   int* err, std::string* /*why*/) {
    *err = EOPNOTSUPP;
    return nullptr;
  }
  // Kernel-TCP providers: takes ownership of a listening kernel socket (private number,
  // close-on-exec, non-blocking) whose connections then negotiate MPA in the runtime's
  // rounds (ProviderConn::setup_state), not inside accept(). Null with *err when the
  // provider cannot.
  virtual std::unique_ptr<ProviderListener> adopt_listener(int /*listen_fd*/, int* err) {
    *err = EOPNOTSUPP;
    return nullptr;
  }
  // A connection another process of the family negotiated as the responder on a listener
  // they share (docs/sockets.md, "fork"): its kernel socket, the listener's MPA settings and
  // the peer's MPA Request. The negotiation is replayed without I/O (the Reply went out
  // already); what the peer sent after its Request is still unread in the socket. Null
  // when the provider has no such connections.
  virtual std::unique_ptr<ProviderConn> adopt_negotiated(int /*fd*/, const mpa::Config& /*cfg*/,
                                                         bytes_view /*mpa_request*/) {
    return nullptr;
  }
  // A peer without esock (docs/sockets.md, "Peers without esock"), esock client side: a
  // fresh plain TCP connection to dst in the stack (the probe that found out carried an MPA
  // Request the peer took for data), relayed through fd as relay_plain does (*local: the
  // connection's name). False with *err.
  virtual bool open_plain(const sockaddr_in& /*dst*/, int fd, sockaddr_in* /*local*/, int* err) {
    ::close(fd);
    *err = EOPNOTSUPP;
    return false;
  }
  // One round of the stack and of every connection it carries; true if anything happened
  // (the progress thread backs off after a run of empty rounds).
  virtual bool poll_once() { return false; }
  // Descriptors whose readiness moves the stack's work on besides its device (the ends of
  // the plain relays), for a progress thread that sleeps between rounds.
  virtual void poll_fds(std::vector<pollfd>* /*out*/) const {}
  // Called once by the progress thread when it first polls the stack: a device that
  // raises a signal per received frame (DPDK's net_tap: O_ASYNC on its queues, a signal
  // handler that counts them and without which its receive path reads nothing) sends it to
  // the calling thread from then on, which unblocks it, so that the application's threads
  // never see their system calls interrupted by it (nc quits on poll's EINTR).
  virtual void take_device_signals() {}
  // Process exit, before stop(): what is still to be moved or closed (plain relays, the
  // application's ends counting as closed from the first call on; closes under way in an
  // own stack's TCP); 0 when nothing is.
  virtual std::size_t drain_at_exit() { return 0; }
  // Process exit, after the runtime drained what it could: releases the device and what
  // it leaves on the host (DPDK: the port, EAL's runtime directory). Nothing is called
  // after this.
  virtual void stop() {}
};

// The process's provider as configured (ESOCK_PROVIDER); null if it is not available.
Provider* configured_provider();
std::unique_ptr<Provider> make_ksock_provider();

}  // namespace esock::sockets

// The entry point of a provider plugin (libesock_<name>.so next to libesock.so), loaded with
// dlopen when the configuration names it: null with *why when it cannot be used.
extern "C" esock::sockets::Provider* esock_provider_create(const esock::sockets::Config& cfg,
                                                           std::string* why);
