/* A single-writer ring over RDMA Write whose consumer sleeps in epoll until a tripwire says
 * the producer's Write landed: no message from the producer, no spinning (esock.h,
 * "Tripwires"). The consumer's region is the ring: a tail word (messages written so far)
 * and SLOTS slots; the producer RDMA-Writes message i into slot i % SLOTS, then writes the
 * tail (RFC 5040 section 5.5: Writes are delivered in order, so when the tail lands, so has
 * the slot). The consumer hands slots back by writing its head word into the producer's
 * region, which the producer watches the same way. Every message is verified.
 *
 * What a side knows of the peer's word is what was delivered, not what memory holds: DDP
 * may place a Write's octets early, ahead of a lost segment (RFC 5041 section 5), so a tail
 * word read from memory can run ahead of slots still missing. A tripwire fires at delivery,
 * in order, once per Write: each event's landings count Writes of the word, one per message.
 * A Send completes after the Write before it is delivered. Busy-polling memory is only right
 * where nothing is placed out of order (no loss); under loss it can see a slot too early,
 * which the verification then reports.
 *
 * -m selects how each side learns that the other's word moved:
 *   tripwire  a persistent tripwire on the word, waited for in epoll (the default);
 *   send      a Send carrying the word after the Write, waited for on the completion fd;
 *   poll      busy-polling the word in memory.
 * -w is how many messages may be unconsumed: 1 makes it a ping-pong (round-trip times).
 *
 *   consumer:  esock_tripwire_ring [-p port] [-s size] [-n msgs] [-w window] [-m mode]
 *              (prints "port N")
 *   producer:  esock_tripwire_ring host port [-s size] [-n msgs] [-w window] [-m mode] */
#include <endian.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/resource.h>

#include "example_net.h"

#define SLOTS 64
#define WORDS 256 /* sources of the word Writes/Sends, reused round robin */

enum mode { TRIPWIRE, SEND, POLL };

struct adv { /* a region advertisement, big-endian on the wire */
  uint64_t addr;
  uint32_t stag;
  uint32_t len;
};

static int fd_, ep_, mode_;
static long sq_posted, sq_done;
static uint64_t* recvd_; /* send mode: the words that arrived, one receive each */
static uint64_t known_;  /* the peer's word as delivered to us (see above) */
static uint32_t recvd_key_;

static void die(const char* what) {
  perror(what);
  exit(1);
}

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Takes the completions there are (non-blocking). In send mode a receive carries the
 * peer's new word value (and is posted again). */
static void drain(void) {
  struct esock_wc wc[16];
  int n;
  while ((n = esock_poll_cq(fd_, wc, 16)) > 0) {
    for (int i = 0; i < n; ++i) {
      /* Our spare receives flush when the peer closes at the end: not an error. */
      if (wc[i].opcode == ESOCK_WC_RECV && wc[i].status == ESOCK_WC_WR_FLUSH_ERR) continue;
      if (wc[i].status != ESOCK_WC_SUCCESS) {
        fprintf(stderr, "work request %llu failed: status %d\n", (unsigned long long)wc[i].wr_id,
                wc[i].status);
        exit(1);
      }
      if (wc[i].opcode != ESOCK_WC_RECV) {
        ++sq_done;
        continue;
      }
      const uint64_t k = wc[i].wr_id;
      const uint64_t v = be64toh(recvd_[k]);
      if (v > known_) known_ = v;
      const struct esock_sge s = {&recvd_[k], 8, recvd_key_};
      if (esock_post_recv(fd_, k, &s, 1) != 0) die("esock_post_recv");
    }
  }
  if (n < 0) die("esock_poll_cq");
}

/* Until the peer's word reached target, by the mode's means of learning that it moved. */
static void wait_word(volatile uint64_t* word, uint64_t target) {
  for (unsigned spins = 0;; ++spins) {
    if (mode_ != POLL || spins % 64 == 0) drain();
    if (mode_ == POLL) known_ = __atomic_load_n(word, __ATOMIC_ACQUIRE);
    if (mode_ == TRIPWIRE) {
      struct esock_tripwire_event ev[4];
      const int k = esock_tripwire_poll(fd_, ev, 4);
      if (k < 0) die("esock_tripwire_poll");
      for (int j = 0; j < k; ++j) known_ += ev[j].landings;
    }
    if (known_ >= target) return;
    if (mode_ == POLL) continue;
    struct epoll_event e;
    if (epoll_wait(ep_, &e, 1, 10000) == 0) {
      fprintf(stderr, "nothing from the peer within 10 s\n");
      exit(1);
    }
  }
}

/* Tells the peer the new value of its word: a Write into it, or a Send. */
static void notify(uint64_t* src, uint32_t src_key, uint64_t value, uint32_t rkey, uint64_t raddr) {
  *src = mode_ == SEND ? htobe64(value) : value;
  const struct esock_sge s = {src, 8, src_key};
  if ((mode_ == SEND ? esock_post_send(fd_, 2, &s, 1)
                     : esock_post_write(fd_, 2, &s, 1, rkey, raddr)) != 0)
    die("notify");
  ++sq_posted;
}

/* Bounds what is in flight: sources are reused once their work requests completed. */
static void bound_sq(long most) {
  while (sq_posted - sq_done > most) {
    drain();
    if (sq_posted - sq_done <= most) break;
    struct pollfd p = {fd_, POLLIN, 0};
    poll(&p, 1, 10);
  }
}

static int cmp_u64(const void* a, const void* b) {
  const uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
  return x < y ? -1 : x > y;
}

static double cpu_seconds(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)u.ru_utime.tv_sec + (double)u.ru_stime.tv_sec +
         ((double)u.ru_utime.tv_usec + (double)u.ru_stime.tv_usec) / 1e6;
}

int main(int argc, char** argv) {
  int port = 7779, n = 10000, window = 1, opt;
  uint32_t size = 64;
  mode_ = TRIPWIRE;
  while ((opt = getopt(argc, argv, "p:s:n:w:m:")) != -1) {
    if (opt == 'p')
      port = atoi(optarg);
    else if (opt == 's')
      size = (uint32_t)strtoul(optarg, NULL, 0);
    else if (opt == 'n')
      n = atoi(optarg);
    else if (opt == 'w')
      window = atoi(optarg);
    else if (opt == 'm')
      mode_ = !strcmp(optarg, "send") ? SEND : !strcmp(optarg, "poll") ? POLL : TRIPWIRE;
    else
      break;
  }
  const int consumer = argc == optind;
  if ((!consumer && argc - optind != 2) || size < 16 || n <= 0 || window < 1 || window > SLOTS) {
    fprintf(stderr,
            "usage: %s [-p port] [-s size>=16] [-n msgs] [-w 1..%d] [-m tripwire|send|poll]"
            " | host port [options]\n",
            argv[0], SLOTS);
    return 2;
  }
  fd_ = ex_one_connection(consumer ? NULL : argv[optind], consumer ? NULL : argv[optind + 1], port,
                          ESOCK_RAWMODE);
  if (fd_ < 0) return 1;

  /* Our region (the peer writes it): the consumer's ring, or the producer's head word. The
   * word comes first, on its own 64 octets. */
  const size_t region_len = 64 + (consumer ? (size_t)SLOTS * size : 0);
  uint8_t* region = aligned_alloc(64, (region_len + 63) / 64 * 64);
  memset(region, 0, region_len);
  volatile uint64_t* word = (volatile uint64_t*)region;
  uint8_t* slots = region + 64;
  uint8_t* src = malloc((size_t)2 * SLOTS * size); /* the producer's slot sources */
  uint64_t* words = calloc(WORDS, 8);
  recvd_ = calloc(WORDS, 8);
  struct adv mine, theirs;
  const uint32_t region_key =
      esock_reg_mr(fd_, region, region_len, ESOCK_ACCESS_LOCAL_WRITE | ESOCK_ACCESS_REMOTE_WRITE);
  const uint32_t src_key = esock_reg_mr(fd_, src, (size_t)2 * SLOTS * size, 0);
  const uint32_t words_key = esock_reg_mr(fd_, words, WORDS * 8, 0);
  recvd_key_ = esock_reg_mr(fd_, recvd_, WORDS * 8, ESOCK_ACCESS_LOCAL_WRITE);
  const uint32_t mine_key = esock_reg_mr(fd_, &mine, sizeof mine, 0);
  const uint32_t theirs_key = esock_reg_mr(fd_, &theirs, sizeof theirs, ESOCK_ACCESS_LOCAL_WRITE);
  if (!region_key || !src_key || !words_key || !recvd_key_ || !mine_key || !theirs_key)
    die("esock_reg_mr");
  /* The advertisement on receive 1000 first; in send mode, receives for the words. */
  const struct esock_sge theirs_sge = {&theirs, sizeof theirs, theirs_key};
  if (esock_post_recv(fd_, 1000, &theirs_sge, 1) != 0) die("esock_post_recv");
  for (int k = 0; mode_ == SEND && k < 2 * SLOTS; ++k) {
    const struct esock_sge s = {&recvd_[k], 8, recvd_key_};
    if (esock_post_recv(fd_, (uint64_t)k, &s, 1) != 0) die("esock_post_recv");
  }
  /* Input started with the first esock_post_recv above (docs/sockets.md, "Start-up"), after
   * the receive for the peer's first Send was posted. The tripwire is armed before the
   * advertisement goes out below: the peer writes nothing before it has it. */
  ep_ = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event e = {.events = EPOLLIN};
  if (epoll_ctl(ep_, EPOLL_CTL_ADD, esock_tripwire_fd(fd_), &e) != 0) die("epoll_ctl");
  if (mode_ == TRIPWIRE && esock_tripwire_arm(fd_, region, 8, 0, ESOCK_TRIPWIRE_PERSISTENT) <= 0)
    die("esock_tripwire_arm");

  mine.addr = htobe64((uint64_t)(uintptr_t)region);
  mine.stag = htobe32(region_key);
  mine.len = htobe32((uint32_t)region_len);
  const struct esock_sge mine_sge = {&mine, sizeof mine, mine_key};
  if (esock_post_send(fd_, 1, &mine_sge, 1) != 0) die("esock_post_send");
  ++sq_posted;
  for (;;) { /* the advertisement */
    struct esock_wc wc;
    const int got = esock_poll_cq(fd_, &wc, 1);
    if (got < 0) die("esock_poll_cq");
    if (got == 1 && wc.status != ESOCK_WC_SUCCESS) {
      fprintf(stderr, "start-up failed: status %d\n", wc.status);
      return 1;
    }
    if (got == 1 && wc.opcode != ESOCK_WC_RECV) ++sq_done;
    if (got == 1 && wc.wr_id == 1000) break;
    if (got == 0) poll(&(struct pollfd){fd_, POLLIN, 0}, 1, 10000);
  }
  const uint64_t raddr = be64toh(theirs.addr), rslots = raddr + 64;
  const uint32_t rkey = be32toh(theirs.stag);
  if (!consumer && be32toh(theirs.len) < 64 + (uint64_t)SLOTS * size) {
    fprintf(stderr, "the consumer's ring is smaller than %d slots of %u octets\n", SLOTS, size);
    return 1;
  }

  uint64_t* lat = calloc((size_t)n, 8);
  const double cpu0 = cpu_seconds(), t0 = ex_now();
  for (uint64_t i = 0; i < (uint64_t)n; ++i) {
    if (!consumer) {
      /* Room in the ring: the consumer's head is at least i + 1 - window. */
      if (i + 1 > (uint64_t)window) wait_word(word, i + 1 - (uint64_t)window);
      bound_sq(SLOTS);
      uint8_t* s = src + (i % (2 * SLOTS)) * size;
      const uint64_t stamp = now_ns();
      memcpy(s, &i, 8);
      memcpy(s + 8, &stamp, 8);
      ex_fill(s + 16, size - 16, i * size);
      const struct esock_sge sg = {s, size, src_key};
      if (esock_post_write(fd_, 3, &sg, 1, rkey, rslots + (i % SLOTS) * size) != 0)
        die("esock_post_write");
      ++sq_posted;
      notify(&words[i % WORDS], words_key, i + 1, rkey, raddr); /* the tail */
      if (window == 1) { /* ping-pong: the round trip ends when the slot comes back */
        wait_word(word, i + 1);
        lat[i] = now_ns() - stamp;
      }
    } else {
      wait_word(word, i + 1); /* the tail passed message i */
      const uint8_t* s = slots + (i % SLOTS) * size;
      uint64_t seq, stamp;
      memcpy(&seq, s, 8);
      memcpy(&stamp, s + 8, 8);
      lat[i] = now_ns() - stamp;
      if (seq != i || ex_check(s + 16, size - 16, i * size) != (size_t)-1) {
        fprintf(stderr, "message %llu: wrong slot contents (seq %llu)\n", (unsigned long long)i,
                (unsigned long long)seq);
        return 1;
      }
      bound_sq(SLOTS);
      notify(&words[i % WORDS], words_key, i + 1, rkey, raddr); /* the head */
    }
  }
  const double secs = ex_now() - t0, cpu = cpu_seconds() - cpu0;
  if (!consumer && window > 1) wait_word(word, (uint64_t)n);
  bound_sq(0);
  const char* names[] = {"tripwire", "send", "poll"};
  if (consumer || window == 1) {
    qsort(lat, (size_t)n, 8, cmp_u64);
    printf(
        "ok: %d messages of %u octets verified, %s, %s p50 %.2f us p99 %.2f us, "
        "%.0f messages/s, %.2f us CPU per message\n",
        n, size, names[mode_], consumer ? "one-way" : "round trip", (double)lat[n / 2] / 1e3,
        (double)lat[(size_t)n * 99 / 100] / 1e3, n / secs, cpu / n * 1e6);
  } else {
    printf(
        "ok: %d messages of %u octets sent, %s, window %d, %.0f messages/s, "
        "%.2f us CPU per message\n",
        n, size, names[mode_], window, n / secs, cpu / n * 1e6);
  }
  close(fd_); /* deregisters every region: the memory is ours again */
  free(lat);
  free(recvd_);
  free(words);
  free(src);
  free(region);
  return 0;
}
