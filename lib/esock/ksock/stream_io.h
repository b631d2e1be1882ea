// Moves octets between a connected, non-blocking kernel TCP socket and the software RNIC
// over a byte stream (rnic/byte_stream_engine.h), never waiting: writes what the engine has
// framed until the socket pushes back, reads what the socket holds. The one place that
// turns kernel socket results into the engine's view of its transport (end, break).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "esock/rnic/byte_stream_engine.h"

namespace esock::ksock {

// The socket calls to use: the kernel's by default; libesock passes libc's own so its
// transport never re-enters its interposed functions.
struct SocketCalls {
  ssize_t (*send)(int, const void*, std::size_t, int);
  ssize_t (*recv)(int, void*, std::size_t, int);
};
SocketCalls kernel_socket_calls();

class StreamIo {
 public:
  enum class Stream { open, ended, broken };  // ended: the peer's FIN; broken: RST, EPIPE...

  StreamIo(int fd, rnic::ByteStreamEngine& engine, SocketCalls calls, std::size_t read_chunk);

  // Frames what the queue pair has and writes until the socket would block.
  void flush();
  // Reads what the socket has into the engine: at most 16 reads, so one busy peer cannot
  // starve the caller's other work.
  void read_available();
  Stream stream() const { return stream_; }

 private:
  void stream_over(bool orderly);

  int fd_;
  rnic::ByteStreamEngine& engine_;
  SocketCalls calls_;
  std::size_t read_chunk_;  // octets per read
  Stream stream_ = Stream::open;
};

}  // namespace esock::ksock
