#include "esock/sockets/runtime.h"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdint>
#include <thread>

#include "esock/sockets/fd_table.h"
#include "esock/sockets/libc.h"

namespace esock::sockets {

namespace {
constexpr auto close_drain_time = std::chrono::seconds(2);
constexpr auto close_fin_wait = std::chrono::seconds(1);
}  // namespace

void Conn::release() {
  stream.reset();  // deregisters its buffers before the queue pair goes
  raw.reset();
  pc.reset();  // closes the transport
  for (int* fd : {&sig_a, &sig_l}) {
    if (*fd >= 0) ESOCK_LIBC(close)(*fd);
    *fd = -1;
  }
}

Runtime& Runtime::get() {
  static Runtime* rt = new Runtime;  // never destroyed: shims may run during exit
  return *rt;
}

Runtime::Runtime() {
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ::pthread_atfork(at_fork_prepare, at_fork_parent, at_fork_child);
}

void Runtime::start_thread() {
  if (thread_started_) return;
  thread_started_ = true;
  std::thread([this] { loop(); }).detach();
}

void Runtime::wake() {
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ESOCK_LIBC(write)(wake_fd_, &one, sizeof one);
}

void Runtime::add(std::shared_ptr<Socket> s) {
  start_thread();
  update_signals(*s);
  socks_.push_back(std::move(s));
  wake();
}

void Runtime::after_op(Socket& s) {
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

void Runtime::wait(std::unique_lock<std::mutex>& lk) {
  ++waiters_;
  cv.wait(lk);
  --waiters_;
}

void Runtime::close(const std::shared_ptr<Socket>& s) {
  s->set_state(Socket::State::closed);
  cv.notify_all();  // calls blocked on this socket return EBADF
  if (!s->conn) return;
  Conn& c = *s->conn;
  if (c.stream) {
    c.stream->cancel_pull();  // a blocked reader's buffer is about to go away
    c.stream->cancel_rndv();
    c.stream->shutdown_write();
  } else {
    // RAWMODE: the application may free its regions once close returns; revoke them so no
    // peer Read or Write reaches them (it gets a Terminate instead).
    c.raw->dereg_all();
    c.raw->shut_write();
  }
  c.closing = 1;
  c.deadline = std::chrono::steady_clock::now() + close_drain_time;
  c.pc->flush();
  wake();
}

// Readiness of the application's number (docs/sockets.md, "fd model"): one octet queued
// towards A means readable; shutdown(L, SHUT_WR) is a lasting EOF; shutdown(L, SHUT_RDWR)
// is a hang-up (the connection failed).
void Runtime::update_signals(Socket& s) {
  Conn& c = *s.conn;
  if (c.sig_l < 0 || c.closing) return;
  // RAWMODE: readable while completions are pending (the completion descriptor, esock.h);
  // the peer's orderly close is the EOF, a failure the hang-up.
  const int err = c.stream ? c.stream->error() : c.raw->error();
  const bool peer_fin = c.stream ? c.stream->peer_fin() : c.pc->transport_state() < 0;
  if (err != 0 && !c.sig_hup) {
    ESOCK_LIBC(shutdown)(c.sig_l, SHUT_RDWR);
    c.sig_hup = true;
  }
  if ((peer_fin || s.rd_shut) && !c.sig_eof) {
    ESOCK_LIBC(shutdown)(c.sig_l, SHUT_WR);
    c.sig_eof = true;
  }
  const bool want = c.stream ? c.stream->readable() || c.stream->pull_needed() : c.raw->pending();
  // Writability: A's send direction (A to L) carries nothing else, so filling it (A has a
  // minimal send buffer) clears POLLOUT, and draining it at L sets POLLOUT again, waking
  // poll/epoll writers (EPOLLET included) as any socket does. RAWMODE: always writable.
  const bool writable = !c.stream || c.stream->writable();
  if (!writable && !c.sig_blocked) {
    static const char junk[512] = {};
    for (int i = 0; i < 64; ++i)
      if (ESOCK_LIBC(send)(c.sig_a, junk, sizeof junk, MSG_DONTWAIT | MSG_NOSIGNAL) <= 0) break;
    c.sig_blocked = true;
  } else if (writable && c.sig_blocked) {
    char sink[4096];
    while (ESOCK_LIBC(recv)(c.sig_l, sink, sizeof sink, MSG_DONTWAIT) > 0) {
    }
    c.sig_blocked = false;
  }
  if (want && !c.sig_readable) {
    const char b = 'r';
    c.sig_readable = ESOCK_LIBC(send)(c.sig_l, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1;
  } else if (!want && c.sig_readable) {
    char b;
    ESOCK_LIBC(recv)(c.sig_a, &b, 1, MSG_DONTWAIT);
    c.sig_readable = false;
  }
}

void Runtime::service(Socket& s) {
  Conn& c = *s.conn;
  if (c.raw) {
    service_raw(s);
    return;
  }
  c.stream->progress();
  c.pc->flush();
  const int ts = c.pc->transport_state();
  if (ts > 0) c.stream->fail(ts);
  // An SRCAVAIL at the head with no reader blocked: pull into the engine's buffer now so the
  // writer is released as TCP's buffering would release it (else a program that writes
  // on both ends before reading would deadlock). A reader already waiting pulls zero-copy.
  if (c.stream->prefetch_needed() && (s.nonblocking || s.readers == 0) &&
      c.stream->pull_bounce() == 0)
    c.pc->flush();
  update_signals(s);
  const auto now = std::chrono::steady_clock::now();
  if (c.closing == 1 &&
      (ts != 0 || now >= c.deadline || (c.stream->tx_idle() && !c.pc->output_pending()))) {
    c.pc->shutdown();
    c.closing = 2;
    c.deadline = now + close_fin_wait;
  }
  if (c.closing == 2 && (ts != 0 || now >= c.deadline)) c.release();
}

void Runtime::raw_round(Conn& c) {
  c.raw->collect();
  const int ts = c.pc->transport_state();
  if (ts > 0) c.raw->fail(ts);
  if (c.raw_fin && !c.raw_fin_sent && !c.pc->output_pending()) {
    c.pc->shutdown();
    c.raw_fin_sent = true;
  }
}

// RAWMODE: completions move to the socket's buffer; close waits only for the framed
// output to leave (the application's regions were revoked at close).
void Runtime::service_raw(Socket& s) {
  Conn& c = *s.conn;
  c.pc->flush();
  raw_round(c);
  update_signals(s);
  const int ts = c.pc->transport_state();
  const auto now = std::chrono::steady_clock::now();
  if (c.closing == 1 && (ts != 0 || now >= c.deadline || !c.pc->output_pending())) {
    c.pc->shutdown();
    c.closing = 2;
    c.deadline = now + close_fin_wait;
  }
  if (c.closing == 2 && (ts != 0 || now >= c.deadline)) c.release();
}

void Runtime::loop() {
  std::unique_lock lk(mu);
  std::vector<pollfd> pfds;
  std::vector<Socket*> who;
  for (;;) {
    pfds.assign(1, pollfd{wake_fd_, POLLIN, 0});
    who.clear();
    bool closing = false;
    for (const auto& s : socks_) {
      if (!s->conn || !s->conn->pc) continue;
      closing = closing || s->conn->closing != 0;
      const short ev = s->conn->pc->poll_events();
      if (ev == 0) continue;
      pfds.push_back(pollfd{s->conn->pc->poll_fd(), ev, 0});
      who.push_back(s.get());
    }
    lk.unlock();
    ::poll(pfds.data(), pfds.size(), closing ? 20 : -1);
    lk.lock();
    if (pfds[0].revents & POLLIN) {
      std::uint64_t n;
      [[maybe_unused]] const ssize_t r = ESOCK_LIBC(read)(wake_fd_, &n, sizeof n);
    }
    for (std::size_t i = 1; i < pfds.size(); ++i) {
      Socket* s = who[i - 1];
      if (pfds[i].revents != 0 && s->conn && s->conn->pc) s->conn->pc->on_ready(pfds[i].revents);
    }
    for (const auto& s : socks_)
      if (s->conn && s->conn->pc) service(*s);
    // Sockets whose connection is gone (closed and drained, or a fork child's) leave.
    std::erase_if(socks_,
                  [](const std::shared_ptr<Socket>& s) { return !s->conn || !s->conn->pc; });
    cv.notify_all();
  }
}

// fork (docs/sockets.md): the child gets no progress thread. Its copies of DDPMODE sockets
// are orphaned: close works (and never disturbs the parent's connection, since the child
// drops its references to the private descriptors here), data calls fail with ENOTCONN.
void Runtime::at_fork_prepare() {
  get().mu.lock();
}
void Runtime::at_fork_parent() {
  get().mu.unlock();
}
void Runtime::at_fork_child() {
  Runtime& rt = get();
  for (const auto& s : rt.socks_) {
    s->orphaned = true;
    if (s->conn) {
      // Forget, don't tear down: the parent still uses these engines and memory.
      ESOCK_LIBC(close)(s->conn->pc->poll_fd());
      for (int fd : {s->conn->sig_a, s->conn->sig_l}) ESOCK_LIBC(close)(fd);
      (void)s->conn.release();  // leaked in the child on purpose
    }
  }
  rt.socks_.clear();
  ESOCK_LIBC(close)(rt.wake_fd_);
  rt.wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  rt.thread_started_ = false;
  rt.waiters_ = 0;
  rt.mu.unlock();
}

}  // namespace esock::sockets
