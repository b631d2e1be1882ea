// A connection of esock's own TCP stack carried on as plain TCP through a local descriptor
// (docs/sockets.md, "Peers without esock"): when the peer of a DDPMODE socket on the dpdk
// provider turns out not to speak esock, the application's number becomes one end of an
// AF_UNIX stream pair, and this relay joins the other end to the stack's connection:
// the peer's octets, then its FIN (as shutdown(SHUT_WR) of the pair), go to the application;
// the application's octets, then its shutdown or close (as FIN), go to the peer. Flow control
// carries through: nothing is read from the pair beyond what TCP's send buffer takes, and
// the receive window closes while the application does not read.
//
// A connection still being opened (an active open, SYN-SENT) is relayed once it is up; what
// the application writes meanwhile waits in the pair. A reset or a failed open closes the
// pair (the application reads end of stream; a write gets EPIPE).
//
// Owned by the stack's thread (ARCHITECTURE.md): pump() after each Stack::poll(); the
// descriptor is only used with non-blocking calls.
#pragma once

#include <poll.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tcp/stack/stack.h"

namespace esock::utcp {

class PlainRelay {
 public:
  // Takes c and fd (this end of the pair, non-blocking, close-on-exec).
  PlainRelay(tcp::Stack& stack, tcp::Connection* c, int fd);
  // Closes fd and releases the connection to the stack: an orderly close (FIN after what is
  // queued), or a reset when the application left with the peer's octets unread.
  ~PlainRelay();
  PlainRelay(const PlainRelay&) = delete;
  PlainRelay& operator=(const PlainRelay&) = delete;

  int fd() const { return fd_; }
  // What fd is waited on for besides a hang-up (0: only the stack can move the relay on).
  short poll_events() const;
  // Moves what it can both ways without blocking; true when anything moved.
  bool pump();
  // Both directions ended (or the connection failed): the owner may destroy the relay.
  bool done() const { return failed_ || reset_ || (app_eof_ && (fin_passed_ || app_gone_)); }
  // Everything the relay passed to TCP, FIN included, was acknowledged (or the connection
  // is gone): releasing it now loses nothing even if the stack stops right after.
  bool settled() const;
  // Process exit: the application's end counts as closed once what is in the pair went on
  // (as the kernel closes a process's sockets at exit).
  void finish() {
    exiting_ = true;
    pump();
  }
  // Process exit: the stack goes away under the relay, which must not touch it again.
  void abandon() { conn_ = nullptr; }

 private:
  bool to_app();
  bool to_peer();
  void check_hang_up();

  static constexpr std::size_t chunk = 64 * 1024;
  tcp::Stack& stack_;
  tcp::Connection* conn_;
  int fd_;
  std::vector<std::uint8_t> buf_;  // one read from the pair, taken by TCP at once
  bool app_blocked_ = false;       // the pair's buffer towards the application is full
  bool app_eof_ = false;           // the application shut its direction: FIN queued
  bool app_gone_ = false;          // it closed its end: nothing more goes to it
  bool fin_passed_ = false;        // the peer's FIN went on as shutdown(SHUT_WR)
  bool failed_ = false;            // reset, refused or timed out
  bool reset_ = false;             // the application closed with the peer's octets unread
  bool exiting_ = false;           // finish(): an empty pair is the application's close
};

}  // namespace esock::utcp
