// A socket program that knows nothing about esock: a TCP echo over loopback exercising
// socket/bind/listen/accept4/connect, read/write, readv/writev, send/recv, sendmsg/recvmsg,
// sendto/recvfrom, sendfile, poll, select, epoll, dup/dup2/fcntl, shutdown, getsockname/
// getpeername, SO_*/TCP_* options, non-blocking mode and fork. It prints a transcript with
// no addresses, ports or pids so two runs can be compared byte for byte.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

void check(bool ok, const char* what) {
  std::printf("%s: %s\n", what, ok ? "ok" : std::strerror(errno));
  if (!ok) std::exit(1);
}

std::string read_exact(int fd, size_t n) {
  std::string s(n, '\0');
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(fd, s.data() + got, n - got);
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  s.resize(got);
  return s;
}

}  // namespace

int main() {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  check(lfd >= 0, "socket");
  int one = 1;
  check(::setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0, "SO_REUSEADDR");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  check(::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0, "bind");
  check(::listen(lfd, 8) == 0, "listen");
  socklen_t al = sizeof a;
  check(::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &al) == 0, "getsockname");

  const pid_t child = ::fork();
  if (child == 0) {  // the echo server: one connection, echo until EOF
    const int c = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) _exit(2);
    char buf[4096];
    for (;;) {
      const ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) break;
      if (::send(c, buf, static_cast<size_t>(n), MSG_NOSIGNAL) != n) _exit(3);
    }
    ::close(c);
    _exit(0);
  }
  check(child > 0, "fork");
  ::close(lfd);

  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  check(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0, "connect");
  check(::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0, "TCP_NODELAY");
  sockaddr_in peer{};
  socklen_t pl = sizeof peer;
  check(::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl) == 0 &&
            peer.sin_port == a.sin_port,
        "getpeername");

  check(::write(fd, "hello", 5) == 5, "write");
  std::printf("read: %s\n", read_exact(fd, 5).c_str());

  char x[] = "gather-", y[] = "write";
  iovec v[2] = {{x, 7}, {y, 5}};
  check(::writev(fd, v, 2) == 12, "writev");
  char p[6] = {}, q[8] = {};
  iovec r[2] = {{p, 5}, {q, 7}};
  ssize_t got = 0;
  while (got < 12) {
    const ssize_t n = ::readv(fd, r, 2);
    if (n <= 0) break;
    got += n;
    // Rare short reads: advance the vector.
    size_t adv = static_cast<size_t>(n);
    for (auto& e : r) {
      const size_t t = adv < e.iov_len ? adv : e.iov_len;
      e.iov_base = static_cast<char*>(e.iov_base) + t;
      e.iov_len -= t;
      adv -= t;
    }
  }
  std::printf("readv: %s%s\n", p, q);

  msghdr m{};
  char msgbuf[] = "sendmsg";
  iovec mv{msgbuf, 7};
  m.msg_iov = &mv;
  m.msg_iovlen = 1;
  check(::sendmsg(fd, &m, 0) == 7, "sendmsg");
  std::printf("recv: %s\n", read_exact(fd, 7).c_str());
  check(::sendto(fd, "sendto", 6, 0, nullptr, 0) == 6, "sendto");
  char rf[7] = {};
  check(::recvfrom(fd, rf, 6, MSG_WAITALL, nullptr, nullptr) == 6, "recvfrom");
  std::printf("recvfrom: %s\n", rf);

  // sendfile from a pipe-backed... a temporary file.
  char path[] = "/tmp/plain_sockets.XXXXXX";
  const int tf = ::mkstemp(path);
  check(tf >= 0 && ::write(tf, "from-a-file", 11) == 11, "tmpfile");
  ::unlink(path);
  off_t off = 0;
  check(::sendfile(fd, tf, &off, 11) == 11, "sendfile");
  std::printf("after sendfile: %s\n", read_exact(fd, 11).c_str());
  ::close(tf);

  // Readiness through poll, select and epoll, on the socket and a pipe in one set.
  int pfd[2];
  check(::pipe(pfd) == 0, "pipe");
  check(::write(fd, "!", 1) == 1, "write");
  pollfd pp[2] = {{fd, POLLIN, 0}, {pfd[0], POLLIN, 0}};
  check(::poll(pp, 2, 5000) == 1 && (pp[0].revents & POLLIN), "poll");
  fd_set rs;
  FD_ZERO(&rs);
  FD_SET(fd, &rs);
  timeval tv{5, 0};
  check(::select(fd + 1, &rs, nullptr, nullptr, &tv) == 1, "select");
  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLET;
  ev.data.fd = fd;
  check(::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0, "epoll_ctl");
  ev.data.fd = pfd[0];
  check(::epoll_ctl(ep, EPOLL_CTL_ADD, pfd[0], &ev) == 0, "epoll_ctl pipe");
  epoll_event out[2];
  check(::epoll_wait(ep, out, 2, 5000) == 1 && out[0].data.fd == fd, "epoll_wait");
  std::printf("read: %s\n", read_exact(fd, 1).c_str());

  // dup / dup2 / fcntl and non-blocking mode.
  const int d = ::dup(fd);
  check(d >= 0, "dup");
  const int d2 = ::fcntl(fd, F_DUPFD_CLOEXEC, 50);
  check(d2 >= 50 && (::fcntl(d2, F_GETFD) & FD_CLOEXEC), "F_DUPFD_CLOEXEC");
  check(::dup2(d, 60) == 60, "dup2");
  check(::fcntl(60, F_SETFL, ::fcntl(60, F_GETFL) | O_NONBLOCK) == 0, "O_NONBLOCK");
  char nb;
  errno = 0;
  check(::read(60, &nb, 1) == -1 && errno == EAGAIN, "non-blocking read EAGAIN");
  // dup'd descriptors share one open file description (POSIX dup), so the flag shows on fd
  // too; clear it again before the blocking reads below, or they race the echo.
  check((::fcntl(fd, F_GETFL) & O_NONBLOCK) != 0, "O_NONBLOCK shared by dups");
  check(::fcntl(60, F_SETFL, ::fcntl(60, F_GETFL) & ~O_NONBLOCK) == 0, "blocking again");
  check(::write(d, "dup", 3) == 3, "write via dup");
  std::printf("read via dup2: %s\n", read_exact(d2, 3).c_str());
  ::close(d2);
  ::close(60);

  // Half close: the server sees EOF, finishes, and we see EOF.
  check(::shutdown(d, SHUT_WR) == 0, "shutdown");
  ::close(d);
  char eof;
  check(::read(fd, &eof, 1) == 0, "read EOF");
  ::close(fd);
  ::close(ep);
  ::close(pfd[0]);
  ::close(pfd[1]);
  int status = 0;
  check(::waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "child exit");
  return 0;
}
