/* Shared plumbing of the esock socket examples: DDPMODE (or RAWMODE) listen/connect with
 * nothing but socket calls plus one setsockopt, full-length read/write, a verifiable data
 * pattern and a clock. Each example is one .c file; copy this header along with it. */
#ifndef ESOCK_EXAMPLE_NET_H
#define ESOCK_EXAMPLE_NET_H

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "esock/esock.h"

/* mode: 0 plain TCP, ESOCK_DDPMODE, ESOCK_MSGMODE or ESOCK_RAWMODE. */
static inline int ex_socket(int family, int mode) {
  const int fd = socket(family, SOCK_STREAM, 0);
  const int one = 1;
  if (fd < 0) return -1;
  if (mode != 0 && setsockopt(fd, SOL_ESOCK, mode, &one, sizeof one) != 0) {
    perror("setsockopt(SOL_ESOCK)");
    close(fd);
    return -1;
  }
  return fd;
}

/* Listens on port (0: any) of all IPv4 addresses and prints "port N" on stdout, flushed,
 * so a script can start the other side. */
static inline int ex_listen(int port, int mode) {
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  const int fd = ex_socket(AF_INET, mode);
  const int one = 1;
  if (fd < 0) return -1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  if (bind(fd, (struct sockaddr*)&a, sizeof a) != 0 || listen(fd, 16) != 0) {
    perror("bind/listen");
    close(fd);
    return -1;
  }
  getsockname(fd, (struct sockaddr*)&a, &len);
  printf("port %d\n", ntohs(a.sin_port));
  fflush(stdout);
  return fd;
}

static inline int ex_connect(const char* host, const char* port, int mode) {
  struct addrinfo hints, *res = NULL, *ai;
  int fd = -1;
  memset(&hints, 0, sizeof hints);
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host, port, &hints, &res) != 0) {
    fprintf(stderr, "cannot resolve %s\n", host);
    return -1;
  }
  for (ai = res; ai != NULL; ai = ai->ai_next) {
    fd = ex_socket(ai->ai_family, mode);
    if (fd < 0) continue;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) break;
    perror("connect");
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  return fd;
}

/* Prints what MPA negotiated for a connected DDPMODE/RAWMODE socket (extension API). */
/* One connection in `mode`: with no host, the server's side (listens on port, prints
 * "port N", accepts one connection), else the client's, to host and port. -1 on failure. */
static inline int ex_one_connection(const char* host, const char* port_text, int port, int mode) {
  if (host != NULL) return ex_connect(host, port_text, mode);
  const int l = ex_listen(port, mode);
  if (l < 0) return -1;
  const int fd = accept(l, NULL, NULL);
  close(l);
  return fd;
}

static inline int ex_print_mpa(FILE* out, int fd) {
  struct esock_mpa_info mi;
  if (esock_query_mpa(fd, &mi) != 0) {
    perror("esock_query_mpa");
    return -1;
  }
  if (mi.revision == 0) { /* the rdmacm provider: the RNIC (or siw) negotiated MPA itself */
    fprintf(out, "MPA by the RNIC (not visible to esock), IRD/ORD %d/%d\n", mi.ird, mi.ord);
    return 0;
  }
  fprintf(out, "MPA v%d, CRC %s, markers %d/%d (tx/rx), IRD/ORD %d/%d, p2p %d, RTR %d\n",
          mi.revision, mi.crc ? "on" : "off", mi.markers_tx, mi.markers_rx, mi.ird, mi.ord, mi.p2p,
          mi.rtr);
  return 0;
}

static inline int ex_write_all(int fd, const void* p, size_t n) {
  const char* c = (const char*)p;
  while (n > 0) {
    const ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    c += w;
    n -= (size_t)w;
  }
  return 0;
}

/* 0 on success, 1 at a clean EOF before n octets, -1 on error. */
static inline int ex_read_all(int fd, void* p, size_t n) {
  char* c = (char*)p;
  while (n > 0) {
    const ssize_t r = read(fd, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) return 1;
    c += r;
    n -= (size_t)r;
  }
  return 0;
}

/* The octet at stream offset off of the examples' test pattern. */
static inline uint8_t ex_pattern(uint64_t off) {
  return (uint8_t)(off * 131u + (off >> 11));
}

static inline void ex_fill(uint8_t* p, size_t n, uint64_t off) {
  for (size_t i = 0; i < n; ++i) p[i] = ex_pattern(off + i);
}

/* Offset of the first octet that differs from the pattern, or (size_t)-1. */
static inline size_t ex_check(const uint8_t* p, size_t n, uint64_t off) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != ex_pattern(off + i)) return i;
  return (size_t)-1;
}

static inline double ex_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#endif /* ESOCK_EXAMPLE_NET_H */
