#include "esock/runtime/runtime.h"
#include "esock/runtime/relayed_names.h"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <optional>
#include <thread>

#include "base/steady_clock.h"
#include "esock/esock.h"
#include "esock/process/addr_text.h"
#include "esock/process/config.h"
#include "esock/process/libc.h"
#include "esock/process/log.h"
#include "esock/process/page_flip.h"
#include "esock/process/page_guard.h"
#include "esock/process/private_fds.h"
#include "esock/runtime/fd_table.h"
#include "esock/runtime/listen_queue.h"

namespace esock::sockets {

namespace {
// Process exit with an own stack: how long open connections get to close (at_exit).
// The exit drain: a second, longer while closes keep finishing (thousands of connections
// closed just before exit take more than a second on a loaded machine; those not finished
// are reset, and a reset the peer's full ring drops leaves the peer holding its end).
constexpr Duration exit_drain_time = 1s;
constexpr Duration exit_drain_max = 10s;
// Own-stack polling: empty rounds before the first sleep (tcp::IdleBackoffConfig's figure:
// busy-poll latency while a conversation goes on), then short sleeps, then, once idle for
// a while, long ones. Each wake-up costs ~36 us of CPU on this project's VMs whatever the
// sleep (a bare 50 us ppoll loop: 22% of a core), so only the long sleep makes an idle
// process cheap; it delays a packet that ends a long silence by up to 1 ms, while an
// application call ends any sleep at once (the eventfd). The first step is
// DdpRuntime::spin_rounds (runtime.h: wait() looks at it too).
constexpr unsigned short_sleeps = 4096;  // ~0.5 s of 50 us sleeps (with timer slack)
constexpr long short_sleep_ns = 50'000;
constexpr long long_sleep_ns = 1'000'000;

// The readable signal of a listener's number (A): one octet queued from L to A.
void set_readable(int sig_a, int sig_l, bool want, bool* readable) {
  if (want && !*readable) {
    const char b = 'r';
    *readable = ESOCK_LIBC(send)(sig_l, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1;
  } else if (!want && *readable) {
    char b;
    ESOCK_LIBC(recv)(sig_a, &b, 1, MSG_DONTWAIT);
    *readable = false;
  }
}

}  // namespace

std::mutex& epoll_watch_mutex() {
  static auto* m = new std::mutex;  // never destroyed: shims may run during exit
  return *m;
}

int private_eventfd() {
  const int e = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (e < 0) return e;
  const int high = move_high(e);
  ESOCK_LIBC(close)(e);
  return high;
}

namespace {

// poll_listener's mark for a descriptor whose readiness only wakes the round: the address
// of this tag, compared, never dereferenced.
char relay_wake_tag;
ProviderConn* const relay_wake = reinterpret_cast<ProviderConn*>(&relay_wake_tag);

// The application set SO_LINGER with a zero time on the socket its options go to.
bool lingers_zero(const Conn& c) {
  const int fd = c.pc->option_fd() >= 0 ? c.pc->option_fd() : c.options ? c.options->fd() : -1;
  linger lg{};
  socklen_t l = sizeof lg;
  return fd >= 0 && ESOCK_LIBC(getsockopt)(fd, SOL_SOCKET, SO_LINGER, &lg, &l) == 0 &&
         lg.l_onoff != 0 && lg.l_linger == 0;
}

void close_all(std::initializer_list<int*> fds) {
  for (int* fd : fds) {
    if (*fd >= 0) ESOCK_LIBC(close)(*fd);
    *fd = -1;
  }
}
}  // namespace

void RuntimeMutex::lock_after_waiters() {
  // Bounded: an application thread that announced itself takes the lock within a few
  // microseconds of the release; if it does not, the progress thread goes on.
  for (int i = 0; i < 2000 && wanted_.load(std::memory_order_relaxed) > 0; ++i) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    std::this_thread::yield();
#endif
  }
  m_.lock();
}

int zcopy_mode(const Socket& s) {
  // The modes are the byte stream's (the option is refused on the others): a MSGMODE
  // message larger than the reader's buffers can only go by rendezvous, as a copied one
  // would wait for credits its whole-message reader never grants.
  if (s.msgmode() || s.rawmode()) return ESOCK_ZCOPY_SYNC;
  const int m = s.zcopy.load(std::memory_order_relaxed);
  if (m >= 0) return m;
  static const int process_mode = [] {  // ESOCK_ZCOPY, read once (not per write)
    const std::string& c = config().zcopy;
    return c == "copy"        ? ESOCK_ZCOPY_COPY
           : c == "async"     ? ESOCK_ZCOPY_ASYNC
           : c == "async-cow" ? ESOCK_ZCOPY_ASYNC_COW
                              : ESOCK_ZCOPY_SYNC;
  }();
  return process_mode;
}

void Conn::release_guard(int guard) {
  guard_faults += page_guard::release(guard);
}

void Conn::release() {
  if (fork_slot && fork == Fork::none) ForkHandover::get().free(fork_slot, ::getpid());
  fork_slot = {};
  // The stream's send buffers and copies on write may still be pointed into by frames TCP
  // or the device hold (a reset connection's frames the PMD has not taken yet): they go
  // with the transport's pins (unmapped earlier, such a frame faulted; found in review).
  if (stream && pc) pc->keep_while_sent(stream->take_send_buffers());
  stream.reset();  // deregisters its buffers before the queue pair goes
  raw.reset();
  for (AsyncWrite& w : async_writes)
    if (w.copy && pc) pc->keep_while_sent(std::move(w.copy));
  pc.reset();                                                       // closes the transport
  for (const AsyncWrite& w : async_writes) release_guard(w.guard);  // nothing reads them
  async_writes.clear();
  if (async_read) {  // the pull can no longer finish (its region went with the stream)
    const std::size_t len = async_read->len;
    page_flip::discard(async_read->staging, async_read->dst, len, async_read->own);
    // Released before the log line: a thread waiting for the pages may hold stdio's lock.
    release_guard(async_read->guard);
    async_read.reset();
    log(LogLevel::error, "an asynchronous read of %zu octets was lost: the connection closed", len);
  }
  relay.reset();
  options.reset();
  close_all({&relay_child_end});
  number = -1;
}

void StackListen::release() {
  ready.clear();  // connections nobody accepted go with the listener, as TCP's do
  negotiating.clear();
  pl.reset();
  close_all({&sig_a, &sig_l, &opt_fd, &queue_in, &queue_out});
}

DdpRuntime& DdpRuntime::get() {
  // Never destroyed (nor its clock): shims may run during exit.
  static DdpRuntime* rt = [] {
    auto* r = new DdpRuntime(*new SteadyClock);
    r->process_ = true;
    ProgressMode mode = ProgressMode::automatic;
    (void)parse_progress_mode(config().progress, &mode);  // config() checked the name
    r->set_progress(mode, std::chrono::microseconds(config().spin_us));
    relayed_names_init();  // likewise (fork.cc adds entries in our prepare handler)
    option_sets_init();    // likewise
    fd_table_init();       // its fork handlers first, so its lock is taken after ours
    ::pthread_atfork(at_fork_prepare, at_fork_parent, at_fork_child);
    return r;
  }();
  return *rt;
}

DdpRuntime::DdpRuntime(const Clock& clock) : clock_(clock) {
  wake_fd_ = private_eventfd();
}

DdpRuntime::~DdpRuntime() {
  if (thread_.joinable()) {
    {
      std::lock_guard lk(mu);
      stop_ = true;
    }
    wake();
    thread_.join();
  }
  if (wake_fd_ >= 0) ESOCK_LIBC(close)(wake_fd_);
}

void DdpRuntime::start_thread(bool even_inline) {
  // inline: an own stack moves only in application threads (a kernel-socket provider
  // always needs the thread: it waits on the connections' descriptors).
  if (thread_started_ || (!even_inline && mode_ == ProgressMode::inline_only && stack_ != nullptr))
    return;
  thread_started_ = true;
  // Returns once the thread runs: a thread still starting may hold the allocator's locks
  // (ASan's take them in its thread set-up), and a fork() right after listen() or connect()
  // then left them held in the child for good (DdpFd.PeerResetGivesEconnreset hung in 1 run
  // of ~20 under ASan with the machine loaded).
  std::promise<void> running;
  std::future<void> started = running.get_future();
  auto body = [this, r = std::move(running)]() mutable {
    r.set_value();
    loop();
  };
  if (process_) {
    std::thread(std::move(body)).detach();  // runs as long as the process
  } else {
    thread_ = std::thread(std::move(body));  // a test's runtime: joined by the destructor
  }
  started.wait();
}

void DdpRuntime::wake() {
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ESOCK_LIBC(write)(wake_fd_, &one, sizeof one);
}

void DdpRuntime::add(std::shared_ptr<Socket> s) {
  start_thread();
  if (s->conn) update_signals(*s);
  enter_rounds(std::move(s));
  wake();
}

int DdpRuntime::use_stack(Provider& p, std::string* why) {
  if (stack_of_parent_) {
    *why = "the provider's stack belongs to the parent process (fork)";
    return EOPNOTSUPP;
  }
  {
    // What the provider opens (DPDK's EAL, its interrupt thread, the memif driver) goes to
    // the private range, clear of the application's numbers (process/private_fds.h).
    PrivateFdScope private_fds;
    if (const int err = p.start(why); err != 0) return err;
  }
  if (stack_ == nullptr && process_) std::atexit(at_exit);
  stack_ = &p;
  idle_since_known_ = false;
  enable_readiness_spin();
  start_thread();
  wake();
  return 0;
}

void DdpRuntime::after_op(Socket& s) {
  if (!s.conn || !s.conn->pc) return;
  // Completions of what was just framed (send buffers, credits) are handled here rather
  // than waiting for the progress thread's next round.
  s.conn->pc->flush();
  if (s.conn->stream) s.conn->stream->progress();
  s.conn->pc->flush();
  if (s.conn->raw) raw_round(*s.conn);
  update_signals(s);
  if (s.conn->pc->output_pending()) wake();
}

void DdpRuntime::close(const std::shared_ptr<Socket>& s) {
  mark_due(*s);  // its close ladder, or its leaving, is the next round's
  s->set_state(Socket::State::closed);
  notify();               // calls blocked on this socket return EBADF
  s->connecting.reset();  // a connect in progress: its transport is released (reset)
  if (s->lis) {
    s->lis.reset();  // the stack resets connections still waiting to be accepted
    return;
  }
  if (!s->conn || !s->conn->pc) return;  // released already (reset)
  Conn& c = *s->conn;
  if (c.fork != Conn::Fork::none) {
    let_go(c);  // a fork copy's close: no FIN, no Terminate (runtime/fork.cc)
    return;
  }
  if (c.relay && !c.relay->active()) {
    // An own stack's connection closed by a parent after fork: its child serves it
    // through the pair from now on (fork_relay.h); the signal pair has no reader left.
    c.relay->activate();
    c.number = -1;
    wake();
    return;
  }
  if (lingers_zero(c)) {
    // SO_LINGER with a zero time (socket(7)): what is queued is discarded and the peer gets
    // a reset at once, as from the kernel's close.
    c.pc->abort();
    c.release();
    return;
  }
  if (c.stream) {
    c.stream->cancel_pull();  // a blocked reader's buffer is about to go away
    c.stream->drop_sink();    // likewise its sink: a late Write draws a Terminate
    // A blocked writer's source goes (its call fails); asynchronous writes returned already
    // and stay for the peer to pull: the close ladder waits for them (tx_idle). (A blocked
    // writer that finds the socket closed gives up everything: release_lent.)
    if (c.async_writes.empty()) c.stream->cancel_rndv();
    c.stream->shutdown_write();
  } else {
    // RAWMODE: the application may free its regions once close returns; revoke them so no
    // peer Read or Write reaches them (it gets a Terminate instead), and nothing queued is
    // sent from them. Octets TCP already holds by reference (unacknowledged) would be
    // retransmitted from freed memory: then the connection is reset now (issue 20, item 1).
    const bool held = c.raw->dereg_all();
    c.raw->shut_write();
    if (held) {
      c.release();
      return;
    }
  }
  c.close_ladder.start(clock_.now());
  c.pc->flush();
  if (log_on(LogLevel::info)) {
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    if (c.pc->name(true, reinterpret_cast<sockaddr*>(&peer), &len) != 0) peer = {};
    log(LogLevel::info, "closing the connection to %s", address_text(peer).c_str());
  }
  wake();
}

void DdpRuntime::reset(Socket& s, int err) {
  if (!s.conn || !s.conn->pc) return;
  s.error = err;
  s.set_state(Socket::State::failed);
  hang_up_number(s);
  s.conn->release();
  mark_due(s);  // it leaves the rounds at the next one
  notify();
}

// Readiness of the application's number (docs/sockets.md, "fd model"): a readiness socket
// (process/readiness_socket.h) set readable (data, end of stream or an error pending),
// not writable (the stream cannot take a write), at end of stream (a lasting
// POLLIN|POLLRDHUP) and hung up (the connection failed), as a TCP socket polls. Only a
// change costs system calls, made through the number under the fd table's lock.
void DdpRuntime::update_signals(Socket& s) {
  Conn& c = *s.conn;
  if (c.number < 0 || c.close_ladder.closing()) return;
  // RAWMODE: readable while completions are pending (the completion descriptor, esock.h);
  // the peer's orderly close is the EOF, a failure the hang-up.
  const int err = c.stream ? c.stream->error() : c.raw->error();
  const bool peer_fin =
      c.stream ? c.stream->peer_fin() : c.pc->transport_state() == TransportState::ended;
  const bool hup = err != 0 && !c.sig_hup;
  const bool eof = (peer_fin || s.rd_shut) && !c.sig_eof;
  const bool want = c.stream ? c.stream->readable() || c.stream->pull_needed() : c.raw->pending();
  // RAWMODE: always writable. Made writable again, the socket gives poll/epoll writers
  // (EPOLLET included) the kernel's own write-space wakeup.
  const bool writable = !c.stream || c.stream->writable();
  // A reader blocked in this socket takes what arrives itself, and its own call updates the
  // signal once it has read: raising it now and clearing it a moment later would cost two
  // system calls per message for nothing (the run-to-completion fast path makes none).
  const bool readable_changes = s.readers == 0 && want != c.ready.readable;
  if (!hup && !eof && !readable_changes && writable == c.ready.writable) return;
  const ReadinessHub& hub = *ReadinessHub::process();  // (it made the number)
  (void)fd_with_number(&s, &c.number, [&](int fd) {
    if (hup) c.sig_hup = hub.set_writable(fd, c.ready, true) && ReadinessHub::hang_up(fd);
    if (eof) c.sig_eof = ReadinessHub::end_of_stream(fd);
    (void)hub.set_writable(fd, c.ready, writable || c.sig_hup);
    if (readable_changes) (void)hub.set_readable(fd, c.ready, want);
  });
}

void DdpRuntime::empty_read(Socket& s) {
  Conn* c = s.conn.get();
  if (c == nullptr || c->ready.readable || c->sig_eof || c->sig_hup || ++s.empty_reads < 2) return;
  s.empty_reads = 0;
  (void)fd_with_number(&s, &c->number, [](int fd) { ReadinessHub::take_stray(fd); });
}

void DdpRuntime::hang_up_number(Socket& s) {
  Conn& c = *s.conn;
  if (c.number < 0 || c.sig_hup) return;
  const ReadinessHub& hub = *ReadinessHub::process();
  (void)fd_with_number(&s, &c.number, [&](int fd) {
    c.sig_hup = hub.set_writable(fd, c.ready, true) && ReadinessHub::hang_up(fd);
  });
}

void DdpRuntime::service(Socket& s) {
  Conn& c = *s.conn;
  if (c.raw) {
    service_raw(s);
    return;
  }
  c.stream->progress();
  c.pc->flush();
  const TransportState ts = c.pc->transport_state();
  if (ts == TransportState::broken) c.stream->fail(broken_transport_errno);
  if (ts == TransportState::ended) c.stream->peer_closed();  // writes: EPIPE (issue 14)
  if (!c.async_writes.empty()) reap_async_writes(c);
  if (c.async_read) reap_async_read(c);
  prefetch(s);
  if (c.relay && c.relay->pump(*c.stream)) {
    // The child is done with it: the connection closes as after the application's close.
    c.relay.reset();
    c.stream->cancel_pull();
    c.stream->shutdown_write();
    c.close_ladder.start(clock_.now());
  }
  if (c.relay) c.pc->flush();  // what the child wrote
  update_signals(s);
  const bool delivered = !c.pc->shutdown_ends_both() || c.stream->fin_delivered();
  close_step(c, ts, c.stream->tx_idle() && !c.pc->output_pending() && delivered);
}

void DdpRuntime::reap_async_writes(Conn& c) {
  estp::Stream& st = *c.stream;
  while (!c.async_writes.empty() && st.rndv_front_id() == c.async_writes.front().rndv_id &&
         st.rndv_finished()) {
    c.release_guard(c.async_writes.front().guard);
    c.async_writes.pop_front();
  }
  if (c.async_writes.empty()) return;
  if (st.error() == 0 && !st.peer_gone()) copy_on_write(c);
  // The peer will not pull the rest: lost, as what a reset TCP connection still had in its
  // send buffer (the application learns of the error on its next call). The pages stay
  // guarded until the transport reads none of them.
  if (st.error() != 0 || st.peer_gone()) st.cancel_rndv();
  if (!st.rndv_active() && st.rndv_released()) {
    for (const Conn::AsyncWrite& w : c.async_writes) c.release_guard(w.guard);
    c.async_writes.clear();
  }
}

void DdpRuntime::reap_async_read(Conn& c) {
  std::optional<estp::ReadOut> r = c.stream->pull_result();
  // A failed stream finishes no pull: what did not land by then is lost.
  if (!r && c.stream->error() != 0) r = estp::ReadOut{.err = c.stream->error()};
  if (!r) return;
  const Conn::AsyncRead a = *c.async_read;
  const char* lost = nullptr;  // logged once the guard is off (a waiter may hold stdio's lock)
  int err = 0;
  if (r->err != 0 || r->n != a.len) {
    // A stream that failed on its own (a malformed message) may still have the Read out: its
    // region goes before the staging pages do, so a late response lands nowhere.
    c.stream->cancel_pull();
    lost = "lost";
    err = r->err != 0 ? r->err : EIO;
    page_flip::discard(a.staging, a.dst, a.len, a.own);
  } else if (!page_flip::land(a.staging, a.dst, a.len)) {
    // The kernel would not move them: copied instead, a touch meanwhile may see it part way.
    lost = "copied, not moved";
    err = errno;
    page_flip::copy_back(a.staging, a.dst, a.len);
  }
  c.release_guard(a.guard);  // the waiters wake to the final data
  c.async_read.reset();
  if (lost)
    log(LogLevel::error, "an asynchronous read of %zu octets: %s (%s)", a.len, lost,
        std::strerror(err));
}

void DdpRuntime::finish_async_read(std::unique_lock<RuntimeMutex>& lk, Socket& s) {
  const auto end = CallClock::now() + std::chrono::milliseconds(config().timeout_ms);
  while (s.conn && s.conn->async_read && s.conn->pc) {
    if (!wait_until(lk, end)) {
      reset(s, ETIMEDOUT);  // the peer never answered the Read: given up as lost
      return;
    }
  }
}

// Copy-on-write (AZ-SDP, ../shared/seeds/000_* section 4.2.2): a thread waits for the pages
// of a write not pulled yet (a store faulted, free(), a read into them). The octets are
// copied aside and the peer's Reads answered from the copy from now on; the pages go back
// once the transport holds nothing it sent from them by reference (TCP may retransmit
// those). The seed's lock against a receiver already reading is not needed: esock answers
// the Reads itself and switches between two segments. A provider whose device reads the
// memory itself (rdmacm) cannot: that write stays block-on-write.
void DdpRuntime::copy_on_write(Conn& c) {
  estp::Stream& st = *c.stream;
  for (Conn::AsyncWrite& w : c.async_writes) {
    if (!w.cow || w.guard < 0) continue;
    if (!w.copy) {
      if (!page_guard::awaited(w.guard)) continue;
      w.copy = std::make_unique_for_overwrite<std::uint8_t[]>(w.len);
      std::memcpy(w.copy.get(), w.src, w.len);  // read-only until released: unchanged
      if (st.move_rndv(w.rndv_id, w.copy.get()) != 0) {
        w.copy.reset();  // pulled already, or the verbs cannot: blocks until the pull
        w.cow = false;
        continue;
      }
      ++c.cow_copies;
      c.cow_octets += w.len;
    }
    if (!st.rndv_reads_old(w.rndv_id)) {
      c.release_guard(w.guard);
      w.guard = -1;
    }
  }
}

void DdpRuntime::drain_async_writes_at_exit() {
  static std::once_flag once;
  std::call_once(once, [this] {
    guard_wake_fd.store(wake_fd_, std::memory_order_release);
    page_guard::set_wait_hook([] {
      // Async-signal-safe: the raw system call (write is interposed by esock's shim).
      const std::uint64_t one = 1;
      const int fd = guard_wake_fd.load(std::memory_order_acquire);
      if (fd >= 0) (void)::syscall(SYS_write, fd, &one, sizeof one);
    });
    std::atexit([] {
      DdpRuntime& rt = get();
      std::unique_lock lk(rt.mu);
      const auto end = CallClock::now() + std::chrono::milliseconds(config().timeout_ms);
      for (;;) {
        const bool pending = std::any_of(rt.socks_.begin(), rt.socks_.end(), [](const auto& s) {
          return s->conn != nullptr && !s->conn->async_writes.empty();
        });
        if (!pending) return;
        if (!rt.wait_until(lk, end)) break;
      }
      // The peers did not pull in time: what is left is lost, and the pages are the
      // application's again (its own exit handlers may free them).
      for (const auto& s : rt.socks_) {
        if (s->conn == nullptr || s->conn->async_writes.empty()) continue;
        if (s->conn->stream) s->conn->stream->cancel_rndv();
        for (Conn::AsyncWrite& w : s->conn->async_writes) {
          s->conn->release_guard(w.guard);
          // TCP may still send from a copy on write until the stack stops (at_exit drains
          // it after this handler): the process's end frees it.
          (void)w.copy.release();
        }
        s->conn->async_writes.clear();
      }
    });
  });
}

void DdpRuntime::prefetch(Socket& s) {
  Conn& c = *s.conn;
  // An SRCAVAIL at the head with no reader blocked: pull into the engine's buffer now so the
  // writer is released as TCP's buffering would release it (else a program that writes
  // on both ends before reading would deadlock). A reader already waiting pulls zero-copy.
  // Not while this socket's own rendezvous write has been pulled and only waits for its
  // ACKs: that writer returns without the peer's help and, in a request/response program,
  // reads next, so the peer's data goes zero-copy into its buffer rather than through a
  // bounce buffer (a 4 MiB echo paid an allocation and a copy for it).
  if (!c.stream || !c.stream->prefetch_needed() || !(s.nonblocking || s.readers == 0) ||
      c.stream->rndv_pulled()) {
    if (c.stream && !c.stream->pull_needed()) c.prefetch_at.reset();
    return;
  }
  // The asynchronous modes give a reader that comes back at once (a streaming loop) the
  // source for an asynchronous read (ddpmode/read_async.h), which lands without a copy:
  // fetched ahead only once it waited ESOCK_PREFETCH_US with no read (a writer on the other
  // end that waits for the pull is released a little later than TCP's buffering would).
  if (zcopy_async(zcopy_mode(s))) {
    const Instant now = clock_.now();
    if (!c.prefetch_at) {
      c.prefetch_at = now + std::chrono::microseconds(config().prefetch_us);
      mark_due(s);  // the rounds look at it until its grace is over
    }
    if (now < *c.prefetch_at) return;
  }
  c.prefetch_at.reset();
  if (c.stream->pull_bounce() == 0) c.pc->flush();
}

void DdpRuntime::close_step(Conn& c, TransportState transport, bool drained) {
  if (!c.close_ladder.closing()) return;
  const bool peer_first = c.stream && c.stream->closed_after_peer();
  const CloseAction act = c.close_ladder.step(clock_.now(), transport, drained, peer_first);
  if (sends_fin(act)) c.pc->shutdown();
  if (releases(act)) c.release();
}

void DdpRuntime::raw_round(Conn& c) {
  c.raw->collect();
  if (c.pc->transport_state() == TransportState::broken) c.raw->fail(broken_transport_errno);
  if (c.raw_fin && !c.raw_fin_sent && !c.pc->output_pending()) {
    c.pc->shutdown();
    c.raw_fin_sent = true;
  }
}

// RAWMODE: completions move to the socket's buffer; close waits only for the framed
// output to leave (the application's regions were revoked at close).
void DdpRuntime::service_raw(Socket& s) {
  Conn& c = *s.conn;
  c.pc->flush();
  raw_round(c);
  update_signals(s);
  close_step(c, c.pc->transport_state(), !c.pc->output_pending());
}

void DdpRuntime::poll_listener(Socket& s, std::vector<pollfd>* pfds,
                               function_ref<void(ProviderConn*)> polled) {
  StackListen& l = *s.lis;
  // The listening descriptor only while service_listener would take a connection from it:
  // a full backlog leaves it readable, and polling it then would never sleep.
  const bool room = !l.dormant && l.negotiating.size() < StackListen::max_negotiating &&
                    l.negotiating.size() + l.ready.size() < l.backlog;
  if (room && l.pl->poll_fd() >= 0) {
    pfds->push_back(pollfd{l.pl->poll_fd(), POLLIN, 0});
    polled(nullptr);
  }
  if (l.fork_relay) {  // a fork child asking for a connection: service_listener answers
    pfds->push_back(pollfd{l.fork_relay->poll_fd(), POLLIN, 0});
    polled(relay_wake);
  }
  for (const StackListen::Negotiating& n : l.negotiating) {
    const short ev = n.pc->poll_events();
    if (ev == 0 || n.pc->poll_fd() < 0) continue;
    pfds->push_back(pollfd{n.pc->poll_fd(), ev, 0});
    polled(n.pc.get());
  }
}

void DdpRuntime::service_listener(Socket& s) {
  StackListen& l = *s.lis;
  const Instant now = clock_.now();
  // New TCP connections start MPA as the responder (RFC 5044 section 7.1), within bounds.
  while (!l.dormant && l.negotiating.size() < StackListen::max_negotiating &&
         l.negotiating.size() + l.ready.size() < l.backlog && l.pl->pending()) {
    std::unique_ptr<ProviderConn> pc = l.pl->accept(l.mpa);
    if (!pc) break;
    pc->hold_input(true);  // nothing past MPA is read before the application accepts
    l.negotiating.push_back({std::move(pc), now + l.setup_timeout, now + l.fallback_after});
    // An application thread in accept() may be the one that took it: the progress thread,
    // asleep in poll(2) on descriptors chosen before, must add this one (ksock).
    wake();
  }
  for (auto it = l.negotiating.begin(); it != l.negotiating.end();) {
    const int st = it->pc->setup_state();
    // A peer without esock: its first octets were not MPA (nothing of them consumed), or it
    // said nothing for fallback_after; accept() hands it out as plain TCP (stack_accept).
    const bool plain =
        l.fallback && ((st == EPROTO && it->pc->peer_not_mpa()) ||
                       (st == EINPROGRESS && now >= it->plain_at && it->pc->peer_silent()));
    if (plain) ++l.fell_back;
    if (st == 0 || plain) {
      l.ready.push_back(std::move(it->pc));
    } else if (st != EINPROGRESS) {
      ++l.setup_failed;  // never delivered (docs/stream-protocol.md section 3)
    } else if (now >= it->deadline) {
      ++l.setup_timed_out;  // released: the transport is reset
    } else {
      ++it;
      continue;
    }
    it = l.negotiating.erase(it);
  }
  if (l.shared()) {
    queue_ready(l);  // the queue's receiving end is the application's number
    return;
  }
  if (l.fork_relay) l.fork_relay->step(s, &adopted_);  // fork children asking
  set_readable(l.sig_a, l.sig_l, !l.ready.empty(), &l.sig_readable);
}

void DdpRuntime::listener_taken(StackListen& l) {
  set_readable(l.sig_a, l.sig_l, !l.ready.empty(), &l.sig_readable);
}

// A shared listener's set-up connections go to the family's queue, oldest first; what a
// full queue does not take waits in `ready` for the next round.
void DdpRuntime::queue_ready(StackListen& l) {
  while (!l.ready.empty()) {
    ProviderConn& pc = *l.ready.front();
    pc.flush();
    if (pc.output_pending()) return;  // the MPA Reply goes out from here, whole, first
    using Kind = QueuedConn::Kind;
    const Kind kind = pc.peer_not_mpa()  ? Kind::plain_not_mpa
                      : pc.peer_silent() ? Kind::plain_silent
                                         : Kind::negotiated;
    if (!listen_queue_push(l.queue_in, pc.poll_fd(), kind, pc.mpa_request())) return;
    l.ready.pop_front();  // closes this process's reference; the queue holds the socket
  }
}

void DdpRuntime::loop() {
  // Signals are the application's: a process-directed one goes to a thread that can be
  // interrupted by it (wait_interruptible), never to this one.
  sigset_t all;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_BLOCK, &all, nullptr);
  std::unique_lock lk(mu);
  std::vector<pollfd> pfds;
  // Per pollfd after the wake fd: the socket, and the listener's negotiating connection
  // (null: the socket's own connection, or the listening descriptor itself).
  struct Polled {
    Socket* s;
    ProviderConn* negotiating;
    Connecting* connecting;  // the socket's connect in progress
    bool relay = false;      // the connection's fork relay (its round moves the octets)
  };
  std::vector<Polled> who;
  bool device_signals_taken = false;
  while (!stop_) {
    if (stack_ != nullptr && !device_signals_taken) {
      // A device that signals its frames (net_tap) signals this thread, not the
      // application's, whose system calls those signals would interrupt (Provider).
      stack_->take_device_signals();
      device_signals_taken = true;
    }
    // auto: while an application thread polls the stack, this thread rests (both on the
    // same cores would only take turns at the lock). Not while a thread waits for a
    // guarded page: it polls nothing, held in a fault or in free() (page_guard.h).
    if (stack_ != nullptr && page_guard::waiting() == 0 && app_polling(CallClock::now())) {
      lk.unlock();
      sleep_on_wake_fd(handoff_);
      lk.lock();
      empty_rounds_ = 0;
      continue;
    }
    pfds.assign(1, pollfd{wake_fd_, POLLIN, 0});
    who.clear();
    bool closing = false;
    bool prefetch_due = false;              // a source waits out its grace (prefetch)
    std::optional<Instant> setup_deadline;  // the nearest MPA set-up deadline (listeners)
    const std::optional<Duration> fork_due = settle_forks();
    auto poll_socket = [&](Socket& s) {
      if (s.lis) {
        // (An entry that only wakes the round, relay_wake, is never dereferenced: an
        // application thread's round may free the socket meanwhile.)
        poll_listener(s, &pfds, [&](ProviderConn* pc) {
          who.push_back({&s, pc == relay_wake ? nullptr : pc, nullptr, pc == relay_wake});
        });
        for (const StackListen::Negotiating& n : s.lis->negotiating) {
          const bool silent = s.lis->fallback && n.pc->peer_silent();
          const Instant due = silent ? std::min(n.deadline, n.plain_at) : n.deadline;
          setup_deadline = std::min(setup_deadline.value_or(due), due);
        }
      }
      if (s.connecting) {
        Connecting& c = *s.connecting;
        setup_deadline = std::min(setup_deadline.value_or(c.due()), c.due());
        if (c.poll_fd() >= 0 && c.poll_events() != 0) {
          pfds.push_back(pollfd{c.poll_fd(), c.poll_events(), 0});
          who.push_back({&s, nullptr, &c, false});
        }
        return;
      }
      if (!s.conn || !s.conn->pc || forked(s)) return;  // a fork copy rests (fork.cc)
      if (const ForkRelay* r = s.conn->relay.get(); r && r->active() && s.conn->stream) {
        if (const short ev = r->poll_events(*s.conn->stream); ev != 0) {
          pfds.push_back(pollfd{r->fd(), ev, 0});
          who.push_back({&s, nullptr, nullptr, true});
        }
      }
      closing = closing || s.conn->close_ladder.closing();
      prefetch_due = prefetch_due || s.conn->prefetch_at.has_value();
      const short ev = s.conn->pc->poll_events();
      if (ev == 0 || s.conn->pc->poll_fd() < 0) return;
      pfds.push_back(pollfd{s.conn->pc->poll_fd(), ev, 0});
      who.push_back({&s, nullptr, nullptr, false});
    };
    // An own stack's rounds move its connections themselves, and its sleeps are short: the
    // kernel descriptors worth waking for are those of the sockets the rounds look at every
    // round (listeners, set-ups, fork relays, transports that report no activity), all on
    // due_; a walk of every socket per round took 31% of an idle process holding 4000
    // connections. (closing and the deadlines only shape a kernel provider's poll timeout.)
    if (stack_ != nullptr) {
      for (Socket* s : due_) poll_socket(*s);
    } else {
      for (const auto& s : socks_) poll_socket(*s);
    }
    // esock-stat's snapshot is taken in rounds (stats_publish.cc): an idle process whose
    // last snapshot showed sockets takes one a second. Read here, under the lock.
    const bool stats_tick = process_ && !stats_off_ && (!socks_.empty() || stats_shown_ != 0);
    if (stack_ != nullptr) {  // the stack's plain relays (a peer without esock)
      const std::size_t before = pfds.size();
      stack_->poll_fds(&pfds);
      for (std::size_t i = before; i < pfds.size(); ++i)
        who.push_back({nullptr, nullptr, nullptr, true});
    }
    // One round of the own stack (received frames, timers, every connection's engine).
    const bool polling = stack_ != nullptr;
    const bool did = polling && stack_->poll_once();
    if (polling)  // the idle count saturates past the last step
      empty_rounds_ = did ? 0 : std::min(empty_rounds_ + 1, spin_rounds + short_sleeps + 1);
    const bool sleep = polling && empty_rounds_ > spin_rounds;
    const long sleep_ns =
        empty_rounds_ > spin_rounds + short_sleeps ? long_sleep_ns : short_sleep_ns;
    lk.unlock();
    if (!polling) {
      int timeout = closing ? 20 : -1;
      if (setup_deadline) {  // a silent peer's negotiation ends at its deadline
        const auto left =
            std::chrono::ceil<std::chrono::milliseconds>(*setup_deadline - clock_.now());
        const int ms = static_cast<int>(std::clamp<std::int64_t>(left.count(), 1, 1000));
        timeout = timeout < 0 ? ms : std::min(timeout, ms);
      }
      if (fork_due) {  // a fork decision to take
        const auto ms = std::chrono::ceil<std::chrono::milliseconds>(*fork_due).count();
        const int t = static_cast<int>(std::clamp<std::int64_t>(ms, 1, 1000));
        timeout = timeout < 0 ? t : std::min(timeout, t);
      }
      if (stats_tick) timeout = timeout < 0 ? 1000 : std::min(timeout, 1000);
      if (prefetch_due) timeout = timeout < 0 ? 1 : std::min(timeout, 1);  // (its grace)
      ESOCK_LIBC(poll)(pfds.data(), pfds.size(), timeout);
    } else if (sleep) {
      // A sleep that the eventfd (an application thread's wake) or any kernel-transport
      // descriptor ends early.
      const timespec ts{0, sleep_ns};
      ::ppoll(pfds.data(), pfds.size(), &ts, nullptr);
    } else {
      if (pfds.size() > 1) ESOCK_LIBC(poll)(pfds.data(), pfds.size(), 0);
      // Between empty rounds, the application threads this thread woke need a core, and on
      // a machine with as many busy pollers as cores this one is on it: let them run first.
      if (!did) ::sched_yield();
    }
    if (polling) {
      // Application threads waiting for the lock go first (RuntimeMutex).
      lk.release();
      mu.lock_after_waiters();
      lk = std::unique_lock(mu, std::adopt_lock);
    } else {
      lk.lock();
    }
    if (pfds[0].revents & POLLIN) {
      std::uint64_t n;
      [[maybe_unused]] const ssize_t r = ESOCK_LIBC(read)(wake_fd_, &n, sizeof n);
      empty_rounds_ = 0;  // an application thread is active: poll busily again
    }
    bool events = did || pfds[0].revents != 0;
    for (std::size_t i = 1; i < pfds.size(); ++i) {
      if (pfds[i].revents == 0) continue;
      const Polled& p = who[i - 1];
      Socket* s = p.s;
      events = true;
      if (p.relay) {
        // service_all pumps it
      } else if (p.connecting != nullptr) {
        // Still the same connect (an application thread may have closed the socket)?
        if (s->connecting.get() == p.connecting) p.connecting->on_ready(pfds[i].revents);
      } else if (p.negotiating != nullptr) {
        // Still negotiating (an application thread may have taken or dropped it meanwhile)?
        if (!s->lis) continue;
        for (StackListen::Negotiating& n : s->lis->negotiating)
          if (n.pc.get() == p.negotiating) n.pc->on_ready(pfds[i].revents);
      } else if (s->conn && s->conn->pc && !forked(*s)) {
        s->conn->pc->on_ready(pfds[i].revents);
      }
    }
    service_all();
    // A polling thread wakes waiters only when something happened: every spin round would
    // otherwise bounce each blocked application thread through the lock.
    if (!polling || events) notify();
  }
}

// Process exit with an own stack (docs/sockets.md, "Providers"): as the kernel does for its
// sockets, open connections close (FIN after what is queued) and get a second to drain,
// longer while closes keep finishing (at most exit_drain_max); then the stack is stopped (DPDK port
// and EAL released, its runtime directory removed). The lock is kept: the progress thread and any
// application thread still running stop at it, and never see the stack again.
void DdpRuntime::at_exit() {
  DdpRuntime& rt = get();
  std::unique_lock lk(rt.mu);
  if (rt.stack_ == nullptr) return;
  const std::vector<std::shared_ptr<Socket>> socks = rt.socks_;  // (rounds may change it)
  for (const auto& s : socks) {
    // An asynchronous read the program got octets from lands first: its exit handlers may
    // still look at them (and free() of the buffer would wait for the guard).
    if (s->conn && s->conn->async_read) rt.finish_async_read(lk, *s);
    if (s->conn && !s->conn->close_ladder.closing() && s->state() != Socket::State::closed)
      rt.close(s);
  }
  const Instant start = rt.clock_.now();
  Instant end = start + exit_drain_time;
  std::size_t fewest = SIZE_MAX;  // closes left, the fewest seen
  for (Instant now = start; now < end; now = rt.clock_.now()) {
    const std::size_t left =
        rt.stack_->drain_at_exit() +  // every round: resets go out
        static_cast<std::size_t>(std::count_if(rt.socks_.begin(), rt.socks_.end(),
                                               [](const auto& s) { return s->conn != nullptr; }));
    if (left == 0) break;
    if (left < fewest) {  // closes are finishing: another half second, within the bound
      fewest = left;
      end = std::min(start + exit_drain_max, std::max(end, now + exit_drain_time / 2));
    }
    rt.wait_until(lk, CallClock::now() + (end - now));  // a round, or what is left
  }
  rt.stack_->stop();
  rt.stack_ = nullptr;
  (void)lk.release();
}

}  // namespace esock::sockets
