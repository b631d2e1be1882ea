// One DDPMODE socket as the application sees it, shared by every descriptor number that
// refers to it (dup). The connection (stream engine over a provider) is attached once
// connect/accept completes; see docs/sockets.md for the state machine and the fd model.
// Everything below `mu` is guarded by the runtime's lock (runtime.h) instead.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "base/time.h"
#include "esock/esock.h"
#include "esock/estp/stream.h"
#include "esock/process/option_socket.h"
#include "esock/process/readiness_socket.h"
#include "esock/providers/provider.h"
#include "esock/rawmode/raw_qp.h"
#include "esock/runtime/close_ladder.h"
#include "esock/runtime/fork_handover.h"
#include "esock/runtime/fork_relay.h"

namespace esock::sockets {

class Socket;
class DdpRuntime;

// An established DDPMODE connection. Its readiness is the application's number itself: a
// readiness socket (process/readiness_socket.h) the runtime sets through the number
// (fd_with_number), so a connection takes one descriptor and the library keeps none.
struct Conn {
  ~Conn() { release(); }
  void release();  // closes the transport and the library's descriptors

  std::unique_ptr<ProviderConn> pc;
  std::unique_ptr<estp::Stream> stream;  // null in RAWMODE
  std::unique_ptr<RawQp> raw;            // RAWMODE only
  int number = -1;  // the application's number tried first (-1: none names the socket)
  ReadinessState ready;
  bool sig_eof = false, sig_hup = false;
  // Own-stack providers: the kernel TCP socket (never connected) that keeps the SO_*/TCP_*
  // options the application set, shared by the connections with the same ones
  // (process/option_socket.h); null while it set none (a fresh socket's are read).
  std::shared_ptr<const OptionSet> options;
  CloseLadder close_ladder;  // after the application's close (close_ladder.h)
  // RAWMODE shutdown(SHUT_WR): FIN once drained.
  bool raw_fin = false, raw_fin_sent = false;
  bool raw_input_held = false;  // RAWMODE: until the first work request (docs/sockets.md)
  // Asynchronous zero-copy writes (ESOCK_ZCOPY_ASYNC) the peer has not pulled yet: their
  // page guards (process/page_guard.h), in the order of the stream's rendezvous sources.
  struct AsyncWrite {
    std::uint32_t rndv_id;
    int guard;  // -1: the pages were not writable anyway, or copied and given back
    // Copy-on-write (ESOCK_ZCOPY_ASYNC_COW): the source, and the copy the peer reads from
    // once a thread waited for the pages (reap_async_writes).
    bool cow = false;
    const std::uint8_t* src = nullptr;
    std::size_t len = 0;
    std::unique_ptr<std::uint8_t[]> copy{};
  };
  std::deque<AsyncWrite> async_writes;
  // Counters (esock-stat): asynchronous writes started, write faults their guards held,
  // and copies made on write (with their octets).
  std::uint64_t async_writes_total = 0, guard_faults = 0, cow_copies = 0, cow_octets = 0;
  void release_guard(int guard);  // page_guard::release, counting its faults
  // An asynchronous read (AZ-SDP's receiver, ddpmode/read_async.cc) returned already: the
  // stream's zero-copy pull lands in `staging` and then replaces the application's no-access
  // pages at `dst` (process/page_flip.h). At most one per connection (the stream pulls one
  // source at a time); the next read waits for it, as does close, fork and any touch.
  struct AsyncRead {
    int guard = -1;
    std::uint8_t* dst = nullptr;
    void* staging = nullptr;
    std::size_t len = 0;
    bool own = false;  // staging holds dst's own pages (page_flip::staging)
  };
  std::optional<AsyncRead> async_read;
  std::uint64_t async_reads_total = 0, async_read_octets = 0;
  // Asynchronous modes: an advertised source no read has come for is fetched ahead only
  // from this time on (DdpRuntime::prefetch); unset while none waits.
  std::optional<Instant> prefetch_at;
  // fork (runtime/fork_handover.h): the connection's word in the process family's table
  // (kernel-TCP connections only), and where this process stands: none (the connection is
  // ours), deciding (we forked: until our application uses or closes it, or fork_deadline),
  // inherited (a child's copy, until fork_parent decides). Neither is polled meanwhile.
  enum class Fork { none, deciding, inherited };
  ForkHandover::Slot fork_slot;
  Fork fork = Fork::none;
  Instant fork_deadline{};
  pid_t fork_parent = 0;
  // fork with an own stack (runtime/fork_relay.h): the parent's end of the pair the last
  // child's copy became, and that child's end between the fork handlers.
  std::unique_ptr<ForkRelay> relay;
  int relay_child_end = -1;
  // What the transport's activity hook names (ProviderConn::set_activity_hook): the runtime
  // and socket whose next round looks at this connection; set for `hooked` (DdpRuntime::
  // hook_activity).
  struct ActivityHook {
    DdpRuntime* rt = nullptr;
    Socket* s = nullptr;
  } activity_hook;
  const ProviderConn* hooked = nullptr;
};

// A listener of an own stack whose fork children accept through the parent (ddpmode/
// listen_relay.cc; docs/sockets.md, "Providers", fork): in a child, the numbers naming the
// listener become the children's end of a SOCK_SEQPACKET pair; a child's accept asks the
// parent (a one-octet request), and the parent's runtime answers with the child's end of a
// fork relay (runtime/fork_relay.h) and the peer's name. Under the runtime lock.
class ListenRelay {
 public:
  virtual ~ListenRelay() = default;
  virtual int poll_fd() const = 0;    // the parent's end: readable when a child asks
  virtual int child_end() const = 0;  // what the children's numbers become at fork
  // Answers the children's requests from the listener's ready connections: each goes to a
  // hidden socket (no number; its relay active) the runtime adds from *adopted.
  virtual void step(Socket& listener, std::vector<std::shared_ptr<Socket>>* adopted) = 0;
};

// A listening DDPMODE socket of an own-stack provider: the listener lives in the
// provider's stack; the application's number is A of a socketpair, readable while a
// connection waits in the accept queue.
struct StackListen {
  ~StackListen() { release(); }
  void release();  // stops listening, closes the descriptors

  std::unique_ptr<ProviderListener> pl;
  int sig_a = -1, sig_l = -1, opt_fd = -1;
  bool sig_readable = false;

  // Set-up off the accept path (ARCHITECTURE.md, issue 20 item 7): the runtime takes TCP
  // connections from the stack's accept queue and runs their MPA negotiation in its rounds;
  // accept() returns only negotiated ones, so a slow or silent peer delays nobody. Bounded:
  // at most max_negotiating at a time, each for setup_timeout, and no more than backlog
  // negotiating and ready together (the rest wait in TCP's own accept queue).
  struct Negotiating {
    std::unique_ptr<ProviderConn> pc;
    Instant deadline;
    Instant plain_at;  // a peer silent until then does not speak esock (with fallback)
  };
  static constexpr std::size_t max_negotiating = 64;
  mpa::Config mpa;  // the responder's settings, fixed at listen()
  std::size_t backlog = 1;
  Duration setup_timeout{};
  // Peers without esock (docs/sockets.md): with fallback, accept() hands out a peer that
  // is silent for fallback_after, or whose first octets are not MPA, as a plain kernel
  // socket with all it sent unread; without, it is dropped (setup_failed, setup_timed_out).
  bool fallback = false;
  Duration fallback_after{};
  std::uint64_t fell_back = 0;
  // ksock: the accept queue the processes of a fork family share (runtime/listen_queue.h);
  // set up connections go there instead of `ready` (which then holds only those the full
  // queue did not take yet), and the application's number is its receiving end, not sig_a.
  int queue_in = -1, queue_out = -1;
  bool shared() const { return queue_in >= 0; }
  // A fork child's copy takes no TCP connection from the listening socket until its
  // application calls accept on it (a child that only closes it, a forking server's, never
  // takes a connection it would then drop).
  bool dormant = false;
  std::deque<Negotiating> negotiating;
  std::deque<std::unique_ptr<ProviderConn>> ready;
  std::unique_ptr<ListenRelay> fork_relay;  // an own stack's byte-stream listener
  // Connections never delivered: negotiation failed (rejected, reset, not MPA) or timed out.
  std::uint64_t setup_failed = 0, setup_timed_out = 0;
};

// A connect in progress (ddpmode/conn_async.cc): TCP, then MPA as the initiator, moved on by
// the runtime's rounds so that a non-blocking connect returns at once (EINPROGRESS) and a
// blocking one waits interruptibly. The application's number is already the signal's end A
// (docs/sockets.md, "fd model"), polling neither readable nor writable until the end. All
// under the runtime lock.
class Connecting {
 public:
  virtual ~Connecting() = default;  // closes what it still holds (a close while connecting)
  // The descriptor the progress thread waits on (-1: the own stack's polling covers it).
  virtual int poll_fd() const = 0;
  virtual short poll_events() const = 0;
  virtual void on_ready(short revents) = 0;
  // Moves the set-up on; true once it ended: the socket is then connected, failed, or
  // (peers without esock) plain, its number handed back to a kernel socket.
  virtual bool step(Socket& s, Instant now) = 0;
  virtual Instant due() const = 0;  // the latest time step() must run (a deadline)
  // The kernel socket SO_*/TCP_* options are read from meanwhile, and the local name
  // (getsockname).
  virtual int option_fd() const = 0;
  // An own stack's: where the options set meanwhile go (as a connection's, Conn::options);
  // null when they go to option_fd() (kernel TCP).
  virtual std::shared_ptr<const OptionSet>* own_options() = 0;
  virtual int local_name(sockaddr* addr, socklen_t* len) const = 0;
  // A connect() waits for the end in this process (a fallback then leaves the plain
  // socket's connect to it).
  virtual void set_waiter(bool on) = 0;
  // A fork child's copy: closes its descriptors and touches nothing else (the transport
  // and an own stack are the parent's); the object is then leaked on purpose.
  virtual void drop_descriptors() = 0;
};

// An epoll set the application added a DDPMODE number to (shim/wait.cc): the runtime keeps
// the set watching the number when the file behind it changes (a connect falling back to
// plain TCP). Guarded by epoll_watch_mutex(), which an application's epoll_ctl holds across
// its kernel call and the fork handlers hold across fork (so no child inherits it held);
// taken after the runtime lock, before the fd table's.
struct EpollWatch {
  int epfd;
  int fd;
  std::uint32_t events;
  std::uint64_t data;
};

std::mutex& epoll_watch_mutex();

class Socket {
 public:
  // armed: DDPMODE set, not yet connected or listening (the app's fd is the TCP socket).
  // connecting: connect() started (`connecting`), the app's number is already the signal.
  // failed: connect or negotiation failed (calls report `error`).
  // plain: the connect fell back to plain TCP; the number left DDPMODE.
  enum class State { armed, connecting, listening, connected, failed, plain, closed };

  State state() const { return state_; }
  void set_state(State s) { state_ = s; }
  bool msgmode() const { return msgmode_; }
  void set_msgmode(bool on) { msgmode_ = on; }
  bool rawmode() const { return rawmode_; }
  void set_rawmode(bool on) { rawmode_ = on; }

  std::mutex mu;  // option changes while armed
  // Application octets written and read (esock-stat); counted once per call, relaxed.
  std::atomic<std::uint64_t> bytes_tx{0}, bytes_rx{0};

  // Guarded by the runtime lock.
  std::atomic<int> fd_refs{1};  // descriptor numbers in the table that name this socket
  bool nonblocking = false;
  bool orphaned = false;  // a fork child's copy: only close works
  // A fork child's copy of an own stack's listener (ListenRelay): the number is the family
  // queue's children's end; want_sent: this process asked its parent for a connection.
  bool fork_queue = false;
  bool want_sent = false;
  // Made DDPMODE by ESOCK_DDPMODE_ALL (esockrun --ddp), not by the application's setsockopt.
  bool implicit = false;
  // While armed: every SO_*/TCP_* option set on the kernel socket since it was fresh (for
  // an own stack's connect to share its option socket: process/option_socket.h); none when
  // some were set before it was made DDPMODE.
  std::optional<OptionCalls> option_calls;
  bool rd_shut = false;
  bool due = false;        // on the runtime's list for the next round (DdpRuntime::mark_due)
  bool in_rounds = false;  // in the runtime's sockets (only those are ever due)
  // ESOCK_ZCOPY_MODE's value, or -1: the process's (ESOCK_ZCOPY).
  std::atomic<int> zcopy{-1};
  int readers = 0;      // application threads blocked in a read
  int empty_reads = 0;  // non-blocking reads in a row that found nothing (empty_read)
  int error = 0;
  // SO_ERROR: a failed connect's error is reported once (as the kernel clears sk_err).
  bool error_reported = false;
  // A connect that completed after returning EINPROGRESS: the next connect() returns 0 (as
  // Linux's does once), later ones EISCONN.
  bool connect_unreported = false;
  std::unique_ptr<Connecting> connecting;
  std::vector<EpollWatch> epoll_watches;  // guarded by epoll_watch_mutex()
  std::unique_ptr<Conn> conn;
  std::unique_ptr<StackListen> lis;  // own-stack providers, while listening

 private:
  State state_ = State::armed;
  bool msgmode_ = false;
  bool rawmode_ = false;
};

// The ESOCK_ZCOPY_* mode of a socket's large writes: its ESOCK_ZCOPY_MODE, else ESOCK_ZCOPY's
// (docs/sockets.md, "Zero-copy modes").
int zcopy_mode(const Socket& s);
// ESOCK_ZCOPY_ASYNC or _ASYNC_COW (AZ-SDP): writes, and large reads, return before the peer.
inline bool zcopy_async(int mode) {
  return mode == ESOCK_ZCOPY_ASYNC || mode == ESOCK_ZCOPY_ASYNC_COW;
}

}  // namespace esock::sockets
