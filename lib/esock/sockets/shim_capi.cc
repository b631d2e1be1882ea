// The esock_ C API (include/esock/esock.h), exported from libesock.so.
#include "esock/esock.h"
#include "esock/sockets/fd_table.h"
#include "esock/sockets/runtime.h"

extern "C" {

const char* esock_version(void) {
  return "esock 0.1";
}

int esock_is_ddp(int fd) {
  return esock::sockets::fd_is_ddp(fd) ? 1 : 0;
}

int esock_blocked_calls(void) {
  esock::sockets::Runtime& rt = esock::sockets::Runtime::get();
  std::lock_guard lk(rt.mu);
  return rt.waiters();
}

}  // extern "C"
