/* A program that uses the installed esock as a user's would (tests/install/install_test.sh):
 * built once with `pkg-config --cflags --libs esock` and once with find_package(esock).
 * It checks that the library it runs with is the release it was compiled against, then moves
 * 1 MiB through a DDPMODE connection of its own over loopback (ksock provider): a listener
 * and a client in two threads, every octet compared. Prints "consumer ok <version>". */
#include <arpa/inet.h>
#include <esock/esock.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define LEN (1 << 20)

static unsigned char sent[LEN], got[LEN];
static struct sockaddr_in addr;
static int listener;

static int ddp_socket(void) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  const int on = 1;
  if (fd < 0 || setsockopt(fd, SOL_ESOCK, ESOCK_DDPMODE, &on, sizeof on) != 0) {
    perror("consumer: DDPMODE socket");
    exit(1);
  }
  return fd;
}

static void* serve(void* arg) {
  (void)arg;
  const int fd = accept(listener, NULL, NULL);
  size_t n = 0;
  while (fd >= 0 && n < LEN) {
    const ssize_t r = read(fd, got + n, LEN - n);
    if (r <= 0) break;
    n += (size_t)r;
  }
  if (fd >= 0) close(fd);
  return (void*)n;
}

int main(void) {
  if (strcmp(esock_version(), ESOCK_VERSION_STRING) != 0) {
    fprintf(stderr, "consumer: built against %s, runs with %s\n", ESOCK_VERSION_STRING,
            esock_version());
    return 1;
  }
  for (size_t i = 0; i < LEN; ++i) sent[i] = (unsigned char)(i * 7 + i / 4099);
  listener = ddp_socket();
  socklen_t alen = sizeof addr;
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(listener, (struct sockaddr*)&addr, sizeof addr) != 0 || listen(listener, 1) != 0 ||
      getsockname(listener, (struct sockaddr*)&addr, &alen) != 0) {
    perror("consumer: listen");
    return 1;
  }
  pthread_t t;
  pthread_create(&t, NULL, serve, NULL);
  const int fd = ddp_socket();
  if (connect(fd, (struct sockaddr*)&addr, sizeof addr) != 0) {
    perror("consumer: connect");
    return 1;
  }
  if (!esock_is_ddp(fd)) {
    fprintf(stderr, "consumer: the connection is not in DDPMODE\n");
    return 1;
  }
  for (size_t n = 0; n < LEN;) {
    const ssize_t w = write(fd, sent + n, LEN - n);
    if (w <= 0) {
      perror("consumer: write");
      return 1;
    }
    n += (size_t)w;
  }
  close(fd);
  void* n = NULL;
  pthread_join(t, &n);
  if ((size_t)n != LEN || memcmp(sent, got, LEN) != 0) {
    fprintf(stderr, "consumer: %zu octets arrived, or they differ\n", (size_t)n);
    return 1;
  }
  printf("consumer ok %s\n", esock_version());
  return 0;
}
