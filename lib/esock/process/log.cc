#include "esock/process/log.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <string>

#include "esock/process/config.h"

namespace esock::sockets {

namespace {

LogLevel level_of(const std::string& name) {
  if (name == "error") return LogLevel::error;
  if (name == "info") return LogLevel::info;
  if (name == "debug") return LogLevel::debug;
  return LogLevel::warn;
}

}  // namespace

bool log_on(LogLevel level) {
  static const LogLevel configured = level_of(config().log);
  return level <= configured;
}

void log(LogLevel level, const char* format, ...) {
  if (!log_on(level)) return;
  // One write per line, so lines of several threads or processes do not interleave.
  char line[1024];
  int n = std::snprintf(line, sizeof line, "esock: ");
  va_list ap;
  va_start(ap, format);
  const int m = std::vsnprintf(line + n, sizeof line - static_cast<std::size_t>(n) - 1, format, ap);
  va_end(ap);
  n = m < 0 ? n : std::min<int>(n + m, static_cast<int>(sizeof line) - 2);
  line[n++] = '\n';
  std::fwrite(line, 1, static_cast<std::size_t>(n), stderr);
}

}  // namespace esock::sockets
