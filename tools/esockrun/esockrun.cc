// esockrun [options] program args...: runs program with libesock.so preloaded (prepended to
// any LD_PRELOAD) and the esock configuration variables set (docs/configuration.md,
// esockrun(1)). The provider asked for is checked before the program starts: an unknown or
// unloadable one is an error here, not a silent fallback in the program.
#include <dirent.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "esock/process/config.h"
#include "esock/process/config_parse.h"
#include "esock/version.h"

extern char** environ;

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
               "  -q, --quiet           no start-up banner\n"
               "  -P, --profile NAME    latency | throughput | compat: a set of settings\n"
               "                        for what matters most (esockrun(1)); what is set\n"
               "                        explicitly (-e, the environment, the file) wins\n"
               "      --list-providers  the providers this installation has, and exit\n"
               "  -V, --version         esockrun's version and the library it preloads\n"
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

// Whether `dir` is inside the tree esockrun was built in: only then are the build tree's
// library and plugins candidates (an installed esockrun never looks into its build folder).
bool in_build_tree(const std::string& dir) {
  const std::string root = ESOCK_BUILD_ROOT "/";
  return (dir + "/").compare(0, root.size(), root) == 0;
}

// The installed library (its soname, so the runtime package alone suffices) relative to
// this program (ESOCK_REL_LIBDIR: bindir -> libdir), beside it, the build tree's, and last
// the bare soname for the dynamic loader's search.
std::string find_library() {
  const std::string dir = self_dir();
  const std::string name = "libesock.so." + std::to_string(ESOCK_VERSION_MAJOR);
  for (const std::string& c : {dir + "/" ESOCK_REL_LIBDIR "/" + name, dir + "/" + name})
    if (readable(c)) return c;
  if (in_build_tree(dir) && readable(ESOCK_BUILD_LIB)) return ESOCK_BUILD_LIB;
  return name;
}

std::string dir_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string{} : path.substr(0, slash + 1);
}

// Where libesock looks for libesock_<name>.so (lib/esock/providers/plugin.cc), in its order.
std::vector<std::string> plugin_dirs(const std::string& lib) {
  const std::string d = dir_of(lib);
  std::vector<std::string> dirs;
  if (!d.empty()) dirs = {d + "esock/", d};
  if (in_build_tree(self_dir())) dirs.push_back(ESOCK_BUILD_PLUGIN_DIR "/");
  return dirs;
}

struct Provider {
  std::string name, where, error;  // error empty: usable
};

// --profile: settings for what matters most, each applied only where nothing else sets it
// (docs/configuration.md, "Profiles").
struct Profile {
  const char* name;
  std::vector<std::pair<const char*, const char*>> settings;
};
const std::vector<Profile>& profiles() {
  static const std::vector<Profile> p = {
      // Waiting threads keep polling for 1 ms before they sleep, and messages below 1 MiB
      // never wait for a rendezvous or a sink (no extra round trip before their data).
      {"latency",
       {{"ESOCK_SPIN_US", "1000"}, {"ESOCK_RNDV_THRESHOLD", "1M"}, {"ESOCK_SINK_THRESHOLD", "1M"}}},
      // More receive credits in flight (64 buffers of 64 KiB per connection).
      {"throughput", {{"ESOCK_RECV_BUFFERS", "64"}}},
      // Talk to whoever answers: peers without esock get plain TCP on every socket, and MPA
      // takes the peer's choice of CRC and Markers.
      {"compat",
       {{"ESOCK_FALLBACK", "fallback"},
        {"ESOCK_MPA_CRC", "allow"},
        {"ESOCK_MPA_MARKERS", "allow"}}},
  };
  return p;
}

// A plugin is usable when it loads with its dependencies and has the entry point.
Provider probe(const std::string& name, const std::string& path) {
  Provider p{name, path, {}};
  void* h = ::dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (h == nullptr) {
    p.error = ::dlerror();
  } else if (::dlsym(h, "esock_provider_create") == nullptr) {
    p.error = "no esock_provider_create in it";
  }
  return p;
}

// ksock (built into libesock) and every plugin in the library's plugin folders, each once
// (the first found is the one libesock loads).
std::vector<Provider> providers(const std::string& lib) {
  std::vector<Provider> out{{"ksock", "built in", {}}};
  const std::string prefix = "libesock_", suffix = ".so";
  for (const std::string& dir : plugin_dirs(lib)) {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) continue;
    std::vector<std::string> names;
    while (const dirent* e = ::readdir(d)) {
      const std::string f = e->d_name;
      if (f.size() > prefix.size() + suffix.size() && f.compare(0, prefix.size(), prefix) == 0 &&
          f.compare(f.size() - suffix.size(), suffix.size(), suffix) == 0)
        names.push_back(f.substr(prefix.size(), f.size() - prefix.size() - suffix.size()));
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    for (const std::string& n : names) {
      bool seen = false;
      for (const Provider& p : out) seen = seen || p.name == n;
      if (!seen) out.push_back(probe(n, dir + prefix + n + suffix));
    }
  }
  return out;
}

std::string names(const std::vector<Provider>& ps) {
  std::string s;
  for (const Provider& p : ps)
    if (p.error.empty()) s += (s.empty() ? "" : ", ") + p.name;
  return s;
}

// The configuration file's text (ESOCK_CONFIG, else the system's), or "".
std::string config_file_text() {
  const char* named = std::getenv("ESOCK_CONFIG");
  std::ifstream f(named && *named ? named : esock::sockets::system_config_path);
  std::ostringstream text;
  text << f.rdbuf();
  return text.str();
}

// Whether a configuration file's text sets `key` (a line "key = ...").
bool sets_key(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    line = line.substr(0, line.find('#'));
    const auto b = line.find_first_not_of(" \t");
    if (b != std::string::npos && line.compare(b, key.size(), key) == 0) {
      const auto after = line.find_first_not_of(" \t", b + key.size());
      if (after != std::string::npos && line[after] == '=') return true;
    }
  }
  return false;
}

// 0 when `name` is a usable provider, else prints why and returns 2.
int check_provider(const std::string& name, const std::string& lib) {
  const std::vector<Provider> ps = providers(lib);
  // Last, as libesock: the dynamic loader's own search path.
  if (std::none_of(ps.begin(), ps.end(), [&](const Provider& p) { return p.name == name; })) {
    const Provider bare = probe(name, "libesock_" + name + ".so");
    if (bare.error.empty()) return 0;
  }
  for (const Provider& p : ps) {
    if (p.name != name) continue;
    if (p.error.empty()) return 0;
    std::fprintf(stderr, "esockrun: provider '%s' cannot be loaded: %s\n", name.c_str(),
                 p.error.c_str());
    return 2;
  }
  std::fprintf(stderr,
               "esockrun: no provider '%s' in this installation (providers: %s; "
               "esockrun --list-providers)\n",
               name.c_str(), names(ps).c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string lib;
  bool verbose = false, list = false, version = false, quiet = false;
  std::string profile;
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
    } else if (a == "-q" || a == "--quiet") {
      quiet = true;
    } else if (a == "-P" || a == "--profile") {
      profile = need_arg("--profile");
    } else if (a == "--list-providers") {
      list = true;
    } else if (a == "-V" || a == "--version") {
      version = true;
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
  if (lib.empty()) lib = find_library();
  if (version) {
    std::printf("esockrun (esock) %s\nlibrary: %s\n", ESOCK_VERSION_STRING, lib.c_str());
    return 0;
  }
  if (list) {
    for (const Provider& p : providers(lib)) {
      if (p.error.empty()) {
        std::printf("%-8s %s\n", p.name.c_str(), p.where.c_str());
      } else {
        std::printf("%-8s %s (cannot be loaded: %s)\n", p.name.c_str(), p.where.c_str(),
                    p.error.c_str());
      }
    }
    return 0;
  }
  if (i >= argc) {
    usage(stderr);
    return 2;
  }
  if (!profile.empty()) {
    const Profile* pr = nullptr;
    for (const Profile& p : profiles())
      if (profile == p.name) pr = &p;
    if (pr == nullptr) {
      std::fprintf(stderr, "esockrun: no profile '%s' (latency, throughput, compat)\n",
                   profile.c_str());
      return 2;
    }
    // Under what -e and the environment set; the file's settings are checked below and
    // win too: a profile fills only what nothing else sets.
    const std::string file_text = config_file_text();
    for (const auto& [name, value] : pr->settings) {
      std::string key;
      for (const char* c = name + 6; *c; ++c) key += static_cast<char>(std::tolower(*c));
      if (std::getenv(name) == nullptr && !sets_key(file_text, key)) ::setenv(name, value, 0);
    }
  }
  // The configuration as the program will read it (file and environment): errors stop here,
  // with where they are, rather than in the program at its first DDPMODE socket.
  std::vector<esock::sockets::ConfigIssue> issues;
  const esock::sockets::Config cfg = esock::sockets::read_config(&issues);
  bool errors = false;
  for (const esock::sockets::ConfigIssue& is : issues) {
    errors = errors || is.error;
    std::fprintf(stderr, "esockrun: %s%s\n", is.error ? "" : "warning: ", is.text.c_str());
  }
  if (errors) return 2;
  // The library does not repeat these warnings while it reads the same configuration.
  ::setenv("ESOCK_CONFIG_CHECKED", esock::sockets::config_fingerprint().c_str(), 1);
  if (const int rc = check_provider(cfg.provider, lib); rc != 0) return rc;
  // The banner: with --ddp (esock is then on every TCP socket), or at ESOCK_LOG=info and up.
  // A pass-through run prints nothing of its own: the program's output stays its own.
  const bool info = cfg.log == "info" || cfg.log == "debug";
  if (!quiet && (info || (cfg.ddpmode_all && cfg.log != "error"))) {
    const char* file = std::getenv("ESOCK_CONFIG");
    const bool system_file =
        (file == nullptr || *file == '\0') && readable(esock::sockets::system_config_path);
    std::fprintf(stderr, "esockrun: esock %s, provider %s, %s%s%s\n", ESOCK_VERSION_STRING,
                 cfg.provider.c_str(),
                 file && *file ? (std::string("config ") + file).c_str()
                 : system_file
                     ? (std::string("config ") + esock::sockets::system_config_path).c_str()
                     : "no config file",
                 cfg.ddpmode_all ? ", DDPMODE on every TCP socket" : "",
                 info ? (", log " + cfg.log).c_str() : "");
  }
  std::string preload = lib;
  if (const char* old = std::getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;
  ::setenv("LD_PRELOAD", preload.c_str(), 1);
  if (verbose) {
    std::fprintf(stderr, "esockrun: LD_PRELOAD=%s\n", preload.c_str());
    for (char** e = environ; *e != nullptr; ++e)
      if (std::strncmp(*e, "ESOCK_", 6) == 0) std::fprintf(stderr, "esockrun: %s\n", *e);
  }
  ::execvp(argv[i], argv + i);
  std::fprintf(stderr, "esockrun: cannot run %s: %s\n", argv[i], std::strerror(errno));
  return errno == ENOENT ? 127 : 126;
}
