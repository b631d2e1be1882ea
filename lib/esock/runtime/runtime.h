// The per-process DDPMODE runtime: one progress thread owns the progress of every DDPMODE
// connection (reads the transports, returns credits, answers RDMA Reads, keeps readiness
// signals current) so it continues while the application computes. Engines are
// single-threaded: every access to a Conn happens under `mu`; application threads call the
// engine directly under the lock and wait on `cv`, which the progress thread notifies after
// each round. The lock is never held across a blocking system call.
//
// With an own-stack provider (dpdk) the progress thread polls the stack instead of waiting
// on descriptors: it busy-polls while there is work and sleeps briefly (50 us, woken early
// by the eventfd) after a run of empty rounds, so an idle process costs little CPU.
//
// Time: the runtime's own decisions (the close ladder, the exit drain) read the Clock it
// was made with (base/time.h: the steady clock in a process, a ManualClock in tests);
// only the lengths of real waits (poll, condition variable) are real time.
#pragma once

#include <poll.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/time.h"
#include "esock/runtime/socket.h"

namespace esock::sockets {

// The runtime lock. A polling progress thread releases and retakes it every round; a plain
// mutex would let it retake the lock before an application thread woken by the release
// gets to run, so application threads announce themselves and the progress thread lets
// them go first (lock_after_waiters).
class RuntimeMutex {
 public:
  void lock() {
    wanted_.fetch_add(1, std::memory_order_relaxed);
    m_.lock();
    wanted_.fetch_sub(1, std::memory_order_relaxed);
  }
  bool try_lock() { return m_.try_lock(); }
  void unlock() { m_.unlock(); }
  void lock_after_waiters();

 private:
  std::mutex m_;
  std::atomic<int> wanted_{0};
};

class DdpRuntime {
 public:
  // Application-call timeouts (connect and accept settling) are real time: they bound how
  // long an application thread waits on cv.
  using CallClock = std::chrono::steady_clock;
  // The process's runtime (steady clock, fork handlers registered, never destroyed).
  static DdpRuntime& get();
  // A runtime of its own, for tests: no fork handlers, and no progress thread unless
  // add() or use_stack() starts one (a test drives service() itself instead).
  explicit DdpRuntime(const Clock& clock);
  ~DdpRuntime();
  DdpRuntime(const DdpRuntime&) = delete;
  DdpRuntime& operator=(const DdpRuntime&) = delete;

  RuntimeMutex mu;
  std::condition_variable_any cv;

  // All under mu:
  void add(std::shared_ptr<Socket> s);            // a newly connected (or listening) socket
  void after_op(Socket& s);                       // flush, signals, wake the thread if needed
  void wait(std::unique_lock<RuntimeMutex>& lk);  // block an application call until a round
  // As wait, but false once the deadline has passed.
  bool wait_until(std::unique_lock<RuntimeMutex>& lk, CallClock::time_point deadline);
  // Starts an own-stack provider (once) and has the progress thread poll it: 0 or an
  // errno with *why (EOPNOTSUPP in a fork child: the stack is the parent's).
  int use_stack(Provider& p, std::string* why);
  void close(const std::shared_ptr<Socket>& s);  // the last descriptor went away
  int waiters() const { return waiters_; }       // threads blocked in wait() (tests)
  void wake();                                   // the progress thread re-polls
  // One progress round of a connected socket, as the progress thread runs it after
  // polling: engine progress, readiness signals, the close ladder.
  void service(Socket& s);

 private:
  void loop();
  void service_listener(Socket& s);
  void service_raw(Socket& s);
  static void raw_round(Conn& c);  // completions, failure, pending FIN
  void update_signals(Socket& s);
  // close_ladder's step for this round; releases the connection when it says so.
  void close_step(Conn& c, TransportState transport, bool drained);
  void start_thread();
  static void at_exit();
  static void at_fork_prepare();
  static void at_fork_parent();
  static void at_fork_child();

  const Clock& clock_;
  std::vector<std::shared_ptr<Socket>> socks_;
  int wake_fd_ = -1;
  bool thread_started_ = false;
  int waiters_ = 0;
  Provider* stack_ = nullptr;     // the own-stack provider the thread polls, if any
  bool stack_of_parent_ = false;  // a fork child: the stack must not be touched
  unsigned empty_rounds_ = 0;
};

}  // namespace esock::sockets
