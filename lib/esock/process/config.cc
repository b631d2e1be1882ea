// Reading the configuration (config.h): the file named by ESOCK_CONFIG, else the system's
// (/etc/esock/esock.conf) when there is one, and the environment, through parse_config
// (config_parse.h). Its problems are printed once, when the configuration is first read.
#include "esock/process/config.h"

#include <unistd.h>

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
  // esockrun reported these before the program started (and refused it on errors): only
  // what is new since (an error, e.g. a file changed in between) is repeated here.
  const bool checked = std::getenv("ESOCK_CONFIG_CHECKED") != nullptr;
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

Config read_config(std::vector<ConfigIssue>* issues) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
  ConfigFile file;
  bool have_file = false;
  const char* named = std::getenv("ESOCK_CONFIG");
  const std::string path = named != nullptr && *named != '\0' ? named : system_config_path;
  std::ifstream f(path);
  if (f) {
    std::ostringstream text;
    text << f.rdbuf();
    file = {path, text.str()};
    have_file = true;
  } else if (named != nullptr && *named != '\0') {
    issues->push_back({true, "ESOCK_CONFIG: cannot read " + path + ": " + std::strerror(errno)});
  }
  return parse_config(have_file ? &file : nullptr, env, issues);
}

const Config& config() {
  return loaded().config;
}

bool config_ok() {
  return loaded().ok;
}

}  // namespace esock::sockets
