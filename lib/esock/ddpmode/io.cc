// DDPMODE data calls: byte-stream (or MSGMODE) reads and writes on the ESTP engine, blocking
// and non-blocking, with rendezvous for large blocking writes and zero-copy pulls for
// blocking reads (docs/sockets.md, docs/stream-protocol.md).
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <span>
#include <vector>

#include "esock/ddpmode/ops.h"
#include "esock/ddpmode/read_async.h"
#include "esock/ddpmode/zcopy_pages.h"
#include "esock/esock.h"
#include "esock/process/config.h"
#include "esock/process/libc.h"
#include "esock/process/page_guard.h"
#include "esock/process/user_memory.h"
#include "esock/runtime/fd_table.h"
#include "esock/runtime/runtime.h"
#include "esock/runtime/socket.h"

namespace esock::sockets {

namespace {

constexpr std::size_t max_rndv_chunk = std::size_t{1} << 30;

ssize_t fail(int err) {
  errno = err;
  return -1;
}

// Why a data call on this socket cannot run, or 0.
int unusable(const Socket& s) {
  if (s.orphaned) return ENOTCONN;  // a fork child's copy
  switch (s.state()) {
    case Socket::State::connected:
      if (s.rawmode()) return EOPNOTSUPP;  // the application drives the queue pair
      return s.conn ? 0 : ENOTCONN;
    case Socket::State::closed:
      return EBADF;  // closed by another thread meanwhile
    case Socket::State::failed:
      return s.error != 0 ? s.error : ENOTCONN;
    default:
      return ENOTCONN;
  }
}

// The kernel's checks on a message before it touches the socket (sendmsg(2), recvmsg(2)):
// EFAULT for a missing header or a missing buffer with a length, and for a send buffer that
// is not all readable (process/user_memory.h; a receive buffer is checked as far as a read
// is about to fill it: writable_prefix), EMSGSIZE for more than IOV_MAX pieces, EINVAL
// when the lengths add up past SSIZE_MAX. 0 when the message is usable.
int check_msg(const msghdr* m, bool receive) {
  if (m == nullptr || (m->msg_iovlen > 0 && m->msg_iov == nullptr)) return EFAULT;
  if (m->msg_iovlen > static_cast<std::size_t>(IOV_MAX)) return EMSGSIZE;
  std::size_t total = 0;
  for (std::size_t i = 0; i < m->msg_iovlen; ++i) {
    const iovec& v = m->msg_iov[i];
    if (v.iov_len > 0 && v.iov_base == nullptr) return EFAULT;
    if (v.iov_len > static_cast<std::size_t>(SSIZE_MAX) - total) return EINVAL;
    total += v.iov_len;
  }
  for (std::size_t i = 0; !receive && i < m->msg_iovlen; ++i) {
    const iovec& v = m->msg_iov[i];
    if (!user_memory_ok(v.iov_base, v.iov_len, false)) return EFAULT;
  }
  return 0;
}

// Whether the first n octets of dst can be written: what a read is about to copy into (as
// copy_to_user finds out only for what it copies, so a large buffer that receives a few
// octets is not touched, or committed, beyond them).
bool writable_prefix(std::span<const mut_bytes> dst, std::size_t n) {
  for (const mut_bytes& d : dst) {
    if (n == 0) break;
    const std::size_t k = std::min(n, d.size());
    if (!user_memory_ok(d.data(), k, true)) return false;
    n -= k;
  }
  return true;
}

std::size_t total_len(const msghdr* m) {
  std::size_t t = 0;
  for (std::size_t i = 0; i < m->msg_iovlen; ++i) t += m->msg_iov[i].iov_len;
  return t;
}

// A writer whose rendezvous (by Read, or its Write into the peer's sink) did not finish
// (the socket failed, was closed, or an error came): the buffer goes back to the
// application only once the connection no longer reads it (a peer's RDMA Read being
// answered, octets TCP may retransmit; issue 20, item 1). The offer is revoked at once;
// what is in flight is released by the peer's ACK, or when the transport fails or the
// connection is released (which resets TCP). A peer that neither ACKs nor lets TCP give up
// (a zero window it keeps answering probes for) holds it at most ESOCK_TIMEOUT_MS: then
// the connection is reset.
void release_lent(Socket& s, DdpRuntime& rt, std::unique_lock<RuntimeMutex>& lk) {
  if (s.conn && s.conn->stream) {
    s.conn->stream->cancel_rndv();
    s.conn->stream->cancel_sink_write();
  }
  rt.wait_or_reset(lk, s, std::chrono::milliseconds(config().timeout_ms), [&] {
    const estp::Stream* st = s.conn ? s.conn->stream.get() : nullptr;
    return st && !(st->rndv_released() && st->sink_write_released());
  });
}

// A blocking write of at least T octets into the sink the peer's waiting reader offered
// (section 6.2): returns the octets written (the call goes on with the rest), 0 when the
// sink could not be used after all, or -errno.
std::ptrdiff_t write_into_sink(Socket& s, DdpRuntime& rt, std::unique_lock<RuntimeMutex>& lk,
                               bytes_view src) {
  const std::ptrdiff_t k = s.conn->stream->write_sink(src);
  if (k == -EAGAIN) return 0;
  if (k < 0) return k;
  rt.note_activity();
  rt.after_op(s);
  for (;;) {
    if (const int err = unusable(s); err != 0) {
      release_lent(s, rt, lk);
      return -err;
    }
    estp::Stream& cur = *s.conn->stream;
    if (const auto n = cur.sink_write_finished()) return static_cast<std::ptrdiff_t>(*n);
    if (cur.error() != 0 || cur.peer_gone()) {
      // Handed to the transport already: written, as a kernel write whose octets were in
      // the send buffer (the error shows on the next call). Else the write fails.
      const bool sent = cur.sink_write_sent();
      const int err = cur.error() ? cur.error() : EPIPE;
      release_lent(s, rt, lk);
      return sent ? k : -err;
    }
    rt.prefetch(s);  // a peer writing to us at the same time: take its data
    rt.wait(lk);
  }
}

// AZ-SDP (ESOCK_ZCOPY_ASYNC and _ASYNC_COW; docs/sockets.md, "Zero-copy modes"): how the next piece
// of a large write goes. Only whole pages of the buffer go by reference, guarded read-only until
// the peer pulled them (a page shared with other data could not be guarded without
// stopping whoever writes that data); the octets before the first whole page and after the
// last are copied.
struct AsyncStep {
  enum class Kind : std::uint8_t {
    taken,   // `n` octets went as an asynchronous rendezvous: the call goes on
    copy,    // copy the next `n` octets (the unaligned head or tail)
    sync,    // this piece cannot go asynchronously: as ESOCK_ZCOPY_SYNC would
    waited,  // the pipeline was full (or no credit): waited a round, try again
    failed   // err
  } kind;
  std::size_t n = 0;
  int err = 0;
};

AsyncStep write_async(Socket& s, DdpRuntime& rt, std::unique_lock<RuntimeMutex>& lk,
                      const std::uint8_t* p, std::size_t len, bool cow) {
  const std::uintptr_t pg = page_size();
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t first = (a + pg - 1) & ~(pg - 1);
  const std::uintptr_t last = (a + len) & ~(pg - 1);
  if (first >= last) return {AsyncStep::Kind::copy, len};  // no whole page: a short tail
  if (first > a) return {AsyncStep::Kind::copy, first - a};
  const std::size_t n = std::min<std::size_t>(last - first, max_rndv_chunk);
  // A buffer on this thread's stack: a guarded stack page would leave the kernel no room
  // for a signal frame (the fault's own included), so it waits for its pull instead.
  if (on_own_stack(p, n)) return {AsyncStep::Kind::sync};
  // Whether the application can write the pages: the pieces already guarded (the same
  // buffer written again) were when first guarded, and touching them to find out would
  // wait in the guard; the rest is probed. (Reading /proc/self/maps instead cost a DPDK
  // process milliseconds per write: bench_azsdp streamed 64 KiB at 15 MB/s.)
  int guard = -1;
  const bool writable = page_guard::all_unguarded(
      p, n, [](const void* b, std::size_t k) { return user_memory_ok(b, k, true); });
  // A buffer the application cannot write (a read-only file mapping) could still be
  // unmapped under the transport, which only a guard would make wait: it waits for its
  // pull, as do buffers when no guard is to be had (ENOSPC).
  if (!writable || (guard = page_guard::protect(const_cast<std::uint8_t*>(p), n)) < 0)
    return {AsyncStep::Kind::sync};
  std::uint32_t id = 0;
  const int rc = s.conn->stream->start_rndv({p, n}, &id);
  if (rc == 0) {
    s.conn->async_writes.push_back({.rndv_id = id, .guard = guard, .cow = cow, .src = p, .len = n});
    rt.mark_due(s);  // its pull is watched every round
    ++s.conn->async_writes_total;
    rt.drain_async_writes_at_exit();
    rt.note_activity();
    return {AsyncStep::Kind::taken, n};
  }
  page_guard::release(guard);
  if (rc == EBUSY || rc == EAGAIN) {  // the oldest must be pulled first, or credit come back
    rt.prefetch(s);
    if (rt.wait_interruptible(lk) == EINTR) return {AsyncStep::Kind::failed, 0, EINTR};
    return {AsyncStep::Kind::waited};
  }
  if (rc == ENOMEM) return {AsyncStep::Kind::sync};  // the sync path copies then
  return {AsyncStep::Kind::failed, 0, rc};
}

constexpr int fell_back = -1;

// A connect still in progress (conn_async.cc): as TCP in SYN-SENT, a non-blocking call gets
// EAGAIN and a blocking one waits for the outcome (a signal ends the wait with EINTR);
// fell_back when it ended as plain TCP.
int await_connected(Socket& s, DdpRuntime& rt, std::unique_lock<RuntimeMutex>& lk, bool nonblock) {
  while (s.state() == Socket::State::connecting) {
    if (nonblock) return EAGAIN;
    if (rt.wait_interruptible(lk) == EINTR) return EINTR;
  }
  // Fell back to plain TCP meanwhile: the number is a kernel socket now (the caller makes
  // its call there).
  return s.state() == Socket::State::plain ? fell_back : 0;
}

ssize_t write_error(int err, int flags) {
  // As TCP: a write on a stream shut for writing raises SIGPIPE unless MSG_NOSIGNAL.
  if (err == EPIPE && !(flags & MSG_NOSIGNAL)) ::pthread_kill(::pthread_self(), SIGPIPE);
  return fail(err);
}

}  // namespace

namespace {

// A buffer an asynchronous read still fills (read_async.h) is no-access until its octets
// landed: a write from it waits for them (a copy or a send from it, the stack's, would
// fault holding the lock the landing needs). One relaxed load with no such read out.
bool from_landing_pages(const msghdr* m) {
  if (m == nullptr || m->msg_iov == nullptr || m->msg_iovlen > static_cast<std::size_t>(IOV_MAX))
    return false;  // check_msg's to refuse
  for (std::size_t i = 0; i < m->msg_iovlen; ++i)
    if (page_guard::overlaps_no_access(m->msg_iov[i].iov_base, m->msg_iov[i].iov_len)) return true;
  return false;
}

ssize_t sendmsg_on(int fd, const std::shared_ptr<Socket>& s, const msghdr* msg, int flags) {
  DdpRuntime& rt = DdpRuntime::get();
  std::unique_lock lk(rt.mu, std::defer_lock);
  if (from_landing_pages(msg)) [[unlikely]] {
    lk.lock();  // this thread runs the rounds that land them meanwhile
    while (from_landing_pages(msg))
      if (rt.wait_interruptible(lk) == EINTR) return fail(EINTR);
    lk.unlock();
  }
  if (const int err = check_msg(msg, false); err != 0) return fail(err);
  lk.lock();
  const bool nonblock = s->nonblocking || (flags & MSG_DONTWAIT);
  if (const int err = rt.take_over(lk, *s, !nonblock); err != 0) return fail(err);  // fork
  if (const int err = await_connected(*s, rt, lk, nonblock); err != 0) {
    if (err != fell_back) return fail(err);
    lk.unlock();
    return ESOCK_LIBC(sendmsg)(fd, msg, flags);
  }
  if (const int err = unusable(*s); err != 0) return fail(err);
  const std::size_t total = total_len(msg);
  const bool msgmode = s->msgmode();
  std::size_t done = 0;
  bool rndv_refused = false;  // a registration failed: copies from here on
  for (std::size_t i = 0; i < msg->msg_iovlen || (msgmode && total == 0 && i == 0); ++i) {
    const std::size_t ilen = i < msg->msg_iovlen ? msg->msg_iov[i].iov_len : 0;
    const auto* base = ilen ? static_cast<const std::uint8_t*>(msg->msg_iov[i].iov_base) : nullptr;
    std::size_t off = 0;
    do {
      if (const int err = unusable(*s); err != 0) return done ? ssize_t(done) : fail(err);
      estp::Stream& st = *s->conn->stream;
      const std::size_t rest = ilen - off;
      std::size_t copy_len = rest;  // what the copy below may take
      const int zmode = zcopy_mode(*s);
      const std::size_t threshold = zmode == ESOCK_ZCOPY_COPY ? 0 : config().rndv_threshold;
      // Rendezvous by RDMA Write (section 6.2) when the peer's reader waits with a sink.
      const std::size_t sink_threshold = zmode == ESOCK_ZCOPY_COPY ? 0 : config().sink_threshold;
      bool async_copy = false;  // AZ-SDP copies this piece (a head or tail)
      const bool async = zcopy_async(zmode);
      if (async && !nonblock && !msgmode && !rndv_refused && threshold != 0 && rest >= threshold &&
          rt.progresses_unattended()) {
        const AsyncStep a = write_async(*s, rt, lk, base + off, std::min(rest, max_rndv_chunk),
                                        zmode == ESOCK_ZCOPY_ASYNC_COW);
        switch (a.kind) {
          case AsyncStep::Kind::taken:
            off += a.n;
            done += a.n;
            rt.after_op(*s);
            continue;
          case AsyncStep::Kind::waited:
            continue;
          case AsyncStep::Kind::failed:
            if (a.err == EINTR) return done ? ssize_t(done) : fail(EINTR);
            return done ? ssize_t(done) : write_error(a.err, flags);
          case AsyncStep::Kind::copy:
            copy_len = a.n;
            async_copy = true;
            break;
          case AsyncStep::Kind::sync:
            break;
        }
      }
      // (No sink while asynchronous writes are out: sink_writable() waits for them.)
      if (!async_copy && !nonblock && sink_threshold != 0 && rest >= sink_threshold && !msgmode &&
          st.sink_writable()) {
        const std::ptrdiff_t k =
            write_into_sink(*s, rt, lk, {base + off, std::min(rest, max_rndv_chunk)});
        if (k < 0) return done ? ssize_t(done) : write_error(static_cast<int>(-k), flags);
        if (k > 0) {
          off += static_cast<std::size_t>(k);
          done += static_cast<std::size_t>(k);
          rt.after_op(*s);
          continue;
        }
      }
      // Rendezvous (section 6.1): blocking writes of at least T octets; the call returns
      // once the peer pulled them.
      if (!async_copy && !nonblock && !rndv_refused && threshold != 0 && rest >= threshold &&
          (!msgmode || msg->msg_iovlen == 1)) {
        if (st.rndv_active()) {
          // A write that waits for its own rendezvous starts when no other is out: the
          // asynchronous ones before it (the mode changed meanwhile) or another thread's.
          rt.prefetch(*s);
          if (rt.wait_interruptible(lk) == EINTR) return done ? ssize_t(done) : fail(EINTR);
          continue;
        }
        const std::size_t n = msgmode ? rest : std::min(rest, max_rndv_chunk);
        std::uint32_t mine = 0;
        const int rc = st.start_rndv({base + off, n}, &mine);
        if (rc == 0) {
          rt.note_activity();
          rt.after_op(*s);
          std::optional<std::size_t> pulled;
          for (;;) {
            // Checked first: a close by another thread may release the stream meanwhile.
            if (const int err = unusable(*s); err != 0) {
              release_lent(*s, rt, lk);
              return done ? ssize_t(done) : fail(err);
            }
            estp::Stream& cur = *s->conn->stream;
            // Once the peer said RDMADONE the data was delivered: a later reset or close
            // only delays the release, the write succeeds.
            // (Asynchronous writes another thread made meanwhile queue behind this one.)
            if (cur.rndv_front_id() == mine && (pulled = cur.rndv_finished())) break;
            if (!cur.rndv_pulled() && (cur.error() != 0 || cur.peer_gone())) break;
            rt.prefetch(*s);  // a peer writing to us at the same time: take its data
            rt.wait(lk);
          }
          if (!pulled) {
            const int err = s->conn->stream->error() ? s->conn->stream->error() : EPIPE;
            release_lent(*s, rt, lk);
            return done ? ssize_t(done) : write_error(err, flags);
          }
          off += n;  // MSGMODE: a truncating reader pulled less; the message is sent
          done += n;
          rt.after_op(*s);
          continue;
        }
        // The buffer could not be registered (an RNIC's largest region, the memory-lock
        // limit): a byte stream sends the rest of this call by copy. (A MSGMODE message
        // that big cannot: it must fit the receiver's buffers otherwise.)
        if (rc == ENOMEM && !msgmode) {
          rndv_refused = true;
          continue;
        }
        if (rc != EAGAIN) return done ? ssize_t(done) : write_error(rc, flags);
        rt.prefetch(*s);
        if (rt.wait_interruptible(lk) == EINTR) return done ? ssize_t(done) : fail(EINTR);
        continue;
      }
      if (msgmode && nonblock && !st.can_write_whole(total - done)) {
        return done ? ssize_t(done) : fail(EAGAIN);
      }
      const bool last = i + 1 >= msg->msg_iovlen && copy_len == rest;
      const std::ptrdiff_t r = st.write({base + off, copy_len}, last);
      if (r >= 0) {
        off += static_cast<std::size_t>(r);
        done += static_cast<std::size_t>(r);
        rt.note_activity();
        rt.after_op(*s);
        if (rest == 0) break;
        continue;
      }
      if (r != -EAGAIN) return done ? ssize_t(done) : write_error(static_cast<int>(-r), flags);
      if (nonblock) return done ? ssize_t(done) : fail(EAGAIN);
      // Waiting for room: the peer may be waiting for us to take its advertised data (an
      // echo server's client writes on before it reads). A signal interrupts as it would
      // the kernel's send (signal(7)).
      rt.prefetch(*s);
      if (rt.wait_interruptible(lk) == EINTR) return done ? ssize_t(done) : fail(EINTR);
    } while (off < ilen);
  }
  return static_cast<ssize_t>(done);
}

ssize_t recvmsg_on(int fd, std::shared_ptr<Socket> s, msghdr* msg, int flags) {
  if (const int err = check_msg(msg, true); err != 0) return fail(err);
  if (flags & MSG_OOB) return fail(EINVAL);
  // A buffer an asynchronous write still sends from (ESOCK_ZCOPY_ASYNC) is read-only until
  // the peer pulled it: nothing goes into it before (a copy, or a pull the stack places,
  // would wait in the fault holding what the release needs). This thread runs the rounds
  // that reap the pulled writes meanwhile: sleeping on the guard instead left it to the
  // progress thread's next wake-up, and a 64 KiB ping-pong took 5 ms (bench_azsdp).
  DdpRuntime& rt = DdpRuntime::get();
  std::unique_lock lk(rt.mu);
  const auto guarded = [msg] {
    for (std::size_t i = 0; i < msg->msg_iovlen; ++i)
      if (page_guard::overlaps(msg->msg_iov[i].iov_base, msg->msg_iov[i].iov_len)) return true;
    return false;
  };
  // Marked awaited meanwhile: copy-on-write (ESOCK_ZCOPY_ASYNC_COW) copies the pages and
  // gives them back rather than wait for the peer's pull.
  page_guard::Awaiting awaiting;
  while (page_guard::any() && guarded()) {
    for (std::size_t i = 0; i < msg->msg_iovlen; ++i)
      page_guard::mark_awaited(msg->msg_iov[i].iov_base, msg->msg_iov[i].iov_len, &awaiting);
    if (rt.wait_interruptible(lk) == EINTR) {
      page_guard::unmark_awaited(&awaiting);
      return fail(EINTR);
    }
  }
  page_guard::unmark_awaited(&awaiting);
  const bool nonblock = s->nonblocking || (flags & MSG_DONTWAIT);
  if (const int err = rt.take_over(lk, *s, !nonblock); err != 0) return fail(err);  // fork
  if (const int err = await_connected(*s, rt, lk, nonblock); err != 0) {
    if (err != fell_back) return fail(err);
    lk.unlock();
    return ESOCK_LIBC(recvmsg)(fd, msg, flags);
  }
  if (const int err = unusable(*s); err != 0) return fail(err);
  const bool peek = flags & MSG_PEEK;
  const bool waitall = (flags & MSG_WAITALL) && !peek && !s->msgmode();
  msg->msg_flags = 0;
  std::vector<mut_bytes> dst;
  for (std::size_t i = 0; i < msg->msg_iovlen; ++i)
    dst.emplace_back(static_cast<std::uint8_t*>(msg->msg_iov[i].iov_base), msg->msg_iov[i].iov_len);
  const std::size_t want = total_len(msg);
  if (want == 0 && !s->msgmode()) return 0;
  std::size_t got = 0;
  bool zero_copy = false;
  bool sink = false, interrupted = false;
  for (;;) {
    if (const int err = unusable(*s); err != 0) {
      // A sink or pull of ours must not outlive the call: the buffer goes back to the
      // application.
      if (s->conn && s->conn->stream) {
        if (sink) s->conn->stream->drop_sink();
        if (zero_copy) s->conn->stream->cancel_pull();
      }
      return got ? ssize_t(got) : fail(err);
    }
    estp::Stream& st = *s->conn->stream;
    if (s->rd_shut && !sink) {
      if (zero_copy) st.cancel_pull();  // a late Read Response must not land in the buffer
      return static_cast<ssize_t>(got);
    }
    estp::ReadOut r;
    bool fresh = false;  // r came from a sink or a pull: read the queue again before waiting
    if (sink) {
      // Our buffer is offered as a sink (section 6.2): wait for the peer's WRITEDONE or
      // other stream data. A signal or shutdown(SHUT_RD) withdraws it, but the buffer stays
      // the peer's until the answer (one round trip): a Write may already be on its way.
      const auto res = st.sink_result();
      if (!res) {
        ++s->readers;
        if (!interrupted && s->rd_shut) {
          interrupted = true;
          st.cancel_sink();
          rt.after_op(*s);
        }
        if (interrupted) {
          // A peer that never answers is given up after ESOCK_TIMEOUT_MS (reset).
          rt.wait_or_reset(lk, *s, std::chrono::milliseconds(config().timeout_ms), [&] {
            return s->conn && s->conn->stream && s->conn->stream->sink_pending();
          });
        } else if (rt.wait_interruptible(lk) != 0) {
          interrupted = true;
          st.cancel_sink();
          rt.after_op(*s);
        }
        --s->readers;
        continue;
      }
      sink = false;
      if (res->n == 0) {
        if (res->err != EAGAIN) return got ? ssize_t(got) : fail(res->err);
        continue;  // void: the queue holds what came instead (after a signal: or EINTR)
      }
      r = *res;
      fresh = true;
    } else if (zero_copy) {
      const auto res = st.pull_result();
      if (!res) {
        ++s->readers;
        rt.wait(lk);
        --s->readers;
        continue;
      }
      zero_copy = false;
      r = *res;
      fresh = true;
    } else {
      // Skip what an earlier round of MSG_WAITALL already filled.
      std::vector<mut_bytes> rest;
      std::size_t skip = got;
      for (const mut_bytes& d : dst) {
        if (skip >= d.size()) {
          skip -= d.size();
          continue;
        }
        rest.push_back(d.subspan(skip));
        skip = 0;
      }
      if (!writable_prefix(rest, st.readable_octets()))
        return got ? ssize_t(got) : fail(EFAULT);  // nothing consumed
      r = st.read(rest, peek);
      if (r.err == EAGAIN && st.pull_needed()) {
        // AZ-SDP (ESOCK_ZCOPY_ASYNC, _ASYNC_COW): returns at once, the octets land later
        // (read_async.h). Not for MSGMODE: a message's end is known only once it is pulled.
        const std::size_t at_least = config().async_read_threshold;
        if (zcopy_async(zcopy_mode(*s)) && at_least != 0 && !nonblock && !peek && !s->msgmode() &&
            rest.size() == 1 && rt.progresses_unattended()) {
          const std::size_t n =
              start_async_read(*s, rt, rest.front(), at_least, waitall ? want - got : 0);
          if (n > 0) {
            rt.note_activity();
            rt.after_op(*s);
            return static_cast<ssize_t>(got + n);
          }
        }
        // Zero-copy into the caller's buffer when it waits anyway (which a peer's data then
        // fills, so it must all be writable); else via the engine.
        if (!nonblock && !peek && rest.size() == 1 &&
            user_memory_ok(rest.front().data(), rest.front().size(), true) &&
            st.pull(rest.front()) == 0) {
          zero_copy = true;
        } else {
          st.pull_bounce(want - got);  // MSGMODE: a message this reader can take whole
        }
        rt.after_op(*s);
        if (nonblock && !zero_copy) return got ? ssize_t(got) : fail(EAGAIN);
        continue;
      }
      // Nothing queued and a large buffer that waits anyway: offer it to the peer's writer
      // (section 6.2), which then writes straight into it.
      if (r.err == EAGAIN && r.n == 0 && !nonblock && !peek && !interrupted && rest.size() == 1 &&
          st.sink_possible(rest.front().size()) &&
          user_memory_ok(rest.front().data(), rest.front().size(), true) &&
          st.offer_sink(rest.front()) == 0) {
        sink = true;
        rt.after_op(*s);
        continue;
      }
    }
    if (r.n > 0) {
      rt.note_activity();
      s->empty_reads = 0;
    }
    rt.after_op(*s);
    if (r.err != 0 && r.err != EAGAIN) return got ? ssize_t(got) : fail(r.err);
    got += r.n;
    if (r.truncated) msg->msg_flags |= MSG_TRUNC;
    if (r.eom) msg->msg_flags |= MSG_EOR;
    const bool eof = r.err == 0 && r.n == 0 && !r.eom;
    if (r.eom || eof || (got > 0 && (!waitall || got == want))) return static_cast<ssize_t>(got);
    if (nonblock) {
      if (got == 0) rt.empty_read(*s);
      return got ? ssize_t(got) : fail(EAGAIN);
    }
    if (interrupted) return got ? ssize_t(got) : fail(EINTR);  // while a sink was out
    if (fresh) continue;  // MSG_WAITALL: what queued behind the sink or pull comes first
    ++s->readers;
    const int signalled = rt.wait_interruptible(lk);
    --s->readers;
    if (signalled != 0) {
      rt.after_op(*s);  // the signal's readiness, which a blocked reader leaves alone
      return got ? ssize_t(got) : fail(EINTR);
    }
  }
}

}  // namespace

// The octets each call moved are counted for esock-stat (one relaxed add per call).
ssize_t ddp_sendmsg(int fd, const msghdr* msg, int flags) {
  auto s = fd_get(fd);
  if (!s) return fail(EBADF);
  const ssize_t r = sendmsg_on(fd, s, msg, flags);
  if (r > 0) s->bytes_tx.fetch_add(static_cast<std::uint64_t>(r), std::memory_order_relaxed);
  return r;
}

ssize_t ddp_recvmsg(int fd, msghdr* msg, int flags) {
  auto s = fd_get(fd);
  if (!s) return fail(EBADF);
  const ssize_t r = recvmsg_on(fd, s, msg, flags);
  if (r > 0 && !(flags & MSG_PEEK))  // a peek moves nothing
    s->bytes_rx.fetch_add(static_cast<std::uint64_t>(r), std::memory_order_relaxed);
  return r;
}

int ddp_shutdown(int fd, int how) {
  auto s = fd_get(fd);
  if (!s) return static_cast<int>(fail(EBADF));
  if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR) return static_cast<int>(fail(EINVAL));
  DdpRuntime& rt = DdpRuntime::get();
  std::unique_lock lk(rt.mu);
  if (const int err = rt.take_over(lk, *s, true); err != 0) return static_cast<int>(fail(err));
  if (s->rawmode() && s->state() == Socket::State::connected && s->conn && !s->orphaned) {
    // RAWMODE: no new send-side work; TCP FIN once what is queued has left.
    if (how != SHUT_RD) {
      s->conn->raw->shut_write();
      s->conn->raw_fin = true;
    }
    if (how != SHUT_WR) s->rd_shut = true;
    rt.after_op(*s);
    rt.notify();
    return 0;
  }
  if (const int err = unusable(*s); err != 0) return static_cast<int>(fail(err));
  if (how != SHUT_RD) s->conn->stream->shutdown_write();
  if (how != SHUT_WR) s->rd_shut = true;  // blocked and later reads return 0
  rt.after_op(*s);
  rt.notify();
  return 0;
}

}  // namespace esock::sockets
