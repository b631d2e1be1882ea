// The per-process DDPMODE runtime: one progress thread owns the progress of every DDPMODE
// connection (reads the transports, returns credits, answers RDMA Reads, keeps readiness
// signals current) so it continues while the application computes. Engines are
// single-threaded: every access to a Conn happens under `mu`; application threads call the
// engine directly under the lock and wait on `cv`, which the progress thread notifies after
// each round. The lock is never held across a blocking system call.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "esock/sockets/socket.h"

namespace esock::sockets {

class Runtime {
 public:
  static Runtime& get();

  std::mutex mu;
  std::condition_variable cv;

  // All under mu:
  void add(std::shared_ptr<Socket> s);           // a newly connected socket
  void after_op(Socket& s);                      // flush, signals, wake the thread if needed
  void wait(std::unique_lock<std::mutex>& lk);   // block an application call until a round
  void close(const std::shared_ptr<Socket>& s);  // the last descriptor went away
  int waiters() const { return waiters_; }       // threads blocked in wait() (tests)
  void wake();                                   // the progress thread re-polls

 private:
  Runtime();
  void loop();
  void service(Socket& s);
  void service_raw(Socket& s);
  static void raw_round(Conn& c);  // completions, failure, pending FIN
  void update_signals(Socket& s);
  void start_thread();
  static void at_fork_prepare();
  static void at_fork_parent();
  static void at_fork_child();

  std::vector<std::shared_ptr<Socket>> socks_;
  int wake_fd_ = -1;
  bool thread_started_ = false;
  int waiters_ = 0;
};

}  // namespace esock::sockets
