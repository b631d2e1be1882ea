// Providers carry DDPMODE connections (docs/sockets.md, "Providers"): they turn a connected
// TCP stream into an iWARP connection (MPA negotiation) and give the runtime its verbs and
// a descriptor to poll. ksock (kernel TCP socket) is the portable default; the DPDK stack
// (lib/tcp) and rdmacm slot in behind the same interface.
#pragma once

#include <memory>
#include <string>

#include "esock/sockets/estp_verbs.h"
#include "mpa/negotiator.h"

namespace esock::sockets {

class ProviderConn {
 public:
  virtual ~ProviderConn() = default;  // releases the transport (closes its descriptor)
  virtual estp::Verbs& verbs() = 0;
  virtual const mpa::Negotiated& negotiated() const = 0;
  // The progress thread polls this descriptor for poll_events() and then calls on_ready().
  virtual int poll_fd() const = 0;
  virtual short poll_events() const = 0;
  virtual void on_ready(short revents) = 0;
  // Frames what the queue pair has and writes what the transport takes now (no waiting).
  virtual void flush() = 0;
  virtual bool output_pending() const = 0;
  // 0 while healthy; ECONNRESET once the stream broke; -1 after an orderly end (peer FIN).
  virtual int transport_state() const = 0;
  // Orderly end of our direction (TCP FIN after the queued octets).
  virtual void shutdown() = 0;
  // While on, nothing is read from the transport (the kernel or stack buffers it, flow
  // control pushes back): RAWMODE starts so, until the application's first work request.
  virtual void hold_input(bool on) = 0;
};

class Provider {
 public:
  virtual ~Provider() = default;
  virtual const char* name() const = 0;
  // Takes ownership of tcp_fd (connected, close-on-exec) and negotiates MPA in the given
  // role, waiting at most timeout_ms. Null with *err (errno) and *why on failure.
  virtual std::unique_ptr<ProviderConn> establish(int tcp_fd, const mpa::Config& cfg,
                                                  int timeout_ms, int* err, std::string* why) = 0;
};

// The process's provider as configured (ESOCK_PROVIDER); null if it is not available.
Provider* configured_provider();
std::unique_ptr<Provider> make_ksock_provider();

}  // namespace esock::sockets
