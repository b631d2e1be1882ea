// esockrun [options] program args...: runs program with libesock.so preloaded (prepended to
// any LD_PRELOAD) and the esock configuration variables set (docs/configuration.md).
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "usage: esockrun [options] [--] program [args...]\n"
               "  -p, --provider NAME   ksock (default) | dpdk | rdmacm   (ESOCK_PROVIDER)\n"
               "  -c, --config FILE     configuration file                 (ESOCK_CONFIG)\n"
               "  -d, --ddp             every IPv4 TCP socket of the program starts in DDPMODE\n"
               "                        (ESOCK_DDPMODE_ALL=1); both ends must run esock\n"
               "  -e, --env NAME=VALUE  set any ESOCK_* variable (repeatable)\n"
               "  -l, --lib PATH        libesock.so to preload (default: next to esockrun,\n"
               "                        then the build tree, then the loader's search path)\n"
               "  -v, --verbose         print the environment before exec\n"
               "  -h, --help\n");
}

bool readable(const std::string& p) {
  return !p.empty() && ::access(p.c_str(), R_OK) == 0;
}

std::string self_dir() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  std::string s(buf, static_cast<std::size_t>(n));
  const auto slash = s.rfind('/');
  return slash == std::string::npos ? std::string{} : s.substr(0, slash);
}

std::string find_library() {
  const std::string dir = self_dir();
  for (const std::string& c : {dir + "/../lib/libesock.so", dir + "/libesock.so"})
    if (readable(c)) return c;
#ifdef ESOCK_BUILD_LIB
  if (readable(ESOCK_BUILD_LIB)) return ESOCK_BUILD_LIB;
#endif
  return "libesock.so";  // let the dynamic loader search for it
}

}  // namespace

int main(int argc, char** argv) {
  std::string lib;
  bool verbose = false;
  int i = 1;
  auto need_arg = [&](const char* opt) -> const char* {
    if (i + 1 >= argc) {
      std::fprintf(stderr, "esockrun: %s needs an argument\n", opt);
      std::exit(2);
    }
    return argv[++i];
  };
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.empty() || a[0] != '-') break;
    if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else if (a == "-v" || a == "--verbose") {
      verbose = true;
    } else if (a == "-p" || a == "--provider") {
      ::setenv("ESOCK_PROVIDER", need_arg("--provider"), 1);
    } else if (a == "-d" || a == "--ddp") {
      ::setenv("ESOCK_DDPMODE_ALL", "1", 1);
    } else if (a == "-c" || a == "--config") {
      ::setenv("ESOCK_CONFIG", need_arg("--config"), 1);
    } else if (a == "-l" || a == "--lib") {
      lib = need_arg("--lib");
    } else if (a == "-e" || a == "--env") {
      const std::string kv = need_arg("--env");
      const auto eq = kv.find('=');
      if (eq == std::string::npos || kv.compare(0, 6, "ESOCK_") != 0) {
        std::fprintf(stderr, "esockrun: --env wants ESOCK_NAME=VALUE, got '%s'\n", kv.c_str());
        return 2;
      }
      ::setenv(kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str(), 1);
    } else {
      std::fprintf(stderr, "esockrun: unknown option %s\n", a.c_str());
      usage(stderr);
      return 2;
    }
  }
  if (i >= argc) {
    usage(stderr);
    return 2;
  }
  if (lib.empty()) lib = find_library();
  std::string preload = lib;
  if (const char* old = std::getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;
  ::setenv("LD_PRELOAD", preload.c_str(), 1);
  if (verbose) {
    std::fprintf(stderr, "esockrun: LD_PRELOAD=%s\n", preload.c_str());
    for (const char* v : {"ESOCK_PROVIDER", "ESOCK_CONFIG", "ESOCK_DDPMODE_ALL"})
      if (const char* val = std::getenv(v)) std::fprintf(stderr, "esockrun: %s=%s\n", v, val);
  }
  ::execvp(argv[i], argv + i);
  std::fprintf(stderr, "esockrun: cannot run %s: %s\n", argv[i], std::strerror(errno));
  return errno == ENOENT ? 127 : 126;
}
