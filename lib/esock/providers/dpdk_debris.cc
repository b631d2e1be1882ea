#include "esock/providers/dpdk_debris.h"

#include <dirent.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace esock::sockets {

namespace {

// A socket file with no listener behind it: connecting is refused.
bool stale_socket(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  sockaddr_un a{};
  if (path.size() >= sizeof a.sun_path) return false;
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);  // memif's type
  if (fd < 0) return false;
  const bool refused =
      ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno == ECONNREFUSED;
  ::close(fd);
  return refused;
}

// "esock-PID-N" (Eal::init's default prefix) whose PID no longer runs.
bool orphaned_eal_dir(const std::string& name) {
  if (name.rfind("esock-", 0) != 0) return false;
  const std::size_t dash = name.find('-', 6);
  if (dash == std::string::npos || dash == 6) return false;
  pid_t pid = 0;
  for (std::size_t i = 6; i < dash; ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
    pid = pid * 10 + (name[i] - '0');
  }
  return pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH;
}

// Fixed storage: the signal handler may only use what is already in memory.
constexpr std::size_t max_files = 16;
char memif_path[sizeof(sockaddr_un::sun_path)];
char eal_path[4096];
char eal_files[max_files][4096];
std::size_t n_eal_files = 0;
pid_t owner = 0;

void copy_path(char* dst, std::size_t cap, const std::string& src) {
  dst[0] = '\0';
  if (src.size() < cap) std::memcpy(dst, src.c_str(), src.size() + 1);
}

// Async-signal-safe: getpid, unlink, rmdir, signal, raise.
void on_fatal_signal(int sig) {
  if (::getpid() == owner) {
    if (memif_path[0] != '\0') ::unlink(memif_path);
    for (std::size_t i = 0; i < n_eal_files; ++i) ::unlink(eal_files[i]);
    if (eal_path[0] != '\0') ::rmdir(eal_path);
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

std::string eal_runtime_root() {
  if (::getuid() == 0) return "/var/run/dpdk";
  const char* x = ::getenv("XDG_RUNTIME_DIR");
  return x != nullptr ? std::string(x) + "/dpdk" : "/tmp/dpdk";
}

std::string remove_stale_debris(const std::string& memif_socket) {
  std::string note;
  if (!memif_socket.empty() && stale_socket(memif_socket) && ::unlink(memif_socket.c_str()) == 0)
    note += "removed the stale memif socket " + memif_socket + " (nobody listened on it)\n";
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(eal_runtime_root(), ec)) {
    const std::string name = e.path().filename().string();
    if (!orphaned_eal_dir(name)) continue;
    std::error_code rm;
    if (std::filesystem::remove_all(e.path(), rm) > 0)
      note += "removed " + e.path().string() + " (its process is gone)\n";
  }
  return note;
}

void remove_debris_on_signals(const std::string& memif_socket, const std::string& eal_dir) {
  owner = ::getpid();
  copy_path(memif_path, sizeof memif_path, memif_socket);
  copy_path(eal_path, sizeof eal_path, eal_dir);
  n_eal_files = 0;
  std::error_code ec;
  if (!eal_dir.empty())
    for (const auto& e : std::filesystem::directory_iterator(eal_dir, ec))
      if (n_eal_files < max_files)
        copy_path(eal_files[n_eal_files++], sizeof eal_files[0], e.path().string());
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0 || (old.sa_flags & SA_SIGINFO) != 0) continue;
    if (old.sa_handler != SIG_DFL) continue;  // the program's own, or ours (paths updated)
    struct sigaction sa {};
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
}

}  // namespace esock::sockets
