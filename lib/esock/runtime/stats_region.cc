#include "esock/runtime/stats_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <mutex>

#include "esock/version.h"

namespace esock::sockets {

namespace {

std::string shm_name(pid_t pid) {
  return "/" + std::string(stats::file_prefix) + std::to_string(pid);
}

std::uint64_t wall_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

pid_t g_owner = 0;  // the process whose region exit removes

void remove_at_exit() {
  if (g_owner == ::getpid()) ::shm_unlink(shm_name(g_owner).c_str());
}

template <std::size_t N>
void copy(char (&dst)[N], const std::string& src) {
  std::strncpy(dst, src.c_str(), N - 1);
  dst[N - 1] = '\0';
}

}  // namespace

StatsRegion* StatsRegion::create(const char* provider) {
  const pid_t pid = ::getpid();
  const std::string name = shm_name(pid);
  // Readable by its owner only: it names the process's peers. A file of that name is an
  // earlier process's with our pid (ours to remove) or someone else's (then the unlink
  // fails and so does the exclusive create: nothing is published into a file we did not
  // make).
  ::shm_unlink(name.c_str());
  const int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return nullptr;
  void* p = MAP_FAILED;
  if (::ftruncate(fd, sizeof(stats::Region)) == 0)
    p = ::mmap(nullptr, sizeof(stats::Region), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) {
    ::shm_unlink(name.c_str());
    return nullptr;
  }
  auto* r = static_cast<stats::Region*>(p);  // zero-filled by ftruncate
  std::memcpy(r->magic, stats::magic, sizeof r->magic);
  r->version = stats::layout_version;
  r->size = sizeof(stats::Region);
  r->pid = pid;
  std::ifstream comm("/proc/self/comm");
  std::string prog;
  std::getline(comm, prog);
  copy(r->program, prog);
  copy(r->provider, provider);
  copy(r->esock_version, ESOCK_VERSION_STRING);
  r->started_ns = r->updated_ns = wall_ns();
  static std::once_flag registered;
  std::call_once(registered, [] { std::atexit(remove_at_exit); });
  g_owner = pid;
  return new StatsRegion(r, pid);
}

StatsRegion::~StatsRegion() {
  ::munmap(region_, sizeof(stats::Region));
}

void StatsRegion::begin() {
  region_->seq.fetch_add(1, std::memory_order_acq_rel);  // odd: being written
  std::atomic_thread_fence(std::memory_order_release);
}

void StatsRegion::end() {
  region_->updated_ns = wall_ns();
  region_->seq.fetch_add(1, std::memory_order_release);  // even: a whole snapshot
}

void StatsRegion::set_counters(const std::vector<std::pair<std::string, std::uint64_t>>& counters) {
  std::uint32_t n = 0;
  for (const auto& [name, value] : counters) {
    if (n == stats::max_counters) break;
    copy(region_->counters[n].name, name);
    region_->counters[n].value = value;
    ++n;
  }
  region_->ncounters = n;
}

}  // namespace esock::sockets
