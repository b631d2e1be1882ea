/* conn_scale: many concurrent TCP connections, each verified with an echo: what a sockets
 * stack costs per connection and how fast it sets them up. A plain epoll program, built
 * without esock, run as it is on kernel TCP and under esockrun (bench/scale/README.md,
 * tests/integration/esock_dpdk/scale_conns.sh; source here: tests/integration/esock, as the
 * other plain programs the tests run).
 *
 *   conn_scale server -n N [-r ROUNDS] [-b ADDR] [-p PORT]
 *     listens (backlog 4096), prints "port P", accepts N connections and echoes whatever each
 *     sends; exits once all N came and went, ROUNDS times (default 1: churn with more). Prints its
 * memory at three points: after listen() ("start"), once the first N echoed ("held"), at each
 * round's end ("roundK") and once the last round closed and its heap is back within 1 MiB of the
 * start, or 20 s later ("end"). conn_scale client -n N [-r ROUNDS] [-c CONCURRENT] [-w SECONDS]
 * ADDR PORT opens N connections with at most CONCURRENT connects in flight (default 256), then
 *     sends on each a message naming it (64 octets) and checks the echo octet for octet,
 *     holds them idle for SECONDS (default 0), then closes them all; ROUNDS times, a second
 *     between rounds. Prints the set-up rate and its memory (after each round).
 *
 * Memory lines: "<role>: mem <point> rss_kb=R heap_kb=H conns=C fds=F": RSS from
 * /proc/self/status, heap as glibc's mallinfo2 counts it in use (arena and mmapped chunks),
 * which a leak raises and fragmentation does not, and the open descriptors. Exit status 0
 * only when every echo matched.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { msg_len = 64, max_events = 512 };

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static long rss_kb(void) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  if (!f) return -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %ld kB", &kb) == 1) break;
  fclose(f);
  return kb;
}

/* Open descriptors: the application's and those of the stack under it (esock's own). */
static long open_fds(void) {
  DIR* d = opendir("/proc/self/fd");
  long n = 0;
  if (!d) return -1;
  for (const struct dirent* e; (e = readdir(d));)
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n - 1; /* (the directory's own) */
}

static void mem(const char* role, const char* point, long conns) {
  const struct mallinfo2 m = mallinfo2();
  printf("%s: mem %s rss_kb=%ld heap_kb=%zu conns=%ld fds=%ld\n", role, point, rss_kb(),
         (m.uordblks + m.hblkhd) / 1024, conns, open_fds());
  fflush(stdout);
}

static void die(const char* what) {
  fprintf(stderr, "conn_scale: %s: %s\n", what, strerror(errno));
  exit(1);
}

/* Enough descriptors for N connections (and whatever the stack under us uses per one). */
static void raise_nofile(void) {
  struct rlimit r;
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
}

static void nonblocking(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* The message of connection i: its number, then a pattern of it. */
static void message(long i, unsigned char* m) {
  snprintf((char*)m, msg_len, "conn %08ld ", i);
  for (int k = 14; k < msg_len; ++k) m[k] = (unsigned char)((i * 31 + k * 7) & 0xff);
}

static size_t heap_at_start;

struct sconn {
  int fd;
  int echoed;
};

static int server(long n, int rounds, const char* addr, int port) {
  const long total = n * rounds;
  const int lfd = socket(AF_INET, SOCK_STREAM, 0);
  if (lfd < 0) die("socket");
  const int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) die("address");
  if (bind(lfd, (struct sockaddr*)&sa, sizeof sa) < 0) die("bind");
  if (listen(lfd, 4096) < 0) die("listen");
  socklen_t sl = sizeof sa;
  getsockname(lfd, (struct sockaddr*)&sa, &sl);
  mem("server", "start", 0);
  const struct mallinfo2 m0 = mallinfo2();
  heap_at_start = m0.uordblks + m0.hblkhd;
  printf("port %d\n", ntohs(sa.sin_port));
  fflush(stdout);
  nonblocking(lfd);
  const int ep = epoll_create1(0);
  if (ep < 0) die("epoll_create1");
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
  if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) < 0) die("epoll_ctl");
  long accepted = 0, open = 0, echoed = 0;
  double t_first = 0, t_all = 0;
  struct epoll_event evs[max_events];
  while (accepted < total || open > 0) {
    const int k = epoll_wait(ep, evs, max_events, 30000);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      fprintf(stderr, "server: stalled: %ld accepted, %ld open, %ld echoed\n", accepted, open,
              echoed);
      return 1;
    }
    for (int e = 0; e < k; ++e) {
      struct sconn* c = evs[e].data.ptr;
      if (!c) {
        for (;;) {
          const int fd = accept(lfd, NULL, NULL);
          if (fd < 0) break;
          if (accepted == 0) t_first = now_s();
          ++accepted;
          ++open;
          nonblocking(fd);
          struct sconn* s = calloc(1, sizeof *s);
          s->fd = fd;
          struct epoll_event cev = {.events = EPOLLIN, .data.ptr = s};
          if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &cev) < 0) die("epoll_ctl conn");
          if (accepted == n) t_all = now_s();
        }
        continue;
      }
      unsigned char buf[4096];
      const ssize_t r = read(c->fd, buf, sizeof buf);
      if (r > 0) {
        /* An echo of 64 octets always fits a fresh connection's send buffer. */
        if (write(c->fd, buf, (size_t)r) != r) die("echo write");
        if (!c->echoed) {
          c->echoed = 1;
          if (++echoed == n) mem("server", "held", open); /* the first round's */
        }
      } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
        epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        free(c);
        --open;
        /* A round's end (the client waits for it before the next): heap after each of them
         * stays flat when nothing leaks. */
        if (open == 0 && accepted % n == 0 && accepted < total) {
          char point[32];
          snprintf(point, sizeof point, "round%ld", accepted / n);
          mem("server", point, 0);
        }
      }
    }
  }
  printf("server: accepted %ld in %.3f s (%.0f/s)\n", accepted, t_all - t_first,
         t_all > t_first ? (double)accepted / (t_all - t_first) : 0.0);
  close(lfd);
  close(ep);
  /* The stack's own close handshakes and timers: the heap is looked at every 100 ms until it
   * is back within 1 MiB of where it started, for at most 20 s. */
  const size_t start_heap = heap_at_start;
  const double t_closed = now_s();
  while (now_s() - t_closed < 20) {
    const struct mallinfo2 m = mallinfo2();
    if ((m.uordblks + m.hblkhd) <= start_heap + (1u << 20)) break;
    usleep(100000);
  }
  printf("server: settled %.1f s after the last close\n", now_s() - t_closed);
  mem("server", "end", 0);
  return echoed == total ? 0 : 1;
}

struct cconn {
  int fd;
  long id;
  int state; /* 0 connecting, 1 connected, 2 echo checked */
  int got;
  unsigned char in[msg_len];
};

/* One round: N connections opened, each echoed and checked, held, closed. */
static int client_round(long n, long concurrent, int hold, struct sockaddr_in sa) {
  const int ep = epoll_create1(0);
  if (ep < 0) die("epoll_create1");
  struct cconn* cs = calloc((size_t)n, sizeof *cs);
  long started = 0, connected = 0, checked = 0, bad = 0;
  struct epoll_event evs[max_events];
  const double t0 = now_s();
  /* Set-up: connects in flight bounded by `concurrent`. */
  while (connected < n) {
    while (started < n && started - connected < concurrent) {
      struct cconn* c = &cs[started];
      c->id = started++;
      c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
      if (c->fd < 0) die("socket");
      const int one = 1;
      setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      if (connect(c->fd, (struct sockaddr*)&sa, sizeof sa) == 0) {
        c->state = 1;
        ++connected;
      } else if (errno != EINPROGRESS) {
        die("connect");
      }
      struct epoll_event ev = {.events = EPOLLOUT, .data.ptr = c};
      if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) < 0) die("epoll_ctl");
    }
    const int k = epoll_wait(ep, evs, max_events, 30000);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      fprintf(stderr, "client: set-up stalled at %ld of %ld\n", connected, n);
      return 1;
    }
    for (int e = 0; e < k; ++e) {
      struct cconn* c = evs[e].data.ptr;
      if (c->state != 0) continue;
      int err = 0;
      socklen_t el = sizeof err;
      getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
      if (err != 0) {
        errno = err;
        die("connect completion");
      }
      c->state = 1;
      ++connected;
    }
  }
  const double t_setup = now_s() - t0;
  printf("client: connected %ld in %.3f s (%.0f/s)\n", n, t_setup, (double)n / t_setup);
  mem("client", "connected", n);
  /* Echo: each connection sends its message, then waits for it back. */
  for (long i = 0; i < n; ++i) {
    unsigned char m[msg_len];
    message(i, m);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &cs[i]};
    if (epoll_ctl(ep, EPOLL_CTL_MOD, cs[i].fd, &ev) < 0) die("epoll_ctl mod");
    if (write(cs[i].fd, m, msg_len) != msg_len) die("write");
  }
  while (checked < n) {
    const int k = epoll_wait(ep, evs, max_events, 30000);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      fprintf(stderr, "client: echo stalled at %ld of %ld\n", checked, n);
      return 1;
    }
    for (int e = 0; e < k; ++e) {
      struct cconn* c = evs[e].data.ptr;
      if (c->state != 1) continue;
      const ssize_t r = read(c->fd, c->in + c->got, (size_t)(msg_len - c->got));
      if (r <= 0) {
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        fprintf(stderr, "client: conn %ld: %s before its echo\n", c->id,
                r == 0 ? "end of stream" : strerror(errno));
        return 1;
      }
      c->got += (int)r;
      if (c->got < msg_len) continue;
      unsigned char m[msg_len];
      message(c->id, m);
      if (memcmp(m, c->in, msg_len) != 0) ++bad;
      c->state = 2;
      ++checked;
    }
  }
  printf("client: %ld echoes checked, %ld wrong, in %.3f s\n", checked, bad,
         now_s() - t0 - t_setup);
  mem("client", "held", n);
  if (hold > 0) sleep((unsigned)hold);
  for (long i = 0; i < n; ++i) close(cs[i].fd);
  free(cs);
  close(ep);
  return bad == 0 ? 0 : 1;
}

static int client(long n, long concurrent, int hold, int rounds, const char* addr, int port) {
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) die("address");
  mem("client", "start", 0);
  for (int r = 0; r < rounds; ++r) {
    if (client_round(n, concurrent, hold, sa) != 0) return 1;
    sleep(1); /* the closes go out (and the server sees the round end) before the next */
    char point[32];
    snprintf(point, sizeof point, "round%d", r + 1);
    mem("client", r + 1 == rounds ? "end" : point, 0);
  }
  return 0;
}

int main(int argc, char** argv) {
  long n = 100, concurrent = 256;
  const char* bind_addr = "0.0.0.0";
  int port = 0, hold = 0, rounds = 1, opt;
  if (argc < 2) {
    fprintf(stderr,
            "usage: conn_scale server -n N [-r ROUNDS] [-b ADDR] [-p PORT]\n"
            "       conn_scale client -n N [-r ROUNDS] [-c CONCURRENT] [-w SECONDS] ADDR "
            "PORT\n");
    return 2;
  }
  const char* role = argv[1];
  optind = 2;
  while ((opt = getopt(argc, argv, "n:c:b:p:w:r:")) != -1) {
    switch (opt) {
      case 'n':
        n = atol(optarg);
        break;
      case 'c':
        concurrent = atol(optarg);
        break;
      case 'b':
        bind_addr = optarg;
        break;
      case 'p':
        port = atoi(optarg);
        break;
      case 'w':
        hold = atoi(optarg);
        break;
      case 'r':
        rounds = atoi(optarg);
        break;
      default:
        return 2;
    }
  }
  if (n <= 0 || concurrent <= 0 || rounds <= 0) return 2;
  setvbuf(stdout, NULL, _IOLBF, 0);
  raise_nofile();
  if (strcmp(role, "server") == 0) return server(n, rounds, bind_addr, port);
  if (strcmp(role, "client") == 0 && optind + 2 == argc)
    return client(n, concurrent, hold, rounds, argv[optind], atoi(argv[optind + 1]));
  fprintf(stderr, "conn_scale: bad arguments\n");
  return 2;
}
