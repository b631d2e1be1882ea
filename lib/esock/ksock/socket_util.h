// Thin helpers over kernel TCP sockets for the portable transport. Errors come back as
// errno values with a message; nothing here throws.
#pragma once

#include <cstdint>
#include <string>

namespace esock::ksock {

struct SockResult {
  int fd = -1;      // >= 0 on success
  int err = 0;      // errno on failure
  std::string why;  // human-readable failure
};

// Connects to host:port (numeric or resolvable), waiting at most timeout_ms.
SockResult tcp_connect(const std::string& host, std::uint16_t port, int timeout_ms);
// Binds and listens on addr:port (port 0 picks one).
SockResult tcp_listen(const std::string& addr, std::uint16_t port, int backlog);
// Accepts one connection, waiting at most timeout_ms (-1: forever).
SockResult tcp_accept(int listen_fd, int timeout_ms);
// Non-blocking, TCP_NODELAY, close-on-exec: how the transport runs every connected socket.
int prepare_stream_socket(int fd);
std::uint16_t local_port(int fd);
// The connection's MSS as the kernel reports it (TCP_MAXSEG), or fallback.
std::size_t effective_mss(int fd, std::size_t fallback);

}  // namespace esock::ksock
