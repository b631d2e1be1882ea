// The esock_ C API (include/esock/esock.h), exported from libesock.so.
#include "esock/esock.h"
#include "esock/sockets/fd_table.h"

extern "C" {

const char* esock_version(void) {
  return "esock 0.1";
}

int esock_is_ddp(int fd) {
  return esock::sockets::fd_is_ddp(fd) ? 1 : 0;
}

}  // extern "C"
