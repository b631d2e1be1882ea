// The settings of docs/configuration.md from a file's text and an environment, validated,
// without I/O: the library (config.cc), esockrun (to refuse a bad configuration before the
// program starts) and the tests all use this one parser.
//
// A file is lines of `key = value`, `#` starts a comment, keys are the variables' names in
// lower case without ESOCK_. The environment (ESOCK_<KEY>) overrides the file. Problems are
// reported with where they are (FILE:LINE, or the variable) and what was expected:
//   errors:   a line that is not `key = value`, an unknown key, a value of the wrong kind or
//             out of its range (in the file or the environment), a file that cannot be read;
//   warnings: an ESOCK_* variable that is no setting but close to one (a misspelling), a key
//             given twice in the file.
// A setting in error keeps its default; callers refuse to run with errors (config_ok()).
#pragma once

#include <string>
#include <vector>

#include "esock/process/config_values.h"

namespace esock::sockets {

struct ConfigIssue {
  bool error = true;
  std::string text;  // "FILE:LINE: ..." or "ESOCK_NAME: ..."; no "esock: " prefix
};

struct ConfigFile {
  std::string name;  // as the messages should call it
  std::string text;
};

// `env`: NAME=VALUE strings (as environ holds them); only ESOCK_* ones are read.
Config parse_config(const ConfigFile* file, const std::vector<std::string>& env,
                    std::vector<ConfigIssue>* issues);

// Every setting's key (lower case), in the documented order.
std::vector<std::string> config_keys();

}  // namespace esock::sockets
