/* esock: the extended sockets interface (C ABI). Link with -lesock or run a program under
 * esockrun (LD_PRELOAD). Sockets that are not switched to DDPMODE behave exactly as with
 * plain libc. See docs/sockets.md for the semantics and docs/configuration.md for tuning. */
#ifndef ESOCK_ESOCK_H
#define ESOCK_ESOCK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* setsockopt/getsockopt level for esock's options (outside the kernel's SOL_* range). */
#define SOL_ESOCK 0x6573

/* int, 0 or 1. Set on a TCP stream socket before connect() or listen(): the connection
 * then runs RDMAP/DDP/MPA (iWARP) with byte-stream semantics (docs/stream-protocol.md).
 * Accepted sockets inherit it from their listener. Errors: EISCONN (already connected or
 * connecting), EINVAL (listening, wrong optlen, or turning it off once on), EOPNOTSUPP (not
 * a TCP stream socket), EMFILE (fd number above the table, see docs/sockets.md). */
#define ESOCK_DDPMODE 1
/* int, 0 or 1. Message boundaries instead of a byte stream (SOCK_SEQPACKET-like). Implies
 * DDPMODE; same timing rules; both ends must agree (else connect fails with EPROTO). */
#define ESOCK_MSGMODE 2

/* Library version, for checks by programs that link esock. */
const char* esock_version(void);

/* 1 when fd is a DDPMODE socket (connected, listening or armed before connect), else 0. */
int esock_is_ddp(int fd);

/* Diagnostics: application threads currently blocked inside a DDPMODE call. */
int esock_blocked_calls(void);

#ifdef __cplusplus
}
#endif

#endif /* ESOCK_ESOCK_H */
