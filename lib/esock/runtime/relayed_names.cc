#include "esock/runtime/relayed_names.h"

#include <dirent.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "esock/process/libc.h"
#include "esock/process/option_socket.h"
#include "esock/providers/provider.h"

namespace esock::sockets {

namespace {

struct Option {
  int name;
  std::vector<std::uint8_t> value;
};

struct Entry {
  ino_t ino;
  sockaddr_in local, peer;
  std::vector<Option> tcp_options;  // IPPROTO_TCP options the program set
};

std::atomic<bool> any{false};
std::mutex mu;
std::deque<Entry> entries;                         // oldest first
std::size_t added_since_sweep = relayed_capacity;  // the first full table sweeps at once

bool file_of(int fd, ino_t* ino) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  *ino = st.st_ino;
  return true;
}

// Under mu.
Entry* find(int fd) {
  ino_t ino = 0;
  if (!file_of(fd, &ino)) return nullptr;
  const auto it =
      std::find_if(entries.begin(), entries.end(), [&](const Entry& e) { return e.ino == ino; });
  return it == entries.end() ? nullptr : &*it;
}

bool is_tcp_level(int level) {
  return level == IPPROTO_TCP;
}

// The inodes of the sockets this process has open ("socket:[N]" in /proc/self/fd).
std::vector<ino_t> open_socket_inodes() {
  std::vector<ino_t> out;
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return out;
  while (const dirent* e = ::readdir(d)) {
    char target[64] = {};
    const std::string link = std::string("/proc/self/fd/") + e->d_name;
    if (::readlink(link.c_str(), target, sizeof target - 1) <= 0) continue;
    unsigned long long ino = 0;
    if (std::sscanf(target, "socket:[%llu]", &ino) == 1) out.push_back(static_cast<ino_t>(ino));
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// Under mu, with the table full: entries whose file is closed everywhere in this process
// go; the oldest goes if none did.
void make_room() {
  if (added_since_sweep >= relayed_capacity / 4) {
    added_since_sweep = 0;
    const std::vector<ino_t> open = open_socket_inodes();
    std::erase_if(entries, [&](const Entry& e) {
      return !std::binary_search(open.begin(), open.end(), e.ino);
    });
  }
  if (entries.size() >= relayed_capacity) entries.pop_front();
}

}  // namespace

void relayed_names_init() {
  static const bool once = [] {
    ::pthread_atfork([] { mu.lock(); }, [] { mu.unlock(); }, [] { mu.unlock(); });
    return true;
  }();
  (void)once;
}

void relayed_add(int fd, const sockaddr_in& local, const sockaddr_in& peer) {
  ino_t ino = 0;
  if (!file_of(fd, &ino)) return;
  std::lock_guard lk(mu);
  if (entries.size() >= relayed_capacity) make_room();
  entries.push_back(Entry{ino, local, peer, {}});
  ++added_since_sweep;
  any.store(true, std::memory_order_relaxed);
}

bool relayed_any() {
  return any.load(std::memory_order_relaxed);
}

std::size_t relayed_count() {
  std::lock_guard lk(mu);
  return entries.size();
}

bool relayed_is(int fd) {
  std::lock_guard lk(mu);
  return find(fd) != nullptr;
}

bool relayed_name(int fd, bool peer, sockaddr* addr, socklen_t* len, int* ret) {
  std::lock_guard lk(mu);
  const Entry* e = find(fd);
  if (e == nullptr) return false;
  *ret = copy_sockaddr(peer ? e->peer : e->local, addr, len);
  return true;
}

bool relayed_getsockopt(int fd, int level, int name, void* val, socklen_t* len, int* ret) {
  const bool family = level == SOL_SOCKET && (name == SO_DOMAIN || name == SO_PROTOCOL);
  if (!family && !is_tcp_level(level)) return false;
  std::lock_guard lk(mu);
  Entry* e = find(fd);
  if (e == nullptr) return false;
  if (val == nullptr || len == nullptr) {
    *ret = -1;
    errno = EFAULT;
    return true;
  }
  if (family) {
    const int v = name == SO_DOMAIN ? AF_INET : IPPROTO_TCP;
    std::memcpy(val, &v, std::min<socklen_t>(*len, sizeof v));
    *len = std::min<socklen_t>(*len, sizeof v);
    *ret = 0;
    return true;
  }
  for (const Option& o : e->tcp_options) {
    if (o.name != name) continue;
    *len = std::min<socklen_t>(*len, static_cast<socklen_t>(o.value.size()));
    std::memcpy(val, o.value.data(), *len);
    *ret = 0;
    return true;
  }
  *ret = ESOCK_LIBC(getsockopt)(fresh_option_socket(), level, name, val, len);  // the defaults
  return true;
}

bool relayed_setsockopt(int fd, int level, int name, const void* val, socklen_t len, int* ret) {
  if (!is_tcp_level(level)) return false;
  std::lock_guard lk(mu);
  Entry* e = find(fd);
  if (e == nullptr) return false;
  if (val == nullptr || len < static_cast<socklen_t>(sizeof(int)) || len > 64) {
    *ret = -1;
    errno = val == nullptr ? EFAULT : EINVAL;
    return true;
  }
  // Kept and reported back; the relayed connection itself runs with TCP_NODELAY (the
  // relay hands TCP what the pair holds at once), which changes no octet.
  const auto* p = static_cast<const std::uint8_t*>(val);
  std::erase_if(e->tcp_options, [&](const Option& o) { return o.name == name; });
  e->tcp_options.push_back(Option{name, std::vector<std::uint8_t>(p, p + len)});
  *ret = 0;
  return true;
}

}  // namespace esock::sockets
