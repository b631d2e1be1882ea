// The life of one rdmacm connection as an engine with no I/O: rdma_cm's events in, the next
// step out. The provider (providers/rdmacm.cc) turns each librdmacm event into a CmEvent and
// does what on_event() answers; the runtime reads setup_state() and transport_state() as
// on every provider (provider.h). Unit-tested without a device (tests/unit/esock/rdmacm).
//
// Initiator:  resolving_addr --addr_resolved--> resolving_route --route_resolved-->
//             connecting --established--> established
// Responder:  accepting --established--> established
// Then:       established --disconnected--> disconnected (the peer's close or ours)
// Any error event before established ends in failed with an errno (error()); after it, the
// connection is broken (a reset, as a Terminate or a lost device is on the other providers).
#pragma once

#include <cstdint>

namespace esock::rdmacm {

enum class CmEvent : std::uint8_t {
  addr_resolved,
  addr_error,
  route_resolved,
  route_error,
  established,
  rejected,        // the peer (its rdma_cm, or its MPA: a Reject) refused the connection
  unreachable,     // the peer's TCP did not answer, or MPA did not complete in time
  connect_error,   // the connection could not be made (iWARP: MPA failed)
  disconnected,    // the connection closed (rdma_disconnect on either side, or a fatal error)
  device_removal,  // the RDMA device went away under the connection
  timewait_exit,   // nothing more will come for the connection's QP
};

// What the provider does next.
enum class CmAction : std::uint8_t {
  none,
  resolve_route,  // rdma_resolve_route
  connect,        // create the queue pair, post the early receives, rdma_connect
  release,        // the connection failed or ended: nothing more to do with the QP
};

enum class CmStage : std::uint8_t {
  resolving_addr,
  resolving_route,
  connecting,
  accepting,
  established,
  disconnected,
  failed,
};

class CmState {
 public:
  static CmState initiator() { return CmState(CmStage::resolving_addr); }
  static CmState responder() { return CmState(CmStage::accepting); }

  // status: the event's status (librdmacm's rdma_cm_event::status: 0, a negative errno, or
  // for rejected the peer's reject reason, a positive number).
  CmAction on_event(CmEvent e, int status);
  // A step the provider took failed (rdma_resolve_route, creating the QP, rdma_connect,
  // rdma_accept): the connection fails with err.
  void fail(int err);
  // Our side asked for the end (rdma_disconnect): later error events are not the peer's.
  void closing() { closing_ = true; }

  CmStage stage() const { return stage_; }
  // provider.h's ProviderConn::setup_state: EINPROGRESS, 0 once established (and after), or
  // the errno set-up failed with.
  int setup_state() const;
  // After established: the connection closed in order (ended) or failed (broken: a fatal
  // event, as a reset or a Terminate is on the other providers).
  bool ended() const { return stage_ == CmStage::disconnected && !broken_; }
  bool broken() const { return was_established_ && broken_; }
  int error() const { return err_; }
  // Whether the connection got as far as an rdma_connect that has not been answered: a
  // peer that does not speak iWARP leaves it there (the runtime's silent-peer fallback).
  bool awaiting_reply() const { return stage_ == CmStage::connecting; }

 private:
  explicit CmState(CmStage s) : stage_(s) {}
  CmAction fail_with(int err);

  CmStage stage_;
  int err_ = 0;
  bool was_established_ = false;
  bool broken_ = false;  // after established: a fatal event rather than an orderly close
  bool closing_ = false;
};

// The errno a set-up failure event gives the application (docs/sockets.md, "Providers"):
// no device or address (addr_error) EADDRNOTAVAIL unless the event says ENODEV or no route,
// no ARP answer EHOSTUNREACH; a refusal ECONNREFUSED; no answer ETIMEDOUT unless the event
// names another errno.
int setup_errno(CmEvent e, int status);

}  // namespace esock::rdmacm
