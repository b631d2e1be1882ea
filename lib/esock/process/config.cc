// Reading the configuration (config.h): the file named by ESOCK_CONFIG, else the system's
// (/etc/esock/esock.conf) when there is one, and the environment, through parse_config
// (config_parse.h). Its problems are printed once, when the configuration is first read.
#include "esock/process/config.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "esock/process/config_parse.h"

extern char** environ;

namespace esock::sockets {

namespace {

struct Loaded {
  Config config;
  bool ok = true;
};

Loaded load() {
  std::vector<ConfigIssue> issues;
  Loaded l;
  l.config = read_config(&issues);
  // esockrun reported these before the program started (and refused it on errors), if this
  // process reads what it checked (not a child that changed its ESOCK_* variables): errors
  // are always repeated.
  const char* mark = std::getenv("ESOCK_CONFIG_CHECKED");
  const bool checked = mark != nullptr && mark == config_fingerprint();
  const bool warnings = l.config.log != "error";  // log.h: warnings from ESOCK_LOG=warn up
  for (const ConfigIssue& i : issues) {
    l.ok = l.ok && !i.error;
    if (i.error || (!checked && warnings))
      std::fprintf(stderr, "esock: %s%s\n", i.error ? "" : "warning: ", i.text.c_str());
  }
  if (!l.ok)
    std::fprintf(stderr,
                 "esock: the configuration has errors: DDPMODE connections are refused "
                 "(EINVAL) until they are fixed\n");
  return l;
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

}  // namespace

namespace {

// What a configuration is read from: the environment and the file.
struct Sources {
  std::vector<std::string> env;
  ConfigFile file;
  bool have_file = false;
};

Sources sources(std::vector<ConfigIssue>* issues) {
  Sources src;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) src.env.emplace_back(*e);
  const char* named = std::getenv("ESOCK_CONFIG");
  const std::string path = named != nullptr && *named != '\0' ? named : system_config_path;
  std::ifstream f(path);
  if (f) {
    std::ostringstream text;
    text << f.rdbuf();
    src.file = {path, text.str()};
    src.have_file = true;
  } else if (named != nullptr && *named != '\0' && issues != nullptr) {
    issues->push_back({true, "ESOCK_CONFIG: cannot read " + path + ": " + std::strerror(errno)});
  }
  return src;
}

}  // namespace

Config read_config(std::vector<ConfigIssue>* issues) {
  const Sources src = sources(issues);
  return parse_config(src.have_file ? &src.file : nullptr, src.env, issues);
}

std::string config_fingerprint() {
  // FNV-1a (64 bits) over the file's name and text and the sorted ESOCK_* variables, the
  // mark itself left out: equal exactly when this process reads what esockrun checked.
  Sources src = sources(nullptr);
  std::vector<std::string> vars;
  for (const std::string& kv : src.env)
    if (kv.compare(0, 6, "ESOCK_") == 0 && kv.compare(0, 21, "ESOCK_CONFIG_CHECKED=") != 0)
      vars.push_back(kv);
  std::sort(vars.begin(), vars.end());
  std::uint64_t h = 1469598103934665603ull;
  const auto mix = [&h](const std::string& s) {
    for (const char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    h = (h ^ 0xffu) * 1099511628211ull;  // a separator no text contains
  };
  mix(src.have_file ? src.file.name : "");
  mix(src.have_file ? src.file.text : "");
  for (const std::string& v : vars) mix(v);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

const Config& config() {
  return loaded().config;
}

bool config_ok() {
  return loaded().ok;
}

}  // namespace esock::sockets
