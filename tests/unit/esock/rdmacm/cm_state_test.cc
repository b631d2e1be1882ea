// rdmacm::CmState (lib/esock/rdmacm/cm_state.h): rdma_cm's events in every order set-up and
// close can see them, no device needed.
#include "esock/rdmacm/cm_state.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace esock::rdmacm {
namespace {

CmState established_initiator() {
  CmState s = CmState::initiator();
  EXPECT_EQ(s.on_event(CmEvent::addr_resolved, 0), CmAction::resolve_route);
  EXPECT_EQ(s.on_event(CmEvent::route_resolved, 0), CmAction::connect);
  EXPECT_EQ(s.on_event(CmEvent::established, 0), CmAction::none);
  return s;
}

TEST(CmState, InitiatorResolvesAddressThenRouteThenConnects) {
  CmState s = CmState::initiator();
  EXPECT_EQ(s.setup_state(), EINPROGRESS);
  EXPECT_FALSE(s.awaiting_reply());
  EXPECT_EQ(s.on_event(CmEvent::addr_resolved, 0), CmAction::resolve_route);
  EXPECT_EQ(s.setup_state(), EINPROGRESS);
  EXPECT_EQ(s.on_event(CmEvent::route_resolved, 0), CmAction::connect);
  EXPECT_TRUE(s.awaiting_reply());  // rdma_connect sent, no answer yet
  EXPECT_EQ(s.on_event(CmEvent::established, 0), CmAction::none);
  EXPECT_EQ(s.setup_state(), 0);
  EXPECT_FALSE(s.awaiting_reply());
  EXPECT_FALSE(s.ended());
  EXPECT_FALSE(s.broken());
}

TEST(CmState, ResponderIsEstablishedByItsEventOnly) {
  CmState s = CmState::responder();
  EXPECT_EQ(s.setup_state(), EINPROGRESS);
  EXPECT_FALSE(s.awaiting_reply());  // a responder has no peer to wait for
  EXPECT_EQ(s.on_event(CmEvent::established, 0), CmAction::none);
  EXPECT_EQ(s.setup_state(), 0);
}

TEST(CmState, NoDeviceForTheAddressIsEaddrnotavailOrEnodev) {
  CmState a = CmState::initiator();
  EXPECT_EQ(a.on_event(CmEvent::addr_error, -EADDRNOTAVAIL), CmAction::release);
  EXPECT_EQ(a.setup_state(), EADDRNOTAVAIL);
  CmState b = CmState::initiator();
  b.on_event(CmEvent::addr_error, -ENODEV);
  EXPECT_EQ(b.setup_state(), ENODEV);
  CmState c = CmState::initiator();
  c.on_event(CmEvent::addr_error, -ETIMEDOUT);  // no ARP answer: as kernel TCP says it
  EXPECT_EQ(c.setup_state(), EHOSTUNREACH);
  CmState d = CmState::initiator();
  d.on_event(CmEvent::addr_error, -EINVAL);  // anything else: the address is not usable
  EXPECT_EQ(d.setup_state(), EADDRNOTAVAIL);
}

TEST(CmState, RefusalsAndSilenceMapToTheErrnosOfTcp) {
  CmState rejected = CmState::initiator();
  rejected.on_event(CmEvent::addr_resolved, 0);
  rejected.on_event(CmEvent::route_resolved, 0);
  rejected.on_event(CmEvent::rejected, 28);  // a reject reason, not an errno
  EXPECT_EQ(rejected.setup_state(), ECONNREFUSED);

  CmState refused = CmState::initiator();
  refused.on_event(CmEvent::addr_resolved, 0);
  refused.on_event(CmEvent::route_resolved, 0);
  refused.on_event(CmEvent::unreachable, -ECONNREFUSED);  // iWARP: TCP's RST
  EXPECT_EQ(refused.setup_state(), ECONNREFUSED);

  CmState silent = CmState::initiator();
  silent.on_event(CmEvent::addr_resolved, 0);
  silent.on_event(CmEvent::route_resolved, 0);
  silent.on_event(CmEvent::unreachable, 0);
  EXPECT_EQ(silent.setup_state(), ETIMEDOUT);

  CmState mpa = CmState::responder();
  mpa.on_event(CmEvent::connect_error, -ECONNRESET);
  EXPECT_EQ(mpa.setup_state(), ECONNRESET);
}

TEST(CmState, DisconnectBeforeEstablishedIsAResetSetUp) {
  CmState s = CmState::responder();
  EXPECT_EQ(s.on_event(CmEvent::disconnected, 0), CmAction::release);
  EXPECT_EQ(s.setup_state(), ECONNRESET);
  EXPECT_FALSE(s.ended());  // never was a connection
}

TEST(CmState, AnEventOutOfOrderFailsSetUp) {
  CmState s = CmState::initiator();
  EXPECT_EQ(s.on_event(CmEvent::established, 0), CmAction::release);  // before any route
  EXPECT_EQ(s.setup_state(), EPROTO);
  CmState r = CmState::initiator();
  r.on_event(CmEvent::addr_resolved, 0);
  r.on_event(CmEvent::addr_resolved, 0);  // twice
  EXPECT_EQ(r.setup_state(), EPROTO);
}

TEST(CmState, OrderlyDisconnectEndsTheTransport) {
  CmState s = established_initiator();
  EXPECT_EQ(s.on_event(CmEvent::disconnected, 0), CmAction::release);
  EXPECT_TRUE(s.ended());
  EXPECT_FALSE(s.broken());
  EXPECT_EQ(s.setup_state(), 0);  // set-up succeeded; the end is the transport's
  EXPECT_EQ(s.on_event(CmEvent::timewait_exit, 0), CmAction::none);
  EXPECT_TRUE(s.ended());
}

TEST(CmState, DeviceLossAfterEstablishedBreaksTheTransport) {
  CmState s = established_initiator();
  EXPECT_EQ(s.on_event(CmEvent::device_removal, 0), CmAction::release);
  EXPECT_TRUE(s.broken());
  EXPECT_FALSE(s.ended());
  EXPECT_EQ(s.setup_state(), 0);
}

TEST(CmState, OurOwnCloseRacingAnErrorIsNoFailure) {
  CmState s = established_initiator();
  s.closing();
  EXPECT_EQ(s.on_event(CmEvent::connect_error, -ECONNRESET), CmAction::release);
  EXPECT_TRUE(s.ended());
  EXPECT_FALSE(s.broken());
}

TEST(CmState, LateEventsChangeNothingOnceOver) {
  CmState s = CmState::initiator();
  s.on_event(CmEvent::addr_error, -ENODEV);
  EXPECT_EQ(s.on_event(CmEvent::established, 0), CmAction::none);
  EXPECT_EQ(s.setup_state(), ENODEV);
  s.fail(EIO);  // a later local failure keeps the first reason
  EXPECT_EQ(s.setup_state(), ENODEV);
}

TEST(CmState, ALocalStepFailingFailsSetUpWithItsErrno) {
  CmState s = CmState::initiator();
  s.on_event(CmEvent::addr_resolved, 0);
  s.fail(ENOMEM);  // rdma_resolve_route or the queue pair
  EXPECT_EQ(s.setup_state(), ENOMEM);
  s.fail(0);
  EXPECT_EQ(s.setup_state(), ENOMEM);
  CmState z = CmState::responder();
  z.fail(0);  // no errno given: still a failure
  EXPECT_EQ(z.setup_state(), EPROTO);
}

}  // namespace
}  // namespace esock::rdmacm
