#include "esock/runtime/fd_table.h"

#include <pthread.h>

#include <algorithm>
#include <mutex>
#include <unordered_map>

#include "esock/runtime/socket.h"

namespace esock::sockets {

std::atomic<std::uint8_t> fd_flags[max_ddp_fd];

namespace {

struct Table {
  std::mutex mu;
  std::unordered_map<int, std::shared_ptr<Socket>> owners;
};

Table& table();

// fork: the table's lock is held across fork() so a child never inherits it held. The
// handlers are registered when the table is created, before the runtime's (DdpRuntime's
// constructor creates the table first): prepare handlers run in reverse order of
// registration, so the runtime lock is taken first and this one second, the order every
// other path takes them in (POSIX pthread_atfork).
void fork_lock() {
  table().mu.lock();
}
void fork_unlock() {
  table().mu.unlock();
}

Table& table() {
  // Never destroyed: shims may run during exit.
  static Table* t = [] {
    auto* made = new Table;
    ::pthread_atfork(fork_lock, fork_unlock, fork_unlock);
    return made;
  }();
  return *t;
}

}  // namespace

void fd_table_init() {
  table();
}

std::shared_ptr<Socket> fd_get(int fd) {
  if (!fd_is_ddp(fd)) return nullptr;
  Table& t = table();
  std::lock_guard lock(t.mu);
  auto it = t.owners.find(fd);
  return it == t.owners.end() ? nullptr : it->second;
}

void fd_set(int fd, std::shared_ptr<Socket> s) {
  if (static_cast<unsigned>(fd) >= static_cast<unsigned>(max_ddp_fd)) return;
  Table& t = table();
  std::lock_guard lock(t.mu);
  t.owners[fd] = std::move(s);
  fd_flags[fd].store(1, std::memory_order_release);
}

std::shared_ptr<Socket> fd_take(int fd) {
  if (!fd_is_ddp(fd)) return nullptr;
  Table& t = table();
  std::lock_guard lock(t.mu);
  fd_flags[fd].store(0, std::memory_order_release);
  auto it = t.owners.find(fd);
  if (it == t.owners.end()) return nullptr;
  std::shared_ptr<Socket> s = std::move(it->second);
  t.owners.erase(it);
  return s;
}

bool fd_swap_out(int fd, const Socket* s, function_ref<bool()> swap) {
  if (static_cast<unsigned>(fd) >= static_cast<unsigned>(max_ddp_fd)) return false;
  Table& t = table();
  std::lock_guard lock(t.mu);
  auto it = t.owners.find(fd);
  if (it == t.owners.end() || it->second.get() != s || !swap()) return false;
  fd_flags[fd].store(0, std::memory_order_release);
  t.owners.erase(it);  // (the caller holds s: no destructor runs under the lock)
  return true;
}

bool fd_with_number(const Socket* s, int* hint, function_ref<void(int)> use) {
  if (*hint < 0) return false;  // it never had a number (a hidden socket)
  Table& t = table();
  std::lock_guard lock(t.mu);
  auto it = t.owners.find(*hint);
  if (it == t.owners.end() || it->second.get() != s) {
    // The hint's number was closed while a dup of it lives on (rare): any other will do.
    it = std::find_if(t.owners.begin(), t.owners.end(),
                      [s](const auto& e) { return e.second.get() == s; });
    if (it == t.owners.end()) return false;  // (perhaps for a moment: a failed dup2)
    *hint = it->first;
  }
  use(it->first);
  return true;
}

std::vector<int> fd_numbers_of(const Socket* s) {
  Table& t = table();
  std::lock_guard lock(t.mu);
  std::vector<int> fds;
  for (const auto& [fd, owner] : t.owners)
    if (owner.get() == s) fds.push_back(fd);
  return fds;
}

int fd_count() {
  Table& t = table();
  std::lock_guard lock(t.mu);
  return static_cast<int>(t.owners.size());
}

}  // namespace esock::sockets
