// esock_tcp's output: one line per topic, key=value, for people and for test scripts.
#pragma once

#include "options.h"
#include "tcp/runtime/runtime.h"
#include "transfer.h"

namespace esock::tcp::tool {

void print_report(const Options& o, const Transfer& x, Runtime& rt);
// 0: the run did what the options asked; 1 otherwise (with the reason on stderr).
int exit_status(const Options& o, const Transfer& x);

}  // namespace esock::tcp::tool
