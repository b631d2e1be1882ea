// Run to completion (runtime.h, "Who moves the stack"): how an application call waits for a
// round, either polling the own stack itself or on the condition variable the progress
// thread notifies.
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "esock/process/libc.h"
#include "esock/runtime/runtime.h"

namespace esock::sockets {

namespace {
using namespace std::chrono_literals;
// An application thread past its spin budget sleeps between rounds: briefly at first,
// longer once idle for a while (the progress thread's steps; runtime.cc says why).
constexpr auto short_sleep = 50us;
constexpr auto long_sleep = 1ms;
constexpr auto short_sleeping = 500ms;
// A waiter that is not the poller re-checks at least this often whether one is left.
constexpr auto cv_recheck = 1ms;
// service_all: how often every connection is serviced, activity or not.
constexpr Duration full_service_every = 1ms;
}  // namespace

bool parse_progress_mode(const std::string& text, ProgressMode* mode) {
  if (text == "auto") {
    *mode = ProgressMode::automatic;
  } else if (text == "inline") {
    *mode = ProgressMode::inline_only;
  } else if (text == "thread") {
    *mode = ProgressMode::thread;
  } else {
    return false;
  }
  return true;
}

void DdpRuntime::set_progress(ProgressMode mode, std::chrono::microseconds spin,
                              std::chrono::microseconds handoff) {
  mode_ = mode;
  spin_ = spin;
  handoff_ = handoff;
}

void DdpRuntime::wait(std::unique_lock<RuntimeMutex>& lk) {
  (void)wait_for_round(lk, nullptr);
}

bool DdpRuntime::wait_until(std::unique_lock<RuntimeMutex>& lk, CallClock::time_point deadline) {
  return wait_for_round(lk, &deadline);
}

bool DdpRuntime::wait_for_round(std::unique_lock<RuntimeMutex>& lk,
                                const CallClock::time_point* deadline) {
  ++blocked_;
  // One poller at a time: the others wait for its eventful rounds (or take over).
  const bool in_time = stack_ != nullptr && mode_ != ProgressMode::thread && !poller_
                           ? poll_inline(lk, deadline)
                           : wait_on_cv(lk, deadline);
  --blocked_;
  return in_time;
}

namespace {
// Bumped in a fork child (DdpRuntime::forget_thread_wake_fds): the forking thread's eventfd
// is its parent's too, and must not be waited on there. (No system call per wait: getpid(2)
// is one.)
std::atomic<unsigned> fork_generation{0};

// The calling thread's eventfd for wait_interruptible: created on first use, high, blocking;
// made again after fork or when the program closed it.
struct ThreadWakeFd {
  int fd = -1;
  unsigned generation = 0;
  ~ThreadWakeFd() {
    if (fd >= 0 && generation == fork_generation.load()) ESOCK_LIBC(close)(fd);
  }
};
thread_local ThreadWakeFd thread_wake;

int thread_wake_fd() {
  const unsigned g = fork_generation.load(std::memory_order_relaxed);
  if (thread_wake.fd >= 0 && thread_wake.generation == g) return thread_wake.fd;
  const int e = ::eventfd(0, EFD_CLOEXEC);
  thread_wake.fd = e < 0 ? -1 : move_high(e);
  if (e >= 0) ESOCK_LIBC(close)(e);
  thread_wake.generation = g;
  return thread_wake.fd;
}
}  // namespace

void DdpRuntime::forget_thread_wake_fds() {
  fork_generation.fetch_add(1);
}

bool every_handler_restarts() {
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction sa {};
    switch (sig) {
      case SIGKILL:
      case SIGSTOP:
      case SIGSEGV:
      case SIGBUS:
      case SIGILL:
      case SIGFPE:
      case SIGTRAP:
        continue;
      default:
        break;
    }
    if (::sigaction(sig, nullptr, &sa) != 0) continue;
    const bool handler = (sa.sa_flags & SA_SIGINFO) != 0
                             ? sa.sa_sigaction != nullptr
                             : sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN;
    if (handler && (sa.sa_flags & SA_RESTART) == 0) return false;
  }
  return true;
}

int DdpRuntime::wait_interruptible(std::unique_lock<RuntimeMutex>& lk, int also_fd) {
  const int efd = stack_ == nullptr ? thread_wake_fd() : -1;
  if (efd < 0) {
    wait(lk);
    return 0;
  }
  ++blocked_;
  ++waiters_;
  sleepers_.push_back(efd);
  lk.unlock();
  std::uint64_t n;
  ssize_t r;
  if (also_fd < 0) {
    r = ESOCK_LIBC(read)(efd, &n, sizeof n);
  } else {
    // poll(2) is never restarted: restarted here when every handler says SA_RESTART.
    pollfd p[2] = {{efd, POLLIN, 0}, {also_fd, POLLIN, 0}};
    do {
      r = ESOCK_LIBC(poll)(p, 2, -1);
    } while (r < 0 && errno == EINTR && every_handler_restarts());
    if (r > 0 && (p[0].revents & POLLIN)) r = ESOCK_LIBC(read)(efd, &n, sizeof n);
  }
  const int err = r < 0 ? errno : 0;
  lk.lock();
  std::erase(sleepers_, efd);
  --waiters_;
  --blocked_;
  if (err == EINTR) return EINTR;
  if (err != 0) thread_wake.fd = -1;  // closed under us (a program closing every descriptor)
  return 0;
}

void DdpRuntime::notify() {
  cv.notify_all();
  const std::uint64_t one = 1;
  for (int fd : sleepers_) {
    [[maybe_unused]] const ssize_t n = ESOCK_LIBC(write)(fd, &one, sizeof one);
  }
}

bool DdpRuntime::wait_on_cv(std::unique_lock<RuntimeMutex>& lk,
                            const CallClock::time_point* deadline) {
  const bool inline_polling = stack_ != nullptr && mode_ != ProgressMode::thread;
  if (stack_ != nullptr && !inline_polling && empty_rounds_ > spin_rounds)
    wake();  // a reply is due
  ++waiters_;
  // With an application thread polling, wake up now and then: it may have left, and then
  // this thread polls in its place.
  CallClock::time_point until = deadline ? *deadline : CallClock::time_point::max();
  if (inline_polling) until = std::min(until, CallClock::now() + cv_recheck);
  if (until == CallClock::time_point::max())
    cv.wait(lk);
  else
    (void)cv.wait_until(lk, until);
  --waiters_;
  return deadline == nullptr || CallClock::now() < *deadline;
}

bool DdpRuntime::app_polling(CallClock::time_point now) {
  if (mode_ == ProgressMode::thread) return false;
  // Counting the application's rounds rather than having it read the clock: a round since
  // the progress thread's last look means it is still talking; none for a whole hand-off
  // period means it is not.
  if (poller_ || inline_rounds_ != rounds_seen_) {
    rounds_seen_ = inline_rounds_;
    app_seen_ = now;
    return true;
  }
  return now - app_seen_ < handoff_;
}

void DdpRuntime::sleep_on_wake_fd(std::chrono::nanoseconds d) {
  pollfd p{wake_fd_, POLLIN, 0};
  const timespec ts{static_cast<time_t>(d.count() / 1'000'000'000),
                    static_cast<long>(d.count() % 1'000'000'000)};
  if (::ppoll(&p, 1, &ts, nullptr) > 0) {
    std::uint64_t n;
    [[maybe_unused]] const ssize_t r = ESOCK_LIBC(read)(wake_fd_, &n, sizeof n);
  }
}

// An application thread's round: no thread hop between the device and the caller. While
// rounds keep doing something (or did within the spin budget) it spins; past the budget it
// sleeps briefly between rounds, without the lock, so an idle wait costs little CPU.
bool DdpRuntime::poll_inline(std::unique_lock<RuntimeMutex>& lk,
                             const CallClock::time_point* deadline) {
  poller_ = true;
  struct ResetPoller {  // whatever round() does, the next waiter may poll
    bool& p;
    ~ResetPoller() { p = false; }
  } reset{poller_};
  const bool did = round();
  ++inline_rounds_;
  bool in_time = true;
  if (did) {
    // No clock read on a busy round (it showed at 9% of a streaming profile): the idle
    // stretch, if one comes, starts at the next empty round.
    idle_since_known_ = false;
    if (deadline) in_time = CallClock::now() < *deadline;
  } else {
    const CallClock::time_point now = CallClock::now();
    if (!idle_since_known_) {
      idle_since_ = now;
      idle_since_known_ = true;
    }
    if (deadline && now >= *deadline) {
      in_time = false;
    } else if (now - idle_since_ >= spin_) {
      std::chrono::nanoseconds nap = now - idle_since_ < spin_ + short_sleeping
                                         ? std::chrono::nanoseconds(short_sleep)
                                         : std::chrono::nanoseconds(long_sleep);
      if (deadline) nap = std::min(nap, std::chrono::nanoseconds(*deadline - now));
      ++inline_sleeps_;
      lk.unlock();
      sleep_on_wake_fd(nap);
      lk.lock();
    } else if (mu.contended()) {
      // Threads waiting for the lock (another socket's call, the progress thread) go first.
      lk.unlock();
      ::sched_yield();
      lk.lock();
    }
  }
  return in_time;
}

// A connection is serviced in a round when its transport did something, when its own
// work is due (a close under way, a source waiting out its grace, guarded pages, a fork
// relay, RAWMODE), and on a full pass every full_service_every (per 10 sockets). Servicing every
// idle connection every round made each round O(connections): 4000 held connections spent most of a
// round on them, the device's receive ring overflowed behind the slow rounds and the peer's closes
// took seconds. The full pass bounds what a missed cause could delay.
bool DdpRuntime::own_work_due(const Conn& c) {
  return c.raw || c.close_ladder.closing() || c.prefetch_at || !c.async_writes.empty() ||
         c.async_read || c.relay;
}

bool DdpRuntime::needs_service(Conn& c) {
  const bool active = c.pc->take_activity();  // (read every round: it clears)
  return active || own_work_due(c);
}

bool DdpRuntime::looked_at_every_round(const Socket& s) {
  if (s.lis || s.connecting) return true;
  if (!s.conn || !s.conn->pc || forked(s)) return false;  // a fork copy waits for settle_forks
  return !s.conn->pc->reports_activity() || own_work_due(*s.conn);
}

void DdpRuntime::mark_due(Socket& s) {
  if (s.due || !s.in_rounds) return;
  s.due = true;
  due_.push_back(&s);
}

void DdpRuntime::activity_thunk(void* hook) {
  const auto* h = static_cast<const Conn::ActivityHook*>(hook);
  h->rt->mark_due(*h->s);
}

void DdpRuntime::hook_activity(Socket& s) {
  if (!s.conn || !s.conn->pc || s.conn->hooked == s.conn->pc.get()) return;
  Conn& c = *s.conn;
  c.activity_hook = {this, &s};
  c.pc->set_activity_hook(&DdpRuntime::activity_thunk, &c.activity_hook);
  c.hooked = c.pc.get();
  mark_due(s);  // what it did before the hook was there (its activity is reported once)
}

void DdpRuntime::enter_rounds(std::shared_ptr<Socket> s) {
  s->in_rounds = true;
  hook_activity(*s);
  mark_due(*s);  // (a listener or set-up has no transport to hook)
  socks_.push_back(std::move(s));
}

bool DdpRuntime::service_socket(Socket& s, bool full) {
  if (s.connecting && s.connecting->step(s, clock_.now())) {
    s.connecting.reset();
    notify();  // a connect() waiting for it returns
  }
  if (s.lis) service_listener(s);
  hook_activity(s);  // (a connect that just ended)
  if (s.conn && s.conn->pc && !forked(s) && (needs_service(*s.conn) || full))
    service(s);  // fork copies rest (fork.cc)
  return s.lis || s.connecting || (s.conn && s.conn->pc);
}

void DdpRuntime::service_all() {
  const Instant start = clock_.now();
  // A provider that polls kernel descriptors (ksock) has the progress thread's poll(2) look
  // at every connection anyway: every round is a full pass there.
  const bool full = stack_ == nullptr || start >= next_full_service_;
  // Per 10 sockets one period, at most a second: a full pass services (and so progresses,
  // through the provider's flush) every connection, which the dpdk provider's rounds no
  // longer do for idle ones; what a missed cause waits grows with the sockets held, and
  // the passes cost the same per second whatever that number (per 100 sockets they were
  // most of an idle server's time at 10,000, and found nothing: dpdk.progress_unwoken 0).
  if (full) next_full_service_ = start + full_pass_period(full_service_every, socks_.size());
  bool left = false;  // a socket lost its transport
  if (full) {
    for (Socket* s : due_) s->due = false;
    due_.clear();
    for (const auto& s : socks_) {
      left |= !service_socket(*s, true);
      if (stack_ != nullptr && looked_at_every_round(*s)) mark_due(*s);  // (ksock: all, always)
    }
  } else {
    // Between full passes: only the sockets named since the last round (their transport
    // reported activity, or their own work started), each again next round while that
    // work lasts. What a socket's service marks (itself included) goes to the next round.
    due_now_.swap(due_);
    for (Socket* s : due_now_) {
      s->due = false;
      left |= !service_socket(*s, false);
      if (looked_at_every_round(*s)) mark_due(*s);
    }
    due_now_.clear();
  }
  for (auto& s : adopted_) {
    if (s->conn) update_signals(*s);
    enter_rounds(std::move(s));
  }
  adopted_.clear();
  // Sockets whose connection is gone (closed and drained, or a fork child's) leave, off the
  // due list first; looked for when one left in this round, and on full passes (a socket
  // may lose its transport outside a round).
  if (left || full) {
    std::erase_if(socks_, [this](const std::shared_ptr<Socket>& s) {
      const bool gone = !s->lis && !s->connecting && (!s->conn || !s->conn->pc);
      if (gone && s->due) {
        std::erase(due_, s.get());
        s->due = false;
      }
      if (gone) s->in_rounds = false;
      return gone;
    });
  }
  if (process_ && !stats_off_) {
    const Instant now = clock_.now();
    // Due, or the last sockets just left (a snapshot now, or it would show them for good).
    if (now >= stats_due_ || (socks_.empty() && stats_shown_ != 0)) {
      stats_due_ = now + stats_interval(socks_.size());
      publish_stats();
    }
  }
}

bool DdpRuntime::round() {
  const bool did = stack_ != nullptr && stack_->poll_once();
  service_all();
  if (did && waiters_ > 0) notify();
  return did;
}

}  // namespace esock::sockets
