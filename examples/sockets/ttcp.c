/* A ttcp-like streaming tool over DDPMODE sockets (or plain TCP with -P, to compare).
 *
 *   receiver:     esock_ttcp -r [-p port] [-l len]          (prints "port N")
 *   transmitter:  esock_ttcp -t host port [-l len] [-n count]
 *
 * The transmitter writes count buffers of len octets (a known pattern) and closes; the
 * receiver reads until EOF, verifies every octet, and both print MB/s (1 MB = 10^6 octets).
 * Blocking writes of at least ESOCK_RNDV_THRESHOLD octets go zero-copy by rendezvous. */
#include "example_net.h"

static void usage(const char* me) {
  fprintf(stderr,
          "usage: %s -r [-p port] [-l len] [-P]\n"
          "       %s -t host port [-l len] [-n count] [-P]\n",
          me, me);
  exit(2);
}

static void report(const char* who, uint64_t octets, double secs) {
  printf("%s: %llu octets in %.3f s = %.2f MB/s\n", who, (unsigned long long)octets, secs,
         secs > 0 ? (double)octets / secs / 1e6 : 0.0);
}

static int receive(int port, size_t len, int mode) {
  const int l = ex_listen(port, mode);
  if (l < 0) return 1;
  const int c = accept(l, NULL, NULL);
  if (c < 0) {
    perror("accept");
    return 1;
  }
  uint8_t* buf = malloc(len);
  uint64_t off = 0;
  double t0 = 0;
  for (;;) {
    const ssize_t r = read(c, buf, len);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      perror("read");
      return 1;
    }
    if (r == 0) break;
    if (off == 0) t0 = ex_now(); /* from the first octet: connection set-up excluded */
    const size_t bad = ex_check(buf, (size_t)r, off);
    if (bad != (size_t)-1) {
      fprintf(stderr, "ttcp-r: octet %llu differs\n", (unsigned long long)(off + bad));
      return 1;
    }
    off += (uint64_t)r;
  }
  report("ttcp-r", off, ex_now() - t0);
  printf("ttcp-r: verified\n");
  free(buf);
  close(c);
  close(l);
  return 0;
}

static int transmit(const char* host, const char* port, size_t len, long count, int mode) {
  const int fd = ex_connect(host, port, mode);
  if (fd < 0) return 1;
  uint8_t* buf = malloc(len);
  uint64_t off = 0;
  double spent = 0;
  for (long i = 0; i < count; ++i) {
    ex_fill(buf, len, off); /* not timed: the pattern costs more than the transfer */
    const double t = ex_now();
    if (ex_write_all(fd, buf, len) != 0) {
      perror("write");
      return 1;
    }
    spent += ex_now() - t;
    off += len;
  }
  report("ttcp-t", off, spent);
  free(buf);
  close(fd);
  return 0;
}

int main(int argc, char** argv) {
  int rx = 0, tx = 0, port = 5001, mode = ESOCK_DDPMODE, opt;
  size_t len = 65536;
  long count = 2048;
  while ((opt = getopt(argc, argv, "rtp:l:n:P")) != -1) {
    switch (opt) {
      case 'r':
        rx = 1;
        break;
      case 't':
        tx = 1;
        break;
      case 'p':
        port = atoi(optarg);
        break;
      case 'l':
        len = (size_t)strtoull(optarg, NULL, 0);
        break;
      case 'n':
        count = atol(optarg);
        break;
      case 'P':
        mode = 0;
        break;
      default:
        usage(argv[0]);
    }
  }
  if (rx == tx || len == 0 || count <= 0) usage(argv[0]);
  if (rx) return optind == argc ? receive(port, len, mode) : (usage(argv[0]), 2);
  if (argc - optind != 2) usage(argv[0]);
  return transmit(argv[optind], argv[optind + 1], len, count, mode);
}
