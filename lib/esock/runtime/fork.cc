// fork and DDPMODE connections (docs/sockets.md, "fork"; the ownership rules are in
// runtime/fork_handover.h). A forking server accepts, forks, and closes its copy; the child
// serves the connection. A process that forks to run something else (system(3), a
// background save) keeps its connections. Which of the two happens is learnt from what the
// parent does next, so the parent's connections rest from fork until then: the child's
// copy of their state is then exactly what the shared kernel socket continues.
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

#include "esock/process/libc.h"
#include "esock/process/page_guard.h"
#include "esock/runtime/fd_table.h"
#include "esock/runtime/relayed_names.h"
#include "esock/runtime/runtime.h"

namespace esock::sockets {

namespace {
using namespace std::chrono_literals;
// How long a parent's connections rest after fork if its application neither uses nor
// closes them: a forking server closes its copy within microseconds; a program that forked
// for another reason and waits in poll(2) on the connection sees it again after this.
constexpr Duration decision_time = 200ms;
// A connection given up at close that no child claimed (the child exec'd, or exited) frees
// its word after this; the kernel closed the socket when the last copy went.
constexpr Duration unclaimed_after = 10s;
// How often a child's progress thread asks whether its parent decided.
constexpr Duration claim_poll = 1ms;
// An own stack's connections a fork child gets through its parent: the newest ones
// (fork_relay.h); older ones are orphaned in the child, as before relays.
constexpr int max_relays_per_fork = 64;

// Drops this process's references to a connection's descriptors: the other copy, in
// another process, keeps the kernel socket open (and the number, its readiness, is shared).
void close_descriptors(Conn& c) {
  if (c.pc && c.pc->poll_fd() >= 0) ESOCK_LIBC(close)(c.pc->poll_fd());
  if (c.relay) ESOCK_LIBC(close)(c.relay->fd());
  // (Its option socket stays open in the child, with the leaked connection: the set may be
  // shared, and the registry names it.)
}

// An own stack's connection the application still has at fork (fork_relay.h): a pair, one
// end for the parent, the other for the child's copy of the application's numbers. Not for
// MSGMODE (a byte stream would lose the message boundaries) nor RAWMODE, nor when an
// earlier fork's relay is still undecided (that child has it).
bool make_relay(Socket& s) {
  Conn& c = *s.conn;
  if (!c.stream || s.msgmode() || c.relay || c.close_ladder.closing() || c.pc->survives_fork() ||
      s.state() != Socket::State::connected)
    return false;
  int ends[2];
  if (private_pair(SOCK_STREAM, ends) < 0) return false;
  ESOCK_LIBC(fcntl)(ends[0], F_SETFL, O_NONBLOCK);
  c.relay = std::make_unique<ForkRelay>(ends[0]);
  c.relay_child_end = ends[1];
  // The child's end shows as the TCP socket it stands for (relayed_names.h); the entry is
  // made here, before fork, so the child has it without taking a lock after fork.
  sockaddr_in local{}, peer{};
  socklen_t ll = sizeof local, pl = sizeof peer;
  if (c.pc->name(false, reinterpret_cast<sockaddr*>(&local), &ll) == 0 &&
      c.pc->name(true, reinterpret_cast<sockaddr*>(&peer), &pl) == 0 && local.sin_family == AF_INET)
    relayed_add(ends[1], local, peer);
  return true;
}

// The child: every number naming the socket becomes its end of the pair (descriptor and
// status flags kept), a plain socket that leaves DDPMODE.
void take_relay_end(Socket& s) {
  Conn& c = *s.conn;
  const int end = std::exchange(c.relay_child_end, -1);
  bool nonblocking = false;
  for (int fd : fd_numbers_of(&s)) {
    nonblocking = (ESOCK_LIBC(fcntl)(fd, F_GETFL) & O_NONBLOCK) != 0;
    const int cloexec = ESOCK_LIBC(fcntl)(fd, F_GETFD) & FD_CLOEXEC;
    if (ESOCK_LIBC(dup3)(end, fd, cloexec ? O_CLOEXEC : 0) == fd) (void)fd_take(fd);
  }
  if (nonblocking) ESOCK_LIBC(fcntl)(end, F_SETFL, O_NONBLOCK);
  ESOCK_LIBC(close)(end);
}
// The child's copy of an own stack's listener (ListenRelay): its numbers become the family
// queue's children's end, and accept asks the parent. The listener itself is the parent's:
// the copies of its descriptors close, its state is left alone (leaked on purpose).
void take_listen_queue(Socket& s) {
  StackListen& l = *s.lis;
  for (int fd : fd_numbers_of(&s)) {
    const int cloexec = ESOCK_LIBC(fcntl)(fd, F_GETFD) & FD_CLOEXEC;
    ESOCK_LIBC(dup3)(l.fork_relay->child_end(), fd, cloexec ? O_CLOEXEC : 0);
  }
  for (int fd : {l.sig_a, l.sig_l, l.opt_fd, l.fork_relay->poll_fd(), l.fork_relay->child_end()})
    if (fd >= 0) ESOCK_LIBC(close)(fd);
  (void)l.fork_relay.release();
  (void)s.lis.release();
  s.fork_queue = true;
  s.want_sent = false;
  fork_queue_listeners.store(true, std::memory_order_relaxed);
}

}  // namespace

int DdpRuntime::take_over(Socket& s) {
  // An own stack's connection the parent uses after fork stays the parent's: its child's
  // copy reads end of stream (fork_relay.h).
  if (s.conn && s.conn->relay && !s.conn->relay->active()) s.conn->relay.reset();
  if (!forked(s)) return 0;
  Conn& c = *s.conn;
  ForkHandover& table = ForkHandover::get();
  if (c.fork == Conn::Fork::deciding) {
    (void)table.keep(c.fork_slot, ::getpid());  // the children's copies are orphaned now
    c.fork = Conn::Fork::none;
    mark_due(s);
    wake();  // the progress thread polls it again
    return 0;
  }
  switch (table.claim(c.fork_slot, ::getpid(), c.fork_parent)) {
    case ForkHandover::Claim::claimed:
      c.fork = Conn::Fork::none;
      mark_due(s);
      start_thread();
      update_signals(s);
      wake();
      notify();
      return 0;
    case ForkHandover::Claim::waiting:
      return EAGAIN;
    case ForkHandover::Claim::orphaned:
      break;
  }
  orphan(s);
  return ENOTCONN;
}

int DdpRuntime::take_over(std::unique_lock<RuntimeMutex>& lk, Socket& s, bool may_block) {
  for (;;) {
    const int err = take_over(s);
    if (err != EAGAIN || !may_block) return err;
    wait(lk);  // the progress thread asks again within claim_poll and notifies
    if (s.state() == Socket::State::closed) return EBADF;
  }
}

void DdpRuntime::orphan(Socket& s) {
  s.orphaned = true;  // close works; data calls and names fail with ENOTCONN
  Conn& c = *s.conn;
  c.fork_slot = {};  // the word is the other process's
  c.fork = Conn::Fork::none;
  c.release();  // closes descriptors (references only: the owner's stay open) and frees memory
  mark_due(s);  // it leaves the rounds at the next one
  notify();
}

void DdpRuntime::let_go(Conn& c) {
  if (c.fork == Conn::Fork::deciding && ForkHandover::get().give_up(c.fork_slot, ::getpid()))
    given_up_.push_back({c.fork_slot, clock_.now()});
  c.fork_slot = {};
  c.fork = Conn::Fork::none;
  c.release();  // as orphan(): nothing is sent; a child may carry on from the same state
}

std::optional<Duration> DdpRuntime::settle_forks() {
  std::optional<Duration> next;
  const Instant now = clock_.now();
  auto soon = [&](Duration d) { next = std::min(next.value_or(d), d); };
  // Called every progress round: the sockets are walked only while a fork left some
  // undecided (4000 held connections spent 16% of an idle process here).
  if (!forks_unsettled_ && given_up_.empty()) return next;
  bool unsettled = false;
  for (const auto& s : socks_) {
    if (!forked(*s)) continue;
    unsettled = true;
    Conn& c = *s->conn;
    if (c.fork == Conn::Fork::deciding) {
      if (now < c.fork_deadline)
        soon(c.fork_deadline - now);
      else
        (void)take_over(*s);  // the parent keeps it
    } else if (take_over(*s) == EAGAIN) {
      soon(claim_poll);
    }
  }
  forks_unsettled_ = unsettled;
  std::erase_if(given_up_, [&](const GivenUp& g) {
    if (now - g.at < unclaimed_after) {
      soon(unclaimed_after - (now - g.at));
      return false;
    }
    (void)ForkHandover::get().take_back(g.slot, ::getpid());  // fails if a child claimed it
    return true;
  });
  return next;
}

// The handlers: the runtime lock is held across fork (then the fd table's, fd_table.cc), so
// no connection is mid-round in the copy.
void DdpRuntime::at_fork_prepare() {
  DdpRuntime& rt = get();
  // Asynchronous reads land first (read_async.h): the child's copy of the pages would never
  // get their octets, though its read returned them. The lock is kept from the last check
  // through the fork (at_fork_parent/child let go of it), so no new one starts in between.
  std::unique_lock lk(rt.mu);
  for (;;) {
    const auto it = std::find_if(rt.socks_.begin(), rt.socks_.end(), [](const auto& s) {
      return s->conn && s->conn->async_read && s->conn->pc;
    });
    if (it == rt.socks_.end()) break;
    const std::shared_ptr<Socket> s = *it;  // (rounds may change socks_)
    rt.finish_async_read(lk, *s);
  }
  (void)lk.release();
  epoll_watch_mutex().lock();  // (its order: after the runtime lock)
  // Before fork, so the child never sees its parent's word as plainly owned.
  const Instant until = rt.clock_.now() + decision_time;
  for (const auto& s : rt.socks_) {
    if (!s->conn || !s->conn->pc || !s->conn->fork_slot || s->conn->close_ladder.closing() ||
        s->state() != Socket::State::connected)
      continue;
    Conn& c = *s->conn;
    // One with asynchronous writes out stays the parent's: their pages are the parent's.
    if (c.fork == Conn::Fork::none && c.async_writes.empty() && !c.async_read &&
        ForkHandover::get().start_deciding(c.fork_slot, ::getpid()))
      c.fork = Conn::Fork::deciding;
    if (c.fork == Conn::Fork::deciding) {
      c.fork_deadline = until;
      rt.forks_unsettled_ = true;
    }
  }
  // Relays for the newest connections only (socks_ is in the order they came): a forking
  // server forks right after accept, and a program with thousands of connections that forks
  // for something else (a background save) should not make thousands of pairs each time.
  int made = 0;
  for (auto it = rt.socks_.rbegin(); it != rt.socks_.rend() && made < max_relays_per_fork; ++it)
    if ((*it)->conn && (*it)->conn->pc && make_relay(**it)) ++made;
}

void DdpRuntime::at_fork_parent() {
  forks_made_.fetch_add(1, std::memory_order_relaxed);
  DdpRuntime& rt = get();
  epoll_watch_mutex().unlock();
  for (const auto& s : rt.socks_) {
    if (!s->conn || s->conn->relay_child_end < 0) continue;
    ESOCK_LIBC(close)(s->conn->relay_child_end);  // the child's
    s->conn->relay_child_end = -1;
    rt.mark_due(*s);  // its relay is looked at every round
  }
  rt.wake();  // the progress thread stops polling the connections now deciding
  rt.mu.unlock();
}

// The child: no progress thread (one starts if it inherited connections it may claim). Its
// copies of connections its parent decides about wait for the decision; everything else is
// orphaned: the parent's stack or listening socket, and connections another process of the
// family decides about. Orphaned copies drop their references to the private descriptors at
// once, so the child never holds the parent's connection open.
void DdpRuntime::at_fork_child() {
  note_pid();
  DdpRuntime& rt = get();
  epoll_watch_mutex().unlock();
  page_guard::forget_all_in_child();  // the parent's peers pull the parent's pages
  const pid_t parent = ::getppid();
  std::vector<std::shared_ptr<Socket>> inherited;
  for (const auto& s : rt.socks_) {
    s->readers = 0;  // the parent's threads did not come along
    // Nor their buffers: a sink one of them offered is not this process's to fill.
    if (s->conn && s->conn->stream) s->conn->stream->drop_sink();
    if (s->conn) s->conn->async_writes.clear();  // forget_all_in_child released the pages
    if (s->conn) s->conn->async_read.reset();    // (one that came after the prepare: lost)
    if (s->conn && s->conn->fork == Conn::Fork::deciding) {
      s->conn->fork = Conn::Fork::inherited;
      rt.forks_unsettled_ = true;
      s->conn->fork_parent = parent;
      inherited.push_back(s);
      continue;
    }
    if (s->lis && s->lis->shared()) {
      // A ksock listener: the listening socket and the accept queue are the family's. The
      // connections the parent is setting up stay the parent's (the child drops its
      // copies); the child's copy takes new ones once its application accepts there.
      StackListen& l = *s->lis;
      l.negotiating.clear();  // (a ksock connection's destructor only closes its descriptor)
      l.ready.clear();
      l.dormant = true;
      inherited.push_back(s);
      continue;
    }
    if (s->conn && s->conn->relay_child_end >= 0) take_relay_end(*s);
    if (s->lis && s->lis->fork_relay) {
      take_listen_queue(*s);
      continue;
    }
    s->orphaned = true;
    if (s->connecting) {
      s->connecting->drop_descriptors();
      (void)s->connecting.release();        // leaked in the child on purpose, as conn below
      s->set_state(Socket::State::failed);  // nothing here moves it on: calls end at once
      s->error = ENOTCONN;
    }
    if (s->lis) {
      // The listener is the parent's (its stack, or its kernel listening socket and the
      // connections negotiating there): the child only drops its copies of the descriptors.
      StackListen& l = *s->lis;
      for (int fd : {l.sig_a, l.sig_l, l.opt_fd, l.pl ? l.pl->poll_fd() : -1})
        if (fd >= 0) ESOCK_LIBC(close)(fd);
      for (const StackListen::Negotiating& n : l.negotiating)
        if (n.pc->poll_fd() >= 0) ESOCK_LIBC(close)(n.pc->poll_fd());
      for (const auto& pc : l.ready)
        if (pc->poll_fd() >= 0) ESOCK_LIBC(close)(pc->poll_fd());
      (void)s->lis.release();
    }
    if (s->conn) {
      // Forget, don't tear down: an own stack's engines and memory are the parent's.
      close_descriptors(*s->conn);
      (void)s->conn.release();  // leaked in the child on purpose
    }
  }
  // The parent's round lists: every socket is looked at in the child's rounds (no own
  // stack here), and those left behind must not be named again.
  for (Socket* s : rt.due_) s->due = false;
  rt.due_.clear();
  for (const auto& s : rt.socks_) s->in_rounds = false;
  for (const auto& s : inherited) s->in_rounds = true;
  rt.socks_ = std::move(inherited);
  rt.given_up_.clear();  // the parent's to take back
  rt.sleepers_.clear();  // the parent's threads
  forget_thread_wake_fds();
  ESOCK_LIBC(close)(rt.wake_fd_);
  rt.wake_fd_ = private_eventfd();
  if (guard_wake_fd.load(std::memory_order_relaxed) >= 0)
    guard_wake_fd.store(rt.wake_fd_, std::memory_order_release);
  rt.thread_started_ = false;
  rt.waiters_ = 0;
  rt.blocked_ = 0;
  rt.poller_ = false;
  rt.stack_of_parent_ = rt.stack_of_parent_ || rt.stack_ != nullptr;
  rt.stack_ = nullptr;
  // A child that waits in poll(2) on an inherited connection (socat, inetd-style servers)
  // makes no call esock sees: its progress thread claims the connection for it.
  if (std::any_of(rt.socks_.begin(), rt.socks_.end(),
                  [](const auto& s) { return s->conn != nullptr; }))
    rt.start_thread();
  rt.mu.unlock();
}

}  // namespace esock::sockets
