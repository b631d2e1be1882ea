/* esock: the extended sockets interface (C ABI). Link with -lesock or run a program under
 * esockrun (LD_PRELOAD). Sockets that are not switched to DDPMODE behave exactly as with
 * plain libc. See docs/sockets.md for the semantics and docs/configuration.md for tuning. */
#ifndef ESOCK_ESOCK_H
#define ESOCK_ESOCK_H

#include <stddef.h>
#include <stdint.h>

#include "esock/version.h"

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

/* int, 0 or 1. RAWMODE: the application drives the connection's queue pair itself through
 * the extension API below (no ESTP byte stream; read/write fail with EOPNOTSUPP). Implies
 * DDPMODE; same timing rules; both ends must agree (else connect fails with EPROTO). */
#define ESOCK_RAWMODE 3

/* int. How a DDPMODE byte-stream socket sends writes of at least the rendezvous threshold
 * (ESOCK_RNDV_THRESHOLD; docs/sockets.md, "Zero-copy modes"). Any time on a DDPMODE socket;
 * the default is ESOCK_ZCOPY's. EINVAL for another value, EOPNOTSUPP on a socket that is
 * not DDPMODE.
 *   ESOCK_ZCOPY_COPY: always copied (buffer copy, BSDP);
 *   ESOCK_ZCOPY_SYNC: zero-copy, write returns once the peer pulled the data (ZSDP);
 *   ESOCK_ZCOPY_ASYNC: zero-copy, write returns at once; the buffer's whole pages are
 *     read-only until the peer pulled them, and a thread that writes to them waits until
 *     then (AZ-SDP, block-on-write);
 *   ESOCK_ZCOPY_ASYNC_COW: as ESOCK_ZCOPY_ASYNC, but a thread that writes to the pages (or
 *     frees or reads into them) waits only until esock copied what the peer has not pulled
 *     and the transport let go of the pages (AZ-SDP, copy-on-write). Where the device reads
 *     the memory itself (the rdmacm provider) it is ESOCK_ZCOPY_ASYNC.
 * Both ASYNC modes make large reads asynchronous too: a blocking read that finds the peer's
 * advertised data (at least ESOCK_ASYNC_READ_THRESHOLD octets of it) returns at once with the
 * page-aligned buffer's whole pages it will fill, which are no-access until the data arrived: a
 * thread that touches them waits until then, and sees only the final data (AZ-SDP's receiver). */
#define ESOCK_ZCOPY_MODE 4
#define ESOCK_ZCOPY_COPY 0
#define ESOCK_ZCOPY_SYNC 1
#define ESOCK_ZCOPY_ASYNC 2
#define ESOCK_ZCOPY_ASYNC_COW 3

/* ---- Extension API (docs/sockets.md, "Extension API"). Every call takes the socket's
 * descriptor; errors return -1 (esock_reg_mr: 0) with errno set. esock_query_mpa works on any
 * connected DDPMODE socket; the others need a connected RAWMODE socket (EOPNOTSUPP on a
 * DDPMODE stream socket, whose queue pair belongs to the byte-stream protocol). Common
 * errors: EBADF (not open), ENOTSOCK (not a DDPMODE socket), ENOTCONN (not connected yet,
 * or a fork child's copy). Thread-safe; calls on one socket are serialised. */

/* Access rights of a memory region (verbs style). Local read is always allowed. */
#define ESOCK_ACCESS_LOCAL_WRITE 1   /* the region may be a receive or RDMA Read sink */
#define ESOCK_ACCESS_REMOTE_READ 2   /* the peer may RDMA Read from it */
#define ESOCK_ACCESS_REMOTE_WRITE 4  /* the peer may RDMA Write into it */
#define ESOCK_ACCESS_REMOTE_ATOMIC 8 /* the peer may target it with atomics (RFC 7306) */

/* At most this many entries in one gather (or scatter) list. */
#define ESOCK_MAX_SGE 16

struct esock_sge {
  void* addr;      /* inside the region registered as lkey */
  uint32_t length; /* octets; the list's total must fit in 32 bits */
  uint32_t lkey;   /* STag from esock_reg_mr on the same socket */
};

/* Registers [addr, addr+len) with the socket's connection; returns the STag (never 0), which
 * is both the local key for esock_sge.lkey and the remote key the peer uses for RDMA Write/
 * Read. The Tagged Offset of an octet is its address ((uint64_t)(uintptr_t)p). 0 with errno:
 * EINVAL (len 0 or >= 4 GiB, unknown access bits),
 * EFAULT (addr NULL, the range wraps, or part of it is not mapped, or not writable when access
 * has a write right or ESOCK_ACCESS_REMOTE_ATOMIC), ENOMEM (table full). */
uint32_t esock_reg_mr(int fd, void* addr, size_t len, int access);
/* 0, or -1 with EINVAL (not a region this socket registered). */
int esock_dereg_mr(int fd, uint32_t stag);

/* Work requests. 0, or -1 with: EINVAL (num_sge outside 0..ESOCK_MAX_SGE for send/write, 1.. for
 * recv/read, NULL list, unknown lkey), EFAULT (an SGE outside its region), EACCES (a receive or
 * Read sink SGE in a region without ESOCK_ACCESS_LOCAL_WRITE), EMSGSIZE (total length overflows),
 * ENOBUFS (queue full), ECONNRESET/EPIPE (the connection failed or closed). Rights on the
 * peer's region (rkey) are checked by the peer: a violation completes the work request with
 * ESOCK_WC_REM_ACCESS_ERR and terminates the connection (RFC 5040 section 7). */
int esock_post_send(int fd, uint64_t wr_id, const struct esock_sge* sg, int num_sge);
int esock_post_recv(int fd, uint64_t wr_id, const struct esock_sge* sg, int num_sge);
int esock_post_write(int fd, uint64_t wr_id, const struct esock_sge* sg, int num_sge, uint32_t rkey,
                     uint64_t remote_addr);
int esock_post_read(int fd, uint64_t wr_id, const struct esock_sge* sg, int num_sge, uint32_t rkey,
                    uint64_t remote_addr);

enum esock_wc_opcode {
  ESOCK_WC_SEND,
  ESOCK_WC_RECV,
  ESOCK_WC_WRITE,
  ESOCK_WC_READ,
  /* RFC 7306 (esock 0.2): */
  ESOCK_WC_SEND_IMM,  /* esock_post_send_imm; byte_len 8 */
  ESOCK_WC_WRITE_IMM, /* esock_post_write_imm; byte_len: the Write's octets */
  ESOCK_WC_FETCH_ADD, /* the original value is in the result SGE; byte_len 8 */
  ESOCK_WC_CMP_SWAP,
  ESOCK_WC_RECV_IMM /* Immediate Data arrived: imm_data, byte_len 8 (also in the buffer) */
};
enum esock_wc_status {
  ESOCK_WC_SUCCESS = 0,
  ESOCK_WC_LOC_LEN_ERR,  /* receive buffer too small for the incoming Send */
  ESOCK_WC_LOC_PROT_ERR, /* a local STag failed validation */
  ESOCK_WC_LOC_QP_OP_ERR,
  ESOCK_WC_REM_ACCESS_ERR, /* the peer refused the rkey/offset/rights */
  ESOCK_WC_REM_OP_ERR,
  ESOCK_WC_REM_INV_REQ_ERR,
  ESOCK_WC_WR_FLUSH_ERR, /* never executed: the connection left the operational state */
  ESOCK_WC_GENERAL_ERR
};
struct esock_wc {
  uint64_t wr_id;
  int opcode;        /* enum esock_wc_opcode */
  int status;        /* enum esock_wc_status */
  uint32_t byte_len; /* octets received (RECV) or transferred */
  /* esock 0.2: the Immediate Data of ESOCK_WC_RECV_IMM (the 8 octets read in network byte
   * order, so it equals the value the peer posted); 0 otherwise. Programs built against
   * esock 0.1 keep the 0.1 layout (versioned symbol esock_poll_cq@ESOCK_0.1). */
  uint64_t imm_data;
};
/* Takes up to max completions (send and receive side, in completion order per side).
 * Returns how many (0: none pending), or -1 with EINVAL (max < 0, wc NULL with max > 0).
 * Completions of a connection that failed are still returned (flushed work requests); after that,
 * -1 with the connection's error. */
int esock_poll_cq(int fd, struct esock_wc* wc, int max);
/* The completion descriptor for select/poll/epoll: readable (POLLIN) while completions are
 * pending, POLLIN|POLLRDHUP after the peer closed, POLLHUP once the connection failed. For
 * RAWMODE it is the socket's own descriptor (returned as is). */
int esock_comp_fd(int fd);

/* ---- RFC 7306 (RDMA Protocol Extensions) and tripwires: esock 0.2, docs/sockets.md "Atomics,
 * immediate data and tripwires". RAWMODE only. The RFC 7306 calls need a peer that agreed
 * to the extensions (an esock peer on the dpdk or ksock provider: its Hello says so); with
 * any other (the rdmacm provider, siw, an RNIC) they fail with EOPNOTSUPP and nothing is
 * sent. Other errors as for the work requests above. */

/* flags of esock_post_send_imm and esock_post_write_imm */
#define ESOCK_SEND_SOLICITED 1 /* Immediate Data with Solicited Event */

/* Immediate Data (RFC 7306 section 6): 8 octets, imm in network byte order, into the peer's
 * next receive (which completes as ESOCK_WC_RECV_IMM with imm_data == imm and needs room
 * for 8 octets). */
int esock_post_send_imm(int fd, uint64_t wr_id, uint64_t imm, int flags);
/* An RDMA Write, then Immediate Data: the peer's receive completes once the Write's octets
 * are in place (RFC 7306 section 7). One work request, one completion. */
int esock_post_write_imm(int fd, uint64_t wr_id, const struct esock_sge* sg, int num_sge,
                         uint32_t rkey, uint64_t remote_addr, uint64_t imm, int flags);
/* Atomics (RFC 7306 section 5) on 8 octets of the peer's region (ESOCK_ACCESS_REMOTE_ATOMIC)
 * at remote_addr, which must be 8-octet aligned (the peer terminates the connection if not:
 * the work request completes with ESOCK_WC_REM_OP_ERR, or is flushed when an earlier one was
 * still outstanding: the Terminate's error goes to the oldest). result: one SGE of exactly 8 octets
 * with ESOCK_ACCESS_LOCAL_WRITE, which receives the value before the operation, in host byte
 * order. The peer performs it as one 64-bit atomic instruction in its byte order, so it is
 * atomic against its own atomics from every connection and against its threads' atomic
 * instructions on the same 8 octets (docs/sockets.md states the memory-ordering contract).
 * fetch_add: adds `add`; field_mask 0 is one 64-bit add, a 1 bit marks the top bit of an
 *   independent field (no carry out of it). */
int esock_post_atomic_fetch_add(int fd, uint64_t wr_id, const struct esock_sge* result,
                                uint32_t rkey, uint64_t remote_addr, uint64_t add,
                                uint64_t field_mask);
/* cmp_swap: if (value & compare_mask) == (compare & compare_mask), the bits swap_mask selects
 *   become those of swap. ~0ULL for both masks is a plain compare-and-swap. */
int esock_post_atomic_cmp_swap(int fd, uint64_t wr_id, const struct esock_sge* result,
                               uint32_t rkey, uint64_t remote_addr, uint64_t compare,
                               uint64_t compare_mask, uint64_t swap, uint64_t swap_mask);

/* Tripwires: learn that the peer's RDMA Write landed in [addr, addr+len), without a message
 * from it. The range must lie in one region this socket registered with
 * ESOCK_ACCESS_REMOTE_WRITE (EFAULT if in none, EACCES without that right). An event comes
 * once the Write's octets are in memory, in the order the Writes were sent, once per Write
 * message (a Write that turns out bad ends the connection and fires nothing). Works with any
 * peer that writes (no agreement needed) on the dpdk and ksock providers; EOPNOTSUPP on the
 * rdmacm provider (the device places the data unseen). Returns the id (> 0) or -1 with
 * EINVAL (len 0, unknown flags), EFAULT, EACCES, ENOMEM (4096 armed on the socket). */
#define ESOCK_TRIPWIRE_PERSISTENT 1 /* fire for every landing until disarmed (else once) */
int esock_tripwire_arm(int fd, void* addr, size_t len, uint64_t cookie, int flags);
/* 0, or -1 with EINVAL (not armed; a one-shot tripwire is disarmed once its event was taken). Drops
 * its event if not polled yet. esock_dereg_mr disarms the region's tripwires. */
int esock_tripwire_disarm(int fd, int id);
struct esock_tripwire_event {
  uint64_t cookie;   /* as armed */
  uint64_t addr;     /* the first landed octet inside the armed range */
  uint64_t length;   /* landed octets from addr (over the Writes counted in `landings`) */
  uint32_t id;       /* from esock_tripwire_arm */
  uint32_t landings; /* Write messages that landed since the last event (>= 1) */
  uint32_t flags;    /* ESOCK_TRIPWIRE_DISARMED: a one-shot's event, its id is free now */
  uint32_t reserved;
};
#define ESOCK_TRIPWIRE_DISARMED 1
/* Non-blocking: up to max events in firing order (one per tripwire at most: landings counts
 * the repeats). Returns how many, or -1 with EINVAL or a common error. The socket's descriptor
 * (esock_tripwire_fd) is readable while events or completions are pending. */
int esock_tripwire_poll(int fd, struct esock_tripwire_event* ev, int max);
/* The descriptor to wait on: as esock_comp_fd, the socket's own. */
int esock_tripwire_fd(int fd);

/* The connection's negotiated MPA parameters (RFC 5044 section 7.1, RFC 6581). */
enum esock_rtr { ESOCK_RTR_NONE, ESOCK_RTR_SEND, ESOCK_RTR_WRITE, ESOCK_RTR_READ };
struct esock_mpa_info {
  uint8_t revision;   /* 1 or 2; 0 on the rdmacm provider (the RNIC negotiated MPA unseen) */
  uint8_t markers_tx; /* we put Markers into what we send */
  uint8_t markers_rx; /* the peer puts Markers into what we receive */
  uint8_t crc;        /* CRC32c in use */
  uint16_t ird, ord;  /* RDMA Read Requests we accept at once / may have outstanding */
  uint8_t p2p;        /* RFC 6581 peer-to-peer mode */
  uint8_t rtr;        /* enum esock_rtr: the ready-to-receive message of p2p mode */
};
/* 0, or -1 with EFAULT (info NULL) or a common error. */
int esock_query_mpa(int fd, struct esock_mpa_info* info);

/* The version of the library the program runs with, "MAJOR.MINOR.PATCH" (the one it was
 * compiled against is ESOCK_VERSION_STRING, esock/version.h). */
const char* esock_version(void);

/* 1 when fd is a DDPMODE socket (connected, listening or armed before connect), else 0. */
int esock_is_ddp(int fd);

/* Diagnostics: application threads currently blocked inside a DDPMODE call. */
int esock_blocked_calls(void);

/* Diagnostics: rounds of the own stack (dpdk provider) that application threads ran
 * themselves, in blocking DDPMODE calls and in poll/select/epoll_wait, since the start. */
unsigned long long esock_inline_rounds(void);

#ifdef __cplusplus
}
#endif

#endif /* ESOCK_ESOCK_H */
