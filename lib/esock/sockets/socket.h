// One DDPMODE socket as the application sees it, shared by every descriptor number that
// refers to it (dup). The connection itself (stream protocol engine over a provider) is
// attached once connect/accept completes; see docs/sockets.md for the state machine.
#pragma once

#include <mutex>

namespace esock::sockets {

class Socket {
 public:
  // armed: DDPMODE set, not yet connected or listening (the app's fd is the TCP socket).
  enum class State { armed, listening, connected, closed };

  State state() const { return state_; }
  bool msgmode() const { return msgmode_; }
  void set_msgmode(bool on) { msgmode_ = on; }

  std::mutex mu;

 private:
  State state_ = State::armed;
  bool msgmode_ = false;
};

}  // namespace esock::sockets
