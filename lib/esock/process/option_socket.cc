#include "esock/process/option_socket.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "esock/process/libc.h"

namespace esock::sockets {

namespace {

int private_tcp_socket() {
  const int t = ESOCK_LIBC(socket)(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (t < 0) return -1;
  const int high = move_high(t);
  ESOCK_LIBC(close)(t);
  return high;
}

// The shared sets by their calls. Never destroyed: connections may close during exit.
struct Registry {
  std::mutex mu;
  std::map<OptionCalls, std::weak_ptr<const OptionSet>> sets;
};
Registry& registry() {
  static auto* r = new Registry;
  return *r;
}

// The options compared (level, name): what programs set before connect.
constexpr std::pair<int, int> compared[] = {
    {SOL_SOCKET, SO_REUSEADDR},
    {SOL_SOCKET, SO_REUSEPORT},
    {SOL_SOCKET, SO_KEEPALIVE},
    {SOL_SOCKET, SO_LINGER},
    {SOL_SOCKET, SO_RCVBUF},
    {SOL_SOCKET, SO_SNDBUF},
    {SOL_SOCKET, SO_RCVLOWAT},
    {SOL_SOCKET, SO_RCVTIMEO},
    {SOL_SOCKET, SO_SNDTIMEO},
    {SOL_SOCKET, SO_PRIORITY},
    {SOL_SOCKET, SO_MARK},
    {SOL_SOCKET, SO_OOBINLINE},
    {SOL_SOCKET, SO_BROADCAST},
    {SOL_SOCKET, SO_DONTROUTE},
    {SOL_SOCKET, SO_BINDTODEVICE},
    {IPPROTO_TCP, TCP_NODELAY},
    {IPPROTO_TCP, TCP_CORK},
    {IPPROTO_TCP, TCP_KEEPIDLE},
    {IPPROTO_TCP, TCP_KEEPINTVL},
    {IPPROTO_TCP, TCP_KEEPCNT},
    {IPPROTO_TCP, TCP_MAXSEG},
    {IPPROTO_TCP, TCP_USER_TIMEOUT},
    {IPPROTO_TCP, TCP_NOTSENT_LOWAT},
    {IPPROTO_TCP, TCP_CONGESTION},
    {IPPROTO_TCP, TCP_LINGER2},
    {IPPROTO_TCP, TCP_WINDOW_CLAMP},
    {IPPROTO_TCP, TCP_SYNCNT},
    {IPPROTO_IP, IP_TOS},
    {IPPROTO_IP, IP_TTL},
};

}  // namespace

OptionCalls with_call(OptionCalls calls, int level, int name, const void* val, socklen_t len) {
  const auto* p = static_cast<const std::uint8_t*>(val);
  std::vector<std::uint8_t> value(p, p + (p != nullptr ? len : 0));
  std::erase_if(calls, [&](const OptionCall& c) { return c.level == level && c.name == name; });
  calls.push_back({level, name, std::move(value)});
  return calls;
}

bool replayable(int level, int name) {
  if (level != SOL_SOCKET) return true;
  switch (name) {
    case SO_ATTACH_FILTER:
    case SO_ATTACH_BPF:
    case SO_ATTACH_REUSEPORT_CBPF:
    case SO_ATTACH_REUSEPORT_EBPF:
    case SO_DETACH_FILTER:
    case SO_LOCK_FILTER:
      return false;
    default:
      return true;
  }
}

namespace {

// A new private socket with the calls replayed on it; -1 with errno.
int replayed(const OptionCalls& calls) {
  const int fd = private_tcp_socket();
  if (fd < 0) return -1;
  for (const OptionCall& c : calls) {
    if (ESOCK_LIBC(setsockopt)(fd, c.level, c.name, c.value.data(),
                               static_cast<socklen_t>(c.value.size())) != 0) {
      const int err = errno;
      ESOCK_LIBC(close)(fd);
      errno = err;
      return -1;
    }
  }
  return fd;
}

}  // namespace

std::shared_ptr<const OptionSet> OptionSet::of(const OptionCalls& calls) {
  Registry& r = registry();
  {
    std::lock_guard lk(r.mu);
    const auto it = r.sets.find(calls);
    if (it != r.sets.end())
      if (auto set = it->second.lock()) return set;
  }
  const int fd = replayed(calls);
  return fd < 0 ? nullptr : adopt(fd, calls);
}

std::shared_ptr<const OptionSet> OptionSet::own(const OptionCalls& calls) {
  const int fd = replayed(calls);
  return fd < 0 ? nullptr : keep(fd);
}

std::shared_ptr<const OptionSet> OptionSet::adopt(int fd, const OptionCalls& calls) {
  Registry& r = registry();
  std::lock_guard lk(r.mu);
  auto& slot = r.sets[calls];
  if (auto set = slot.lock()) {  // another thread made it meanwhile, or it was there
    ESOCK_LIBC(close)(fd);
    return set;
  }
  std::shared_ptr<const OptionSet> set(new OptionSet(fd, calls, true));
  slot = set;
  return set;
}

std::shared_ptr<const OptionSet> OptionSet::keep(int fd) {
  return std::shared_ptr<const OptionSet>(new OptionSet(fd, {}, false));
}

OptionSet::~OptionSet() {
  if (shared_) {
    Registry& r = registry();
    std::lock_guard lk(r.mu);
    const auto it = r.sets.find(calls_);
    if (it != r.sets.end() && it->second.expired()) r.sets.erase(it);
  }
  ESOCK_LIBC(close)(fd_);
}

std::size_t OptionSet::shared_count() {
  Registry& r = registry();
  std::lock_guard lk(r.mu);
  return r.sets.size();
}

void option_sets_init() {
  static const bool once = [] {
    ::pthread_atfork([] { registry().mu.lock(); }, [] { registry().mu.unlock(); },
                     [] { registry().mu.unlock(); });
    return true;
  }();
  (void)once;
}

int fresh_option_socket() {
  static const int fd = private_tcp_socket();  // (thread-safe: a static's initialisation)
  return fd;
}

bool bound_to_port(int fd) {
  sockaddr_storage name{};
  socklen_t nl = sizeof name;
  if (ESOCK_LIBC(getsockname)(fd, reinterpret_cast<sockaddr*>(&name), &nl) != 0) return true;
  if (name.ss_family == AF_INET) return reinterpret_cast<sockaddr_in*>(&name)->sin_port != 0;
  if (name.ss_family == AF_INET6) return reinterpret_cast<sockaddr_in6*>(&name)->sin6_port != 0;
  return false;
}

bool holds_more_than_fresh(int fd) {
  const int fresh = fresh_option_socket();
  if (fresh < 0 || bound_to_port(fd)) return true;
  for (const auto& [level, opt] : compared) {
    unsigned char a[64] = {}, b[64] = {};
    socklen_t al = sizeof a, bl = sizeof b;
    const int ra = ESOCK_LIBC(getsockopt)(fd, level, opt, a, &al);
    const int rb = ESOCK_LIBC(getsockopt)(fresh, level, opt, b, &bl);
    if (ra != rb || al != bl || std::memcmp(a, b, al) != 0) return true;
  }
  return false;
}

}  // namespace esock::sockets
