#include "esock/rdmacm/cm_state.h"

#include <cerrno>

namespace esock::rdmacm {

int setup_errno(CmEvent e, int status) {
  switch (e) {
    case CmEvent::addr_error:
      // No route, or a route through an interface no RDMA device serves (the device is
      // chosen by the address, as rdma_cm does).
      if (status == -ENODEV || status == -ENETUNREACH || status == -EHOSTUNREACH) return -status;
      // No ARP reply within the time: what kernel TCP reports for an on-link host that
      // does not answer.
      if (status == -ETIMEDOUT || status == -ENODATA) return EHOSTUNREACH;
      return EADDRNOTAVAIL;
    case CmEvent::route_error:
      return status < 0 ? -status : EHOSTUNREACH;
    case CmEvent::rejected:
      return ECONNREFUSED;  // the status is the peer's reject reason, not an errno
    case CmEvent::unreachable:
      // iWARP: the TCP connect failed (-ECONNREFUSED, -ETIMEDOUT) or MPA timed out.
      return status < 0 ? -status : ETIMEDOUT;
    case CmEvent::connect_error:
      return status < 0 ? -status : ECONNREFUSED;
    case CmEvent::device_removal:
      return ENODEV;
    case CmEvent::disconnected:
      return ECONNRESET;
    default:
      return EPROTO;  // an event set-up does not expect
  }
}

CmAction CmState::fail_with(int err) {
  if (was_established_) {
    broken_ = true;
    stage_ = CmStage::disconnected;
  } else {
    err_ = err != 0 ? err : EPROTO;
    stage_ = CmStage::failed;
  }
  return CmAction::release;
}

void CmState::fail(int err) {
  if (stage_ == CmStage::failed || stage_ == CmStage::disconnected) return;
  (void)fail_with(err);
}

CmAction CmState::on_event(CmEvent e, int status) {
  switch (stage_) {
    case CmStage::resolving_addr:
      if (e == CmEvent::addr_resolved) {
        stage_ = CmStage::resolving_route;
        return CmAction::resolve_route;
      }
      break;
    case CmStage::resolving_route:
      if (e == CmEvent::route_resolved) {
        stage_ = CmStage::connecting;
        return CmAction::connect;
      }
      break;
    case CmStage::connecting:
    case CmStage::accepting:
      if (e == CmEvent::established) {
        stage_ = CmStage::established;
        was_established_ = true;
        return CmAction::none;
      }
      break;
    case CmStage::established:
      if (e == CmEvent::disconnected) {
        // rdma_cm reports the peer's close, ours and a fatal QP error alike; ESTP's own FIN
        // (docs/stream-protocol.md section 5) tells an orderly end from the others.
        stage_ = CmStage::disconnected;
        return CmAction::release;
      }
      if (e == CmEvent::timewait_exit) return CmAction::none;
      break;
    case CmStage::disconnected:
    case CmStage::failed:
      return CmAction::none;  // over: late events change nothing
  }
  // Events that do not move the connection on: the ones that end it, and any other (an
  // out-of-order one) counts as a protocol failure before established, never after.
  switch (e) {
    case CmEvent::addr_resolved:
    case CmEvent::route_resolved:
    case CmEvent::established:
    case CmEvent::timewait_exit:
      if (was_established_) return CmAction::none;
      return fail_with(EPROTO);
    default:
      // Our own close racing an error: not the peer's failure.
      if (closing_ && was_established_) {
        stage_ = CmStage::disconnected;
        return CmAction::release;
      }
      return fail_with(setup_errno(e, status));
  }
}

int CmState::setup_state() const {
  if (stage_ == CmStage::failed) return err_;
  return was_established_ ? 0 : EINPROGRESS;
}

}  // namespace esock::rdmacm
