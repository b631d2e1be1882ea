/* A DDPMODE echo server: an ordinary TCP echo server plus one setsockopt. Every accepted
 * connection inherits DDPMODE from the listener and runs iWARP (RDMAP/DDP/MPA) underneath;
 * read/write keep their byte-stream meaning.
 *
 *   ddp_echo_server [-p port] [-n connections] [-m]     (port 0: any; prints "port N")
 * then, on another terminal: ddp_echo_client 127.0.0.1 N
 * -m: MSGMODE (docs/stream-protocol.md section 7): each read is one message, echoed as one
 * message by one write (messages up to 1 MiB). */
#include "example_net.h"

static int echo(int c) {
  static uint8_t buf[1 << 20];
  for (;;) {
    const ssize_t r = read(c, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      perror("read");
      return -1;
    }
    if (r == 0) return 0; /* the client closed: done (MSGMODE: an empty message is EOF too) */
    /* MSGMODE: one write sends the whole message as one message or fails; a byte stream
     * may need several. */
    if (ex_write_all(c, buf, (size_t)r) != 0) {
      perror("write");
      return -1;
    }
  }
}

int main(int argc, char** argv) {
  int port = 7777, conns = -1, opt, failed = 0, mode = ESOCK_DDPMODE;
  while ((opt = getopt(argc, argv, "p:n:m")) != -1) {
    if (opt == 'p')
      port = atoi(optarg);
    else if (opt == 'n')
      conns = atoi(optarg);
    else if (opt == 'm')
      mode = ESOCK_MSGMODE;
    else {
      fprintf(stderr, "usage: %s [-p port] [-n connections] [-m]\n", argv[0]);
      return 2;
    }
  }
  const int l = ex_listen(port, mode);
  if (l < 0) return 1;
  for (int i = 0; conns < 0 || i < conns; ++i) {
    const int c = accept(l, NULL, NULL);
    if (c < 0) {
      perror("accept");
      return 1;
    }
    /* One client at a time keeps the example short; fork() or threads work as usual. */
    failed |= echo(c) != 0;
    close(c);
  }
  close(l);
  return failed;
}
