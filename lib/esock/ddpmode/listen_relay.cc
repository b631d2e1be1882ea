// Pre-forked children accepting on an own stack's listener (docs/sockets.md, "Providers",
// fork): the stack is the parent's, so a child's copy of the listener is the children's end
// of a SOCK_SEQPACKET pair the parent made at listen() (runtime/socket.h, ListenRelay), and
// accept asks the parent for a connection:
// * the child sends a one-octet request (at most one outstanding per process: each accept
//   that finds none sends one, each accept that got a connection sends the next, and adding
//   the number to an epoll set sends one, since an event-driven worker accepts only once
//   its number polls readable);
// * the parent's runtime answers each request with a negotiated connection from the
//   listener's queue: the connection goes to a hidden socket whose fork relay
//   (runtime/fork_relay.h) is active at once, and a message carrying the peer's name and the
//   relay's other end (SCM_RIGHTS) goes into the pair;
// * whichever child receives it gets that end as accept's result: a plain socket there.
// The queue's children's end is one description the whole family shares: esock never
// relies on its O_NONBLOCK (MSG_DONTWAIT and poll instead).
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "esock/ddpmode/conn.h"
#include "esock/process/fd_passing.h"
#include "esock/process/libc.h"
#include "esock/runtime/fork_relay.h"
#include "esock/runtime/relayed_names.h"
#include "esock/runtime/runtime.h"

namespace esock::sockets {

namespace {

constexpr char want = 'w';

// The parent's answer: the peer's name (len octets of peer) and the connection's own; the
// relay's end rides along.
struct RelayMessage {
  socklen_t len;
  sockaddr_storage peer;
  sockaddr_in local;
};

class QueueListenRelay final : public ListenRelay {
 public:
  QueueListenRelay(int parent, int child) : parent_(parent), child_(child) {}
  ~QueueListenRelay() override {
    ESOCK_LIBC(close)(parent_);
    ESOCK_LIBC(close)(child_);
  }
  int poll_fd() const override { return parent_; }
  int child_end() const override { return child_; }

  void step(Socket& ls, std::vector<std::shared_ptr<Socket>>* adopted) override {
    // Only a child can ask, and the children exist only once this process forked: until
    // then no round pays the recv (it was a sixth of a streaming reader's time).
    char b[16];
    if (DdpRuntime::forks_made() != 0)
      for (ssize_t n; (n = ESOCK_LIBC(recv)(parent_, b, sizeof b, MSG_DONTWAIT)) > 0;)
        if (b[0] == want) ++wants_;
    StackListen& l = *ls.lis;
    while (wants_ > 0 && !l.ready.empty()) {
      // The child's end goes out first: a full queue (or any failure) leaves the
      // connection where it was, for the next round.
      ProviderConn& pc = *l.ready.front();
      if (pc.peer_not_mpa() || pc.peer_silent()) {
        // A peer without esock (docs/sockets.md): the child gets the plain relay's end
        // itself, as accept would return it here.
        const bool silent = pc.peer_silent();
        RelayMessage msg = message(pc);
        const int k = take_plain_end(pc);
        if (k >= 0 && !send_with_fd(parent_, as_bytes(msg), k))
          ESOCK_LIBC(shutdown)(k, SHUT_RDWR);  // (the queue is full: the connection is lost)
        if (k >= 0) ESOCK_LIBC(close)(k);
        l.ready.pop_front();
        --wants_;
        tell_plain_tcp(std::string("a client does not speak esock (") +
                       (silent ? "it sent nothing" : "its first octets are not an MPA Request") +
                       ")");
        continue;
      }
      int mine = -1;
      if (!offer(pc, &mine)) break;
      std::unique_ptr<ProviderConn> taken = std::move(l.ready.front());
      l.ready.pop_front();
      --wants_;
      auto s = std::make_shared<Socket>();
      s->set_msgmode(ls.msgmode());
      if (attach(std::move(taken), false, *s) != 0) {
        ESOCK_LIBC(close)(mine);  // the child reads end of stream
        continue;
      }
      s->conn->relay = std::make_unique<ForkRelay>(mine);
      s->conn->relay->activate();
      s->set_state(Socket::State::closed);  // no number of this process names it
      adopted->push_back(std::move(s));
    }
  }

 private:
  // Sends the children a relay's end with the peer's name (a fixed-size message, so a
  // child never mistakes it for the end of the queue); *mine is the other end.
  static RelayMessage message(const ProviderConn& pc) {
    RelayMessage msg{};
    msg.len = sizeof msg.peer;
    if (pc.name(true, reinterpret_cast<sockaddr*>(&msg.peer), &msg.len) != 0) msg.len = 0;
    socklen_t llen = sizeof msg.local;
    if (pc.name(false, reinterpret_cast<sockaddr*>(&msg.local), &llen) != 0) msg.local = {};
    return msg;
  }
  static bytes_view as_bytes(const RelayMessage& msg) {
    return bytes_view(reinterpret_cast<const std::uint8_t*>(&msg), sizeof msg);
  }

  bool offer(const ProviderConn& pc, int* mine) {
    const RelayMessage msg = message(pc);
    int sp[2];
    if (private_pair(SOCK_STREAM, sp) < 0) return false;
    *mine = sp[0];
    ESOCK_LIBC(fcntl)(*mine, F_SETFL, O_NONBLOCK);
    const bool sent = send_with_fd(parent_, as_bytes(msg), sp[1]);
    ESOCK_LIBC(close)(sp[1]);  // in flight in the queue now, or not sent
    if (!sent) ESOCK_LIBC(close)(*mine);
    return sent;
  }

  int parent_, child_;
  int wants_ = 0;  // requests not answered yet
};

}  // namespace

std::unique_ptr<ListenRelay> make_listen_relay() {
  int ends[2];
  if (private_pair(SOCK_SEQPACKET, ends) < 0) return nullptr;
  return std::make_unique<QueueListenRelay>(ends[0], ends[1]);
}

void ask_parent(int fd, Socket& s) {
  std::lock_guard lk(DdpRuntime::get().mu);
  if (s.want_sent) return;
  s.want_sent = ESOCK_LIBC(send)(fd, &want, 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1;
}

int accept_from_parent(int fd, Socket& ls, sockaddr* addr, socklen_t* len, int flags) {
  if (flags & ~(SOCK_NONBLOCK | SOCK_CLOEXEC)) return errno_fail(EINVAL);
  for (;;) {
    ask_parent(fd, ls);
    RelayMessage msg{};
    int a = -1;
    bool truncated = false;
    const ssize_t n = recv_with_fd(fd, mut_bytes(reinterpret_cast<std::uint8_t*>(&msg), sizeof msg),
                                   (flags & SOCK_CLOEXEC) ? MSG_CMSG_CLOEXEC : 0, &a, &truncated);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      bool nonblocking;
      {
        std::lock_guard lk(DdpRuntime::get().mu);
        nonblocking = ls.nonblocking;
      }
      if (nonblocking) return errno_fail(EAGAIN);
      pollfd p{fd, POLLIN, 0};
      if (ESOCK_LIBC(poll)(&p, 1, -1) < 0 && errno == EINTR && !every_handler_restarts())
        return errno_fail(EINTR);
      continue;
    }
    if (n < 0) return -1;
    if (n == 0) return errno_fail(EINVAL);  // the parent's listener is gone
    {
      std::lock_guard lk(DdpRuntime::get().mu);
      ls.want_sent = false;  // answered (this process's request or another child's)
    }
    // The descriptor did not fit (this process is at its limit): the kernel dropped it, and
    // with it that connection, as accept would fail with EMFILE.
    if (truncated && a < 0) return errno_fail(EMFILE);
    if (a < 0 || truncated || n != static_cast<ssize_t>(sizeof msg)) {
      if (a >= 0) ESOCK_LIBC(close)(a);
      continue;  // not ours: dropped
    }
    if (flags & SOCK_NONBLOCK) ESOCK_LIBC(fcntl)(a, F_SETFL, O_NONBLOCK);
    // The relay's end shows as the TCP socket it stands for (runtime/relayed_names.h).
    if (msg.peer.ss_family == AF_INET && msg.local.sin_family == AF_INET)
      relayed_add(a, msg.local, *reinterpret_cast<const sockaddr_in*>(&msg.peer));
    if (addr != nullptr && len != nullptr) {  // accept(2): truncated to *len, full size back
      const socklen_t plen = std::min<socklen_t>(msg.len, sizeof msg.peer);
      std::memcpy(addr, &msg.peer, std::min(*len, plen));
      *len = plen;
    }
    // The next request goes out at once: an event-driven worker (nginx's, one accept per
    // event) goes back to epoll_wait after this accept and waits there for the number to
    // poll readable again, which only the parent's next answer can make it. (So a child
    // that exits leaves a request behind: its connection waits in the queue for another
    // child's accept, docs/sockets.md.)
    ask_parent(fd, ls);
    return a;
  }
}

}  // namespace esock::sockets
