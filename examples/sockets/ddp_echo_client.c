/* A DDPMODE echo client: sends count messages of growing sizes up to len octets (the larger
 * ones go by zero-copy rendezvous, docs/stream-protocol.md section 6), reads each echo
 * back and verifies every octet.
 *
 *   ddp_echo_client host port [-l max_len] [-n count] [-m]
 * -m: MSGMODE (docs/stream-protocol.md section 7, ddp_echo_server -m): each message goes by one
 * write and must come back by one read of exactly its length (the boundaries kept). */
#include "example_net.h"

int main(int argc, char** argv) {
  size_t max_len = 1 << 20;
  int count = 20, opt, msgmode = 0;
  while ((opt = getopt(argc, argv, "l:n:m")) != -1) {
    if (opt == 'l')
      max_len = (size_t)strtoull(optarg, NULL, 0);
    else if (opt == 'n')
      count = atoi(optarg);
    else if (opt == 'm')
      msgmode = 1;
    else
      break;
  }
  if (argc - optind != 2 || max_len == 0 || (msgmode && max_len > (1 << 20))) {
    fprintf(stderr, "usage: %s host port [-l max_len] [-n count] [-m]   (-m: max_len <= 1 MiB)\n",
            argv[0]);
    return 2;
  }
  const int fd =
      ex_connect(argv[optind], argv[optind + 1], msgmode ? ESOCK_MSGMODE : ESOCK_DDPMODE);
  if (fd < 0) return 1;
  if (ex_print_mpa(stdout, fd) != 0) return 1;
  uint8_t* out = malloc(max_len);
  uint8_t* in = malloc(max_len);
  uint64_t off = 0, total = 0;
  size_t len = 1;
  for (int i = 0; i < count; ++i) {
    ex_fill(out, len, off);
    if (msgmode) {
      /* One message each way: a longer buffer than the message proves the read stops at
       * its boundary. */
      const ssize_t w = write(fd, out, len);
      const ssize_t r = w == (ssize_t)len ? read(fd, in, max_len) : -1;
      if (r != (ssize_t)len) {
        fprintf(stderr, "message %d: wrote %zd, read %zd of %zu octets (%s)\n", i, w, r, len,
                r < 0 ? strerror(errno) : "boundary lost");
        return 1;
      }
    } else if (ex_write_all(fd, out, len) != 0 || ex_read_all(fd, in, len) != 0) {
      perror("echo");
      return 1;
    }
    const size_t bad = ex_check(in, len, off);
    if (bad != (size_t)-1) {
      fprintf(stderr, "message %d: octet %zu differs\n", i, bad);
      return 1;
    }
    off += len;
    total += len;
    len = len * 4 + 3 > max_len ? max_len : len * 4 + 3;
  }
  printf("ok: %d messages, %llu octets echoed and verified (DDPMODE %d%s)\n", count,
         (unsigned long long)total, esock_is_ddp(fd), msgmode ? ", MSGMODE boundaries kept" : "");
  free(out);
  free(in);
  close(fd);
  return 0;
}
