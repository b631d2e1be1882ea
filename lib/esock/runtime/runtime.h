// The per-process DDPMODE runtime (docs/sockets.md, "Progress and threads"). Engines are
// single-threaded: every access to a Conn happens under `mu`; application threads call the
// engine directly under the lock. The lock is never held across a blocking system call.
//
// Who moves the stack (ProgressMode, ESOCK_PROGRESS):
// * auto (the default) with an own-stack provider (dpdk): run to completion. An
//   application thread that must wait inside esock polls the stack itself (round()): the
//   frame that answers it is received, placed and read in that thread, with no hand-off.
//   It spins while anything happened within the spin budget (ESOCK_SPIN_US), then backs off
//   (short, later long sleeps ended early by the eventfd). The progress thread keeps the
//   stack alive (timers, ACKs, retransmissions, credits, prefetch, the close ladder) only
//   while no application thread has polled for a moment; otherwise it sleeps.
// * inline: as auto, with no progress thread at all: the stack moves only inside esock
//   calls (programs that call esock all the time; connections stall while they do not).
// * thread: every round runs on the progress thread; application threads wait on `cv`,
//   which it notifies after each eventful round (the model before run to completion).
// With the kernel-socket provider (ksock) the progress thread waits on the connections'
// descriptors and does every round, whatever the mode.
//
// Time: the runtime's own decisions (the close ladder, the exit drain) read the Clock it
// was made with (base/time.h: the steady clock in a process, a ManualClock in tests);
// only the lengths of real waits (poll, condition variable, the spin budget) are real time.
#pragma once

#include <poll.h>
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/function_ref.h"
#include "base/time.h"
#include "esock/runtime/socket.h"
#include "esock/runtime/stats_region.h"

namespace esock::sockets {

// The progress thread's eventfd for page_guard's wait hook (runtime.cc): a thread that
// waits for a guarded page, maybe in the fault handler, wakes it with one write(2). -1 until
// the first asynchronous write.
inline std::atomic<int> guard_wake_fd{-1};

// Set in a fork child once it holds a copy of an own stack's listener that accepts through
// its parent (fork.cc): the readiness waits then look for such copies among their
// descriptors (ddp_wait_readable); elsewhere they pay one relaxed load.
inline std::atomic<bool> fork_queue_listeners{false};

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
  bool contended() const { return wanted_.load(std::memory_order_relaxed) > 0; }

 private:
  std::mutex m_;
  std::atomic<int> wanted_{0};
};

enum class ProgressMode { automatic, inline_only, thread };

// ESOCK_PROGRESS's value (auto, inline, thread); false for anything else.
bool parse_progress_mode(const std::string& text, ProgressMode* mode);

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
  // How application threads and the progress thread share the polling (the process's
  // runtime takes ESOCK_PROGRESS and ESOCK_SPIN_US); set before the first connection.
  // auto: the progress thread rests while an application thread polled within `handoff`:
  // long enough to span the gap between two calls of a program that talks (a reply
  // handled, the next request written), short enough that ACKs and timers resume quickly
  // when it computes.
  void set_progress(ProgressMode mode, std::chrono::microseconds spin,
                    std::chrono::microseconds handoff = std::chrono::milliseconds(2));
  ~DdpRuntime();
  DdpRuntime(const DdpRuntime&) = delete;
  DdpRuntime& operator=(const DdpRuntime&) = delete;

  RuntimeMutex mu;
  std::condition_variable_any cv;
  Instant now() const { return clock_.now(); }  // the runtime's clock

  // A non-blocking read found nothing. The readiness socket has a name anyone in the
  // network namespace can send to (readiness_socket.h): a stranger's datagram would keep
  // it polling readable with nothing to read, and a level-triggered poller spinning; the
  // second such read in a row takes whatever is queued there off (one read costs nothing:
  // an event loop ends each batch with it).
  void empty_read(Socket& s);
  // All under mu:
  void add(std::shared_ptr<Socket> s);  // a newly connected (or listening) socket
  void after_op(Socket& s);             // flush, signals, wake the thread if needed
  // The application moved data (wrote, or read something): a reply or more data is likely
  // soon, so a wait spins again for the whole budget. (Not in after_op: a reader that finds
  // nothing calls it on every pass, and would then never back off.)
  void note_activity() { idle_since_known_ = false; }
  // The stack moves while no application thread is inside esock (every mode but inline):
  // what an asynchronous write needs, since its writer may next wait in a page fault.
  bool progresses_unattended() const { return mode_ != ProgressMode::inline_only; }
  // Ends the asynchronous writes (ESOCK_ZCOPY_ASYNC) the peer pulled: their pages are
  // writable again. Ones that can no longer be pulled (the connection failed) are given up
  // and released once nothing reads them. From service(), under the lock.
  static void reap_async_writes(Conn& c);
  static void copy_on_write(Conn& c);  // reap_async_writes' copies (ESOCK_ZCOPY_ASYNC_COW)
  // Lands an asynchronous read whose pull finished: its pages replace the application's,
  // which are accessible again. A pull that failed (the connection did) leaves them as
  // they were, and says so on stderr: the read returned octets that never came. From
  // service(), under the lock.
  static void reap_async_read(Conn& c);
  // Waits (round by round, at most ESOCK_TIMEOUT_MS) until the socket has no asynchronous
  // read landing: close, fork and a read that needs the stream's pull wait for it.
  void finish_async_read(std::unique_lock<RuntimeMutex>& lk, Socket& s);
  // At the first asynchronous write: at exit the process waits (up to ESOCK_TIMEOUT_MS)
  // until its peers pulled what it wrote asynchronously, as the kernel would still send
  // what its send buffers held; the data is in the application's memory, which exit ends.
  void drain_async_writes_at_exit();
  // Lets an application call that cannot complete yet wait for a round: it polls the own
  // stack itself (auto, inline) or waits on cv for the progress thread (thread, ksock).
  // Returns after one round or a bounded sleep; the caller re-checks its condition.
  void wait(std::unique_lock<RuntimeMutex>& lk);
  // As wait, for a call a signal may interrupt in the kernel (accept, a read or a write
  // waiting for the peer): EINTR when a handler installed without SA_RESTART ran meanwhile,
  // else 0. Kernel-socket providers wait in read(2) of a per-thread eventfd, which the
  // kernel restarts or interrupts by the handler's SA_RESTART exactly as it would the call
  // the application made (signal(7)); an own stack's wait is not interrupted (docs/sockets.md).
  // also_fd: returns as well once it polls readable (a queue other processes fill).
  int wait_interruptible(std::unique_lock<RuntimeMutex>& lk, int also_fd = -1);
  // A fork child's dormant copy of a shared listener starts taking connections (its
  // application called accept), with a progress thread of its own if it has none yet.
  void activate(StackListen& l) {
    l.dormant = false;
    start_thread();
    wake();
  }
  // An own stack's plain relay exists (a peer without esock): the progress thread runs
  // even with ESOCK_PROGRESS=inline, since the application then calls the kernel, not esock,
  // on that connection.
  void keep_relays_moving() {
    start_thread(true);
    wake();
  }
  // Wakes every waiter: cv, and each thread asleep in wait_interruptible.
  void notify();
  // As wait, but false once the deadline has passed.
  bool wait_until(std::unique_lock<RuntimeMutex>& lk, CallClock::time_point deadline);
  // One round of the own stack and of every socket (what the progress thread runs): true
  // if anything happened. Application threads run it in wait().
  bool round();
  // poll/select/epoll_wait on an own stack (runtime/ready_wait.cc): `kernel(t)` is the
  // libc call with timeout t (ms, -1 forever). While the spin budget lasts it is called with
  // 0 between rounds of the stack run here; then once with what is left of timeout_ms. A
  // signal the caller did not block ends the spin with EINTR after its handler ran.
  // wait_mask: the signal mask ppoll/pselect/epoll_pwait apply during their wait (kernel
  // applies it on every call); null for the calls without one.
  int wait_ready(function_ref<int(int timeout_ms)> kernel, int timeout_ms,
                 const sigset_t* wait_mask = nullptr);
  // From use_stack(): the process's runtime with an own stack in auto/inline mode makes
  // readiness_spins() true.
  void enable_readiness_spin();
  // Starts an own-stack provider (once) and has the progress thread poll it: 0 or an
  // errno with *why (EOPNOTSUPP in a fork child: the stack is the parent's).
  int use_stack(Provider& p, std::string* why);
  void close(const std::shared_ptr<Socket>& s);  // the last descriptor went away
  // The next round looks at this socket (own work started outside a round: an asynchronous
  // write or read, a fork relay); under the lock.
  void mark_due(Socket& s);
  // Gives the connection up at once (the transport is reset when it still holds octets
  // sent by reference): the socket fails with err, blocked calls on it return.
  void reset(Socket& s, int err);
  // Waits round by round while held() (called under the lock) is true, at most `limit`;
  // past it the connection is given up: reset(s, ETIMEDOUT). For memory the application
  // gets back only once nothing reads it (issue 20, item 1).
  template <class F>
  void wait_or_reset(std::unique_lock<RuntimeMutex>& lk, Socket& s, CallClock::duration limit,
                     F held) {
    const CallClock::time_point deadline = CallClock::now() + limit;
    while (held()) {
      if (!wait_until(lk, deadline)) {
        reset(s, ETIMEDOUT);
        return;
      }
    }
  }
  // fork()s this process has made (at_fork_parent counts them): until the first, no other
  // process holds a descriptor of ours, so nothing needs asking (listen_relay.cc).
  static unsigned forks_made() { return forks_made_.load(std::memory_order_relaxed); }
  int waiters() const { return blocked_; }  // threads blocked in wait(), polling or not (tests)
  std::uint64_t inline_rounds() const { return inline_rounds_; }  // rounds run by wait() (tests)
  std::uint64_t inline_sleeps() const { return inline_sleeps_; }  // ... that slept (tests)
  void wake();                                                    // the progress thread re-polls
  // One progress round of a connected socket, as the progress thread runs it after
  // polling: engine progress, readiness signals, the close ladder.
  void service(Socket& s);
  // Pulls a peer's advertised source into a bounce buffer when no reader waits for it
  // (docs/stream-protocol.md 6.1): service() does it on every round, and a writer about to
  // wait does it first, since that writer may be the reader its peer waits for.
  void prefetch(Socket& s);
  // An own-stack listener's round: MPA set-up of new connections off the accept path
  // (StackListen), and its number readable while a negotiated connection waits.
  void service_listener(Socket& s);
  // After accept took a connection: the number is readable only while another waits (a
  // select() right after the accept must not see the one just taken, or the next accept
  // blocks: a select-and-accept loop that hands connections to threads hung so).
  void listener_taken(StackListen& l);
  // The descriptors of a listener whose set-up needs the kernel (ksock): its listening
  // socket while it has room, and its negotiating connections; polled(pc) per pollfd added.
  void poll_listener(Socket& s, std::vector<pollfd>* pfds,
                     function_ref<void(ProviderConn*)> polled);
  void queue_ready(StackListen& l);  // a shared (ksock) listener's connections to its queue
  // fork (runtime/fork_handover.h, runtime/fork.cc): makes a connection fork copied this
  // process's to use where it can: 0; ENOTCONN when another process of the family has it;
  // EAGAIN while the parent decides (a caller that may block waits instead).
  int take_over(Socket& s);
  int take_over(std::unique_lock<RuntimeMutex>& lk, Socket& s, bool may_block);

 private:
  void loop();
  bool wait_for_round(std::unique_lock<RuntimeMutex>& lk, const CallClock::time_point* deadline);
  bool wait_on_cv(std::unique_lock<RuntimeMutex>& lk, const CallClock::time_point* deadline);
  bool poll_inline(std::unique_lock<RuntimeMutex>& lk, const CallClock::time_point* deadline);
  // auto: an application thread polls now or did within the last hand-off period (the
  // progress thread, which asks once per period, rests).
  bool app_polling(CallClock::time_point now);
  void sleep_on_wake_fd(std::chrono::nanoseconds d);  // without the lock; the eventfd ends it
  void service_all();
  bool needs_service(Conn& c);  // service_all: activity or due work
  // A close under way, a source in its prefetch grace, guarded pages, a fork relay, RAWMODE.
  static bool own_work_due(const Conn& c);
  // One socket's part of a round; false once it holds no transport (it then leaves socks_).
  bool service_socket(Socket& s, bool full);
  // Sockets a round must look at besides those whose transport reported activity: set-up,
  // listeners, own work due (a close, a source's grace, guarded pages, a fork relay, RAWMODE)
  // and transports that report no activity (service_all).
  static bool looked_at_every_round(const Socket& s);
  static void activity_thunk(void* hook);  // ProviderConn::set_activity_hook's
  void hook_activity(Socket& s);
  // socks_ takes the socket: its transport hooked, due for the next round.
  void enter_rounds(std::shared_ptr<Socket> s);  // the socket's transport names it (idempotent)
  void service_raw(Socket& s);
  static void raw_round(Conn& c);  // completions, failure, pending FIN
  void update_signals(Socket& s);
  // The connection failed: its number polls hung up and writable (reset, or before a
  // release that leaves the application's number open).
  void hang_up_number(Socket& s);
  // close_ladder's step for this round; releases the connection when it says so.
  void close_step(Conn& c, TransportState transport, bool drained);
  void start_thread(bool even_inline = false);
  static void at_exit();
  // fork (runtime/fork.cc): the decisions due (the parent keeps what its grace period
  // passed over, a child claims what its parent gave up, unclaimed slots are taken back);
  // how long until the next one, if any is pending.
  std::optional<Duration> settle_forks();
  void let_go(Conn& c);    // closing a connection that is a fork copy
  void orphan(Socket& s);  // another process of the family has it
  static bool forked(const Socket& s) { return s.conn && s.conn->fork != Conn::Fork::none; }
  static void forget_thread_wake_fds();  // a fork child: the parent's are not ours (progress.cc)
  static void at_fork_prepare();
  static void at_fork_parent();
  static inline std::atomic<unsigned> forks_made_{0};
  static void at_fork_child();

  const Clock& clock_;
  std::vector<std::shared_ptr<Socket>> socks_;
  int wake_fd_ = -1;
  bool thread_started_ = false;
  bool process_ = false;  // the process's runtime (get()): fork and exit handlers, detached thread
  std::thread thread_;    // a test runtime's progress thread
  bool stop_ = false;     // ... which the destructor stops
  int waiters_ = 0;
  Provider* stack_ = nullptr;     // the own-stack provider the thread polls, if any
  bool stack_of_parent_ = false;  // a fork child: the stack must not be touched
  // The progress thread's empty rounds before its first sleep (runtime.cc's back-off).
  static constexpr unsigned spin_rounds = 1024;
  unsigned empty_rounds_ = 0;
  ProgressMode mode_ = ProgressMode::thread;
  std::chrono::microseconds spin_{0}, handoff_{2000};
  bool poller_ = false;                 // an application thread is in poll_inline
  int blocked_ = 0;                     // application threads in wait()
  std::uint64_t rounds_seen_ = 0;       // inline_rounds_ at the progress thread's last look
  CallClock::time_point app_seen_{};    // ... when it last saw them change
  CallClock::time_point idle_since_{};  // start of the current run of empty rounds ...
  bool idle_since_known_ = false;       // ... once one was seen (the spin budget)
  std::uint64_t inline_rounds_ = 0, inline_sleeps_ = 0;
  // Connections given up for a child at close, until one claims them or unclaimed_after.
  struct GivenUp {
    ForkHandover::Slot slot;
    Instant at;
  };
  std::vector<GivenUp> given_up_;
  bool forks_unsettled_ = false;  // a fork left connections deciding or inherited
  std::vector<int> sleepers_;     // eventfds of threads in wait_interruptible
  // Sockets a round made (a listener's fork relays): added once the round is over.
  std::vector<std::shared_ptr<Socket>> adopted_;
  // esock-stat's view of this process (stats_publish.cc): at most every stats_every.
  void publish_stats();
  static constexpr Duration stats_every = std::chrono::milliseconds(100);
  // ... and less often with many sockets: a snapshot walks them all, and the stack's
  // counters walk its connections (a fifth of an idle server's samples at 10,000 every
  // 100 ms): 100 ms per 1000 sockets, at most a second.
  static Duration stats_interval(std::size_t sockets) {
    return std::min<Duration>(std::chrono::seconds(1),
                              std::max<Duration>(stats_every, stats_every * (sockets / 1000)));
  }
  std::unique_ptr<StatsRegion> stats_;
  Instant stats_due_{};
  // service_all's next full pass (every connection serviced, activity or not).
  Instant next_full_service_{};
  // The sockets the next round looks at (Socket::due) between full passes, and this
  // round's (the two take turns, so a round allocates nothing). Raw pointers: a socket
  // leaves socks_ (which owns it) only in service_all, which takes it off these first.
  std::vector<Socket*> due_, due_now_;
  bool stats_off_ = false;         // could not be made
  std::uint32_t stats_shown_ = 0;  // sockets in the last snapshot
};

// A non-blocking eventfd among esock's private descriptors (process/libc.h, move_high).
int private_eventfd();

// Whether every installed signal handler asks for restarted calls (SA_RESTART). poll(2) is
// never restarted, so a wait in it that stands in for a call the kernel would restart
// (accept, signal(7)) restarts itself only then: which signal interrupted it is not known,
// so only when no handler would have made the call fail with EINTR. Fault signals (esock's
// memory probe installs SIGSEGV and SIGBUS handlers) come from the faulting instruction,
// never into a blocked call, and do not count.
bool every_handler_restarts();

// Whether the readiness shims (shim/wait.cc) should call DdpRuntime::wait_ready: an own
// stack runs in this process in auto or inline mode. One relaxed load.
bool readiness_spins();

}  // namespace esock::sockets
