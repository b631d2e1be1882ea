/* RDMA Write ping-pong with the esock extension API (RAWMODE: the application drives the
 * queue pair). Each side registers a buffer for remote writes and sends the other its
 * {address, STag} in a Send. Then, iters times: the client RDMA-Writes len octets into the
 * server's buffer followed by a 4-octet Send carrying the iteration number (RFC 5040 5.5:
 * the Send is placed after the Write, so its arrival says the Write landed); the server
 * verifies the octets and writes them back the same way. Prints the round-trip time.
 *
 *   server:  esock_rdma_pingpong [-p port] [-l len] [-n iters]      (prints "port N")
 *   client:  esock_rdma_pingpong host port [-l len] [-n iters] */
#include <endian.h>
#include <poll.h>

#include "example_net.h"

struct adv { /* the buffer advertisement, big-endian on the wire */
  uint64_t addr;
  uint32_t stag;
  uint32_t len;
};

static int fd_;
static long sq_posted, sq_done; /* send-queue work requests posted / completed */

/* Waits for the next completion; exits on any failure. */
static struct esock_wc next_wc(void) {
  struct esock_wc wc;
  for (;;) {
    const int n = esock_poll_cq(fd_, &wc, 1);
    if (n < 0) {
      perror("esock_poll_cq");
      exit(1);
    }
    if (n == 1) break;
    struct pollfd p = {esock_comp_fd(fd_), POLLIN, 0};
    if (poll(&p, 1, 10000) != 1) {
      fprintf(stderr, "no completion within 10 s\n");
      exit(1);
    }
  }
  if (wc.opcode != ESOCK_WC_RECV) ++sq_done;
  if (wc.status != ESOCK_WC_SUCCESS) {
    fprintf(stderr, "work request %llu failed: status %d\n", (unsigned long long)wc.wr_id,
            wc.status);
    exit(1);
  }
  return wc;
}

/* Waits until the receive with id want completed (send completions are skipped). */
static void wait_recv(uint64_t want) {
  for (;;) {
    const struct esock_wc wc = next_wc();
    if (wc.opcode == ESOCK_WC_RECV && wc.wr_id == want) return;
  }
}

static void check(int rc, const char* what) {
  if (rc != 0) {
    perror(what);
    exit(1);
  }
}

static void post_sq(int rc, const char* what) {
  check(rc, what);
  ++sq_posted;
}

int main(int argc, char** argv) {
  int port = 7778, iters = 1000, opt;
  uint32_t len = 4096;
  while ((opt = getopt(argc, argv, "p:l:n:")) != -1) {
    if (opt == 'p')
      port = atoi(optarg);
    else if (opt == 'l')
      len = (uint32_t)strtoul(optarg, NULL, 0);
    else if (opt == 'n')
      iters = atoi(optarg);
    else
      break;
  }
  const int server = argc == optind;
  if ((!server && argc - optind != 2) || len == 0 || iters <= 0) {
    fprintf(stderr, "usage: %s [-p port] [-l len] [-n iters] | host port [-l len] [-n iters]\n",
            argv[0]);
    return 2;
  }
  fd_ = ex_one_connection(server ? NULL : argv[optind], server ? NULL : argv[optind + 1], port,
                          ESOCK_RAWMODE);
  if (fd_ < 0) return 1;

  check(ex_print_mpa(stderr, fd_), "esock_query_mpa");

  /* data: the peer writes into it; out: what we write to the peer. */
  uint8_t* data = calloc(1, len);
  uint8_t* out = malloc(len);
  struct adv mine, theirs;
  uint32_t seq_in = 0, seq_out = 0;
  const uint32_t data_key =
      esock_reg_mr(fd_, data, len, ESOCK_ACCESS_LOCAL_WRITE | ESOCK_ACCESS_REMOTE_WRITE);
  const uint32_t out_key = esock_reg_mr(fd_, out, len, 0);
  const uint32_t ctl_key = esock_reg_mr(fd_, &mine, sizeof mine, 0);
  const uint32_t theirs_key = esock_reg_mr(fd_, &theirs, sizeof theirs, ESOCK_ACCESS_LOCAL_WRITE);
  const uint32_t in_key = esock_reg_mr(fd_, &seq_in, sizeof seq_in, ESOCK_ACCESS_LOCAL_WRITE);
  const uint32_t seq_key = esock_reg_mr(fd_, &seq_out, sizeof seq_out, 0);
  if (!data_key || !out_key || !ctl_key || !theirs_key || !in_key || !seq_key) {
    perror("esock_reg_mr");
    return 1;
  }
  const struct esock_sge theirs_sge = {&theirs, sizeof theirs, theirs_key};
  const struct esock_sge in_sge = {&seq_in, sizeof seq_in, in_key};
  const struct esock_sge mine_sge = {&mine, sizeof mine, ctl_key};
  const struct esock_sge out_sge = {out, len, out_key};
  const struct esock_sge seq_sge = {&seq_out, sizeof seq_out, seq_key};

  /* Receives first (docs/sockets.md "Start-up"), then the advertisement. */
  check(esock_post_recv(fd_, 1, &theirs_sge, 1), "esock_post_recv");
  check(esock_post_recv(fd_, 100, &in_sge, 1), "esock_post_recv");
  mine.addr = htobe64((uint64_t)(uintptr_t)data);
  mine.stag = htobe32(data_key);
  mine.len = htobe32(len);
  post_sq(esock_post_send(fd_, 2, &mine_sge, 1), "esock_post_send");
  wait_recv(1);
  const uint64_t raddr = be64toh(theirs.addr);
  const uint32_t rkey = be32toh(theirs.stag);
  if (be32toh(theirs.len) < len) {
    fprintf(stderr, "peer buffer too small\n");
    return 1;
  }

  double t0 = ex_now();
  for (int i = 0; i < iters; ++i) {
    if (!server) { /* ping */
      ex_fill(out, len, (uint64_t)i * len);
      seq_out = (uint32_t)i;
      post_sq(esock_post_write(fd_, 3, &out_sge, 1, rkey, raddr), "esock_post_write");
      post_sq(esock_post_send(fd_, 4, &seq_sge, 1), "esock_post_send");
      if (i == 0) t0 = ex_now();
    }
    wait_recv(100 + (uint64_t)i);
    check(esock_post_recv(fd_, 101 + (uint64_t)i, &in_sge, 1), "esock_post_recv");
    const size_t bad = ex_check(data, len, (uint64_t)i * len);
    if (seq_in != (uint32_t)i || bad != (size_t)-1) {
      fprintf(stderr, "iteration %d: wrong data (seq %u, octet %zu)\n", i, seq_in, bad);
      return 1;
    }
    if (server) { /* pong: the same octets back */
      memcpy(out, data, len);
      seq_out = (uint32_t)i;
      post_sq(esock_post_write(fd_, 3, &out_sge, 1, rkey, raddr), "esock_post_write");
      post_sq(esock_post_send(fd_, 4, &seq_sge, 1), "esock_post_send");
    }
  }
  const double secs = ex_now() - t0;
  /* Every Write and Send completes before its buffer goes (as with verbs). */
  while (sq_done < sq_posted) next_wc();
  if (!server)
    printf("ok: %d RDMA Write ping-pongs of %u octets verified, %.2f us per round trip\n", iters,
           len, secs / iters * 1e6);
  else
    printf("ok: %d RDMA Write pongs of %u octets verified\n", iters, len);
  close(fd_);
  free(data);
  free(out);
  return 0;
}
