/* RDMA atomics and immediate data with the esock extension API (RFC 7306; esock.h): the
 * server exposes a counter and a lock word; the client FetchAdds the counter n times,
 * takes and releases the lock with CmpSwap m times (adding 1000 inside it), then RDMA-Writes
 * a note with Immediate Data carrying its total, which completes at the server only once
 * the note is in place (RFC 7306 section 7). The server checks the counter and the note
 * against it. With -x the client finally aims a FetchAdd at a misaligned address, which the
 * server must refuse with a Terminate (RFC 7306 section 8.2) and nothing changed.
 *
 *   server:  esock_atomic_counter [-p port] [-x]                       (prints "port N")
 *   client:  esock_atomic_counter host port [-n adds] [-m locks] [-x] */
#include <endian.h>
#include <poll.h>

#include "example_net.h"

struct adv { /* the server's region, big-endian on the wire */
  uint64_t addr;
  uint32_t stag;
  uint32_t len;
};

struct region { /* the server's: the peer's atomics and its note land here */
  uint64_t counter;
  uint64_t lock;
  char note[48];
};

static int fd_;

static struct esock_wc next_wc(void) {
  struct esock_wc wc;
  for (;;) {
    const int n = esock_poll_cq(fd_, &wc, 1);
    if (n < 0) {
      perror("esock_poll_cq");
      exit(1);
    }
    if (n == 1) return wc;
    struct pollfd p = {esock_comp_fd(fd_), POLLIN, 0};
    /* The server waits out the client's whole run: atomics complete at the requester. */
    if (poll(&p, 1, 60000) != 1) {
      fprintf(stderr, "no completion within 60 s\n");
      exit(1);
    }
  }
}

static struct esock_wc ok_wc(void) {
  const struct esock_wc wc = next_wc();
  if (wc.status != ESOCK_WC_SUCCESS) {
    fprintf(stderr, "work request %llu failed: status %d\n", (unsigned long long)wc.wr_id,
            wc.status);
    exit(1);
  }
  return wc;
}

static void check(int rc, const char* what) {
  if (rc != 0) {
    perror(what);
    exit(1);
  }
}

static int serve(int misaligned_expected) {
  static struct region r __attribute__((aligned(64)));
  static struct adv mine;
  static char rx[64];
  const uint32_t rk =
      esock_reg_mr(fd_, &r, sizeof r, ESOCK_ACCESS_REMOTE_ATOMIC | ESOCK_ACCESS_REMOTE_WRITE);
  const uint32_t ak = esock_reg_mr(fd_, &mine, sizeof mine, 0);
  const uint32_t xk = esock_reg_mr(fd_, rx, sizeof rx, ESOCK_ACCESS_LOCAL_WRITE);
  if (!rk || !ak || !xk) check(-1, "esock_reg_mr");
  const struct esock_sge x = {rx, sizeof rx, xk};
  check(esock_post_recv(fd_, 1, &x, 1), "esock_post_recv"); /* the Immediate Data */
  mine.addr = htobe64((uint64_t)(uintptr_t)&r);
  mine.stag = htobe32(rk);
  mine.len = htobe32(sizeof r);
  const struct esock_sge a = {&mine, sizeof mine, ak};
  check(esock_post_send(fd_, 2, &a, 1), "esock_post_send");
  struct esock_wc wc;
  do wc = ok_wc();
  while (wc.opcode != ESOCK_WC_RECV_IMM);
  char want[sizeof r.note];
  snprintf(want, sizeof want, "total %llu", (unsigned long long)wc.imm_data);
  if (__atomic_load_n(&r.counter, __ATOMIC_SEQ_CST) != wc.imm_data || strcmp(r.note, want) != 0 ||
      r.lock != 0) {
    fprintf(stderr, "counter %llu, note \"%s\", lock %llu: not what the client says (%llu)\n",
            (unsigned long long)r.counter, r.note, (unsigned long long)r.lock,
            (unsigned long long)wc.imm_data);
    return 1;
  }
  printf("ok: counter %llu and note \"%s\" as the client's Immediate Data says\n",
         (unsigned long long)r.counter, r.note);
  if (misaligned_expected) {
    /* The misaligned FetchAdd ends the connection (our queue pair sends the Terminate). */
    struct esock_wc w;
    int n;
    while ((n = esock_poll_cq(fd_, &w, 1)) >= 0) {
      struct pollfd p = {fd_, POLLIN, 0};
      if (n == 0 && poll(&p, 1, 10000) != 1) break;
    }
    if (n >= 0 || r.counter != wc.imm_data) {
      fprintf(stderr, "the misaligned FetchAdd was not refused\n");
      return 1;
    }
    printf("ok: the misaligned FetchAdd was refused (%s), counter unchanged\n", strerror(errno));
  }
  return 0;
}

static int client(int adds, int locks, int misaligned) {
  static struct adv theirs;
  static uint64_t orig[64];
  static char note[48];
  const uint32_t tk = esock_reg_mr(fd_, &theirs, sizeof theirs, ESOCK_ACCESS_LOCAL_WRITE);
  const uint32_t ok = esock_reg_mr(fd_, orig, sizeof orig, ESOCK_ACCESS_LOCAL_WRITE);
  const uint32_t nk = esock_reg_mr(fd_, note, sizeof note, 0);
  if (!tk || !ok || !nk) check(-1, "esock_reg_mr");
  const struct esock_sge t = {&theirs, sizeof theirs, tk};
  check(esock_post_recv(fd_, 1, &t, 1), "esock_post_recv");
  while (ok_wc().opcode != ESOCK_WC_RECV) continue;
  const uint64_t base = be64toh(theirs.addr);
  const uint32_t rkey = be32toh(theirs.stag);
  const uint64_t counter = base + offsetof(struct region, counter);
  const uint64_t lock = base + offsetof(struct region, lock);

  /* FetchAdds, 8 at a time: with one client they are answered in order, 0, 1, 2, ... */
  int posted = 0, done = 0;
  while (done < adds) {
    while (posted < adds && posted - done < 8) {
      const struct esock_sge r = {&orig[posted % 64], 8, ok};
      check(esock_post_atomic_fetch_add(fd_, (uint64_t)posted, &r, rkey, counter, 1, 0),
            "esock_post_atomic_fetch_add");
      ++posted;
    }
    const struct esock_wc wc = ok_wc();
    if (wc.opcode != ESOCK_WC_FETCH_ADD || orig[wc.wr_id % 64] != wc.wr_id) {
      fprintf(stderr, "FetchAdd %llu saw %llu\n", (unsigned long long)wc.wr_id,
              (unsigned long long)orig[wc.wr_id % 64]);
      return 1;
    }
    ++done;
  }
  /* A lock around a critical section: CmpSwap 0 -> 1, add 1000, CmpSwap 1 -> 0. */
  uint64_t total = (uint64_t)adds;
  const struct esock_sge r = {&orig[0], 8, ok};
  for (int i = 0; i < locks; ++i) {
    check(esock_post_atomic_cmp_swap(fd_, 1, &r, rkey, lock, 0, ~0ull, 1, ~0ull), "cmp_swap");
    if (ok_wc().opcode != ESOCK_WC_CMP_SWAP || orig[0] != 0) {
      fprintf(stderr, "lock round %d: the lock was held (%llu)\n", i, (unsigned long long)orig[0]);
      return 1;
    }
    check(esock_post_atomic_fetch_add(fd_, 2, &r, rkey, counter, 1000, 0), "fetch_add");
    ok_wc();
    total += 1000;
    check(esock_post_atomic_cmp_swap(fd_, 3, &r, rkey, lock, 1, ~0ull, 0, ~0ull), "cmp_swap");
    if (ok_wc().opcode != ESOCK_WC_CMP_SWAP || orig[0] != 1) {
      fprintf(stderr, "lock round %d: release found %llu\n", i, (unsigned long long)orig[0]);
      return 1;
    }
  }
  /* The note, then Immediate Data with the total: one work request. */
  snprintf(note, sizeof note, "total %llu", (unsigned long long)total);
  const struct esock_sge s = {note, sizeof note, nk};
  check(esock_post_write_imm(fd_, 4, &s, 1, rkey, base + offsetof(struct region, note), total,
                             ESOCK_SEND_SOLICITED),
        "esock_post_write_imm");
  if (ok_wc().opcode != ESOCK_WC_WRITE_IMM) return 1;
  printf("ok: %d FetchAdds and %d lock rounds, total %llu\n", adds, locks,
         (unsigned long long)total);
  if (misaligned) {
    check(esock_post_atomic_fetch_add(fd_, 5, &r, rkey, counter + 4, 1, 0), "fetch_add");
    const struct esock_wc wc = next_wc();
    if (wc.status != ESOCK_WC_REM_OP_ERR) {
      fprintf(stderr, "the misaligned FetchAdd completed with status %d\n", wc.status);
      return 1;
    }
    printf("ok: the misaligned FetchAdd completed with a remote operation error\n");
  }
  return 0;
}

int main(int argc, char** argv) {
  int port = 7780, adds = 1000, locks = 100, misaligned = 0, opt;
  while ((opt = getopt(argc, argv, "p:n:m:x")) != -1) {
    if (opt == 'p')
      port = atoi(optarg);
    else if (opt == 'n')
      adds = atoi(optarg);
    else if (opt == 'm')
      locks = atoi(optarg);
    else if (opt == 'x')
      misaligned = 1;
    else
      break;
  }
  const int server = argc == optind;
  if ((!server && argc - optind != 2) || adds < 0 || locks < 0) {
    fprintf(stderr, "usage: %s [-p port] [-x] | host port [-n adds] [-m locks] [-x]\n", argv[0]);
    return 2;
  }
  fd_ = ex_one_connection(server ? NULL : argv[optind], server ? NULL : argv[optind + 1], port,
                          ESOCK_RAWMODE);
  if (fd_ < 0) return 1;
  const int rc = server ? serve(misaligned) : client(adds, locks, misaligned);
  close(fd_);
  return rc;
}
