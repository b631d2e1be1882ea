#include "esock/ksock/stream_io.h"

#include <sys/socket.h>

#include <cerrno>
#include <vector>

namespace esock::ksock {

SocketCalls kernel_socket_calls() {
  return SocketCalls{::send, ::recv};
}

StreamIo::StreamIo(int fd, rnic::ByteStreamEngine& engine, SocketCalls calls,
                   std::size_t read_chunk)
    : fd_(fd), engine_(engine), calls_(calls), read_chunk_(read_chunk) {}

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
  // One buffer per thread, not per connection: the engine takes the octets before the next
  // read (10,000 idle connections kept 64 KiB each otherwise).
  thread_local std::vector<std::uint8_t> buf;
  if (buf.size() < read_chunk_) buf.resize(read_chunk_);
  for (int i = 0; i < 16 && stream_ == Stream::open; ++i) {
    const ssize_t n = calls_.recv(fd_, buf.data(), read_chunk_, MSG_DONTWAIT);
    if (n > 0) {
      engine_.on_bytes({buf.data(), static_cast<std::size_t>(n)});
      if (static_cast<std::size_t>(n) < read_chunk_) return;
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
