#include "esock/providers/dpdk_signals.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace esock::sockets {

void take_tap_signals() {
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return;
  sigset_t taken;
  ::sigemptyset(&taken);
  const pid_t tid = ::gettid();
  while (const dirent* e = ::readdir(d)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == ::dirfd(d)) continue;
    char target[64] = {};
    const std::string link = std::string("/proc/self/fd/") + e->d_name;
    if (::readlink(link.c_str(), target, sizeof target - 1) <= 0 ||
        std::strcmp(target, "/dev/net/tun") != 0)
      continue;
    const int fl = ::fcntl(static_cast<int>(fd), F_GETFL);
    if (fl < 0 || (fl & O_ASYNC) == 0) continue;
    f_owner_ex owner{F_OWNER_TID, tid};
    if (::fcntl(static_cast<int>(fd), F_SETOWN_EX, &owner) != 0) continue;
    const int sig = ::fcntl(static_cast<int>(fd), F_GETSIG);
    ::sigaddset(&taken, sig > 0 ? sig : SIGIO);
  }
  ::closedir(d);
  ::pthread_sigmask(SIG_UNBLOCK, &taken, nullptr);
}

}  // namespace esock::sockets
