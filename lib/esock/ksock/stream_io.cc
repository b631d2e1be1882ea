#include "esock/ksock/stream_io.h"

#include <sys/socket.h>

#include <cerrno>

namespace esock::ksock {

SocketCalls kernel_socket_calls() {
  return SocketCalls{::send, ::recv};
}

StreamIo::StreamIo(int fd, rnic::ByteStreamEngine& engine, SocketCalls calls,
                   std::size_t read_chunk)
    : fd_(fd), engine_(engine), calls_(calls), buf_(read_chunk) {}

void StreamIo::flush() {
  for (;;) {
    engine_.pump();
    const bytes_view out = engine_.output();
    if (out.empty() || stream_ == Stream::broken) return;
    const ssize_t n = calls_.send(fd_, out.data(), out.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      engine_.consume(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    stream_over(false);  // the kernel reports the stream broken (RST, EPIPE): the LLP is gone
    return;
  }
}

void StreamIo::read_available() {
  for (int i = 0; i < 16 && stream_ == Stream::open; ++i) {
    const ssize_t n = calls_.recv(fd_, buf_.data(), buf_.size(), MSG_DONTWAIT);
    if (n > 0) {
      engine_.on_bytes({buf_.data(), static_cast<std::size_t>(n)});
      if (static_cast<std::size_t>(n) < buf_.size()) return;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    stream_over(n == 0);
  }
}

void StreamIo::stream_over(bool orderly) {
  stream_ = orderly ? Stream::ended : Stream::broken;
  engine_.on_transport_closed(orderly);
}

}  // namespace esock::ksock
