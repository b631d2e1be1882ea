// What esock tells on stderr (ESOCK_LOG, docs/configuration.md): one line each, "esock: ..."
// so that tests and people can grep for it.
//   error  only what stops esock from doing what was asked (a provider that cannot load);
//   warn   (default) also every failure with its reason: a DDPMODE connect or listen that
//          failed, a set-up that failed, a peer that does not speak esock, bad settings;
//   info   also each DDPMODE connection's state changes: listening, connected, accepted;
//   debug  also what helps find a problem (ESOCK_DEBUG=1 is the older spelling).
#pragma once

namespace esock::sockets {

enum class LogLevel { error = 0, warn = 1, info = 2, debug = 3 };

// Whether lines of `level` are printed (the configured ESOCK_LOG, read on first use).
bool log_on(LogLevel level);

// Prints "esock: " and the formatted text and a newline, if log_on(level).
void log(LogLevel level, const char* format, ...) __attribute__((format(printf, 2, 3)));

}  // namespace esock::sockets
