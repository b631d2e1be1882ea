/* esock Wireshark plugin: state shared by the MPA, FPDU and analysis parts.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef ESOCK_MPA_H
#define ESOCK_MPA_H

#include <epan/conversation.h>
#include <epan/expert.h>
#include <epan/packet.h>

/* RFC 5044 section 4 and 5: Markers every 512 octets of the stream, 4 octets each. */
#define ESOCK_MARKER_INTERVAL 512u
#define ESOCK_MARKER_LEN 4u
#define ESOCK_CRC_LEN 4u
#define ESOCK_MPA_FRAME_HDR 20u
#define ESOCK_MPA_MAX_PD 512u

/* Untagged queues: QN 0-2 of RFC 5040 and QN 3 of RFC 7306 section 4.1 (Atomic Response). */
#define ESOCK_QUEUES 4u

/* One direction of a connection. Stream position 0 is the first octet after this
 * direction's MPA Request or Reply (RFC 5044 section 5: the first Marker sits right before
 * the first FPDU), so position = tcp seq - base_seq (mod 2^32; 512 divides 2^32). */
typedef struct esock_flow {
  gboolean frame_done; /* MPA Request/Reply of this direction seen (or skipped) */
  gboolean synced;     /* FPDU boundaries known */
  gboolean resynced;   /* synchronised mid-stream (no MPA frame in the capture) */
  gboolean tentative;  /* resync guessed "no Markers" from one FPDU: drop it on a miss */
  gboolean markers;    /* this direction carries Markers */
  gboolean crc;        /* this direction carries CRC32c */
  guint32 base_seq;
  guint32 sync_frame;
  /* Untagged message tracking per queue (RFC 5041 section 5.3: QN 0 Send, 1 Read
   * Request, 2 Terminate; RFC 7306 section 4.1 adds QN 3, Atomic Response, with its own
   * MSN sequence; Immediate Data and Atomic Requests share QN 0 and 1). */
  gboolean msn_seen[ESOCK_QUEUES];
  guint32 msn[ESOCK_QUEUES];     /* MSN of the message in progress / last completed */
  gboolean in_msg[ESOCK_QUEUES]; /* a message with L=0 segments is in progress */
  guint32 msg_bytes[ESOCK_QUEUES];
  guint32 msg_segments[ESOCK_QUEUES];
  guint32 msg_first_frame[ESOCK_QUEUES];
  gboolean rtr_pending; /* P2P negotiated: the initiator's first FPDU is its RTR */
} esock_flow_t;

/* An RDMA Read Request and what answered it (RFC 5040 section 4.4). */
typedef struct esock_read {
  guint32 sink_stag, src_stag, size;
  guint64 sink_to, src_to;
  guint32 req_frame;
  nstime_t req_time;
  guint32 first_resp_frame, last_resp_frame;
  nstime_t resp_time; /* last response segment - request */
  guint32 bytes;
  gboolean done;
} esock_read_t;

/* An RFC 7306 Atomic Request (section 5.2.1) and what answered it: the k-th Atomic
 * Response on QN 3 (section 5.2.2), or a Terminate naming its DDP header (section 8.2). */
typedef struct esock_atomic {
  guint32 req_id, stag, msn;
  guint64 to;
  guint8 op;
  guint32 req_frame, resp_frame, term_frame;
  nstime_t req_time, resp_time; /* resp_time: response - request */
  gboolean done;
} esock_atomic_t;

/* What rfc7306.c found on one ULPDU (kept per FPDU with the rest of the analysis). */
typedef struct esock_rfc7306 {
  guint8 op; /* RDMAP opcode 8-11, 0: not an RFC 7306 message */
  gboolean bad_qn, bad_length, bad_atomic_op, misaligned, unsolicited, id_mismatch;
  guint32 req_id;         /* Atomic Response: Original Request Identifier */
  esock_atomic_t* atomic; /* the Atomic Request this message is or answers */
  esock_atomic_t* term;   /* Terminate: the Atomic Request it terminated */
} esock_rfc7306_t;

/* A region advertised for placement into the flow's receiver. */
typedef struct esock_region {
  guint32 stag;
  guint64 to;
  guint64 len;
  guint32 frame;
  const char* by; /* "RDMA Read Request", "stream protocol advertisement" */
} esock_region_t;

typedef struct esock_conv {
  address addr[2];
  guint32 port[2]; /* index 0: the MPA initiator (or the first sender seen) */
  esock_flow_t flow[2];
  gboolean have_request, have_reply, rejected;
  guint8 req_flags, rep_flags, req_rev, rep_rev;
  gboolean p2p;
  wmem_list_t* reads[2];   /* esock_read_t*, Read Requests sent by flow[i] */
  wmem_list_t* regions[2]; /* esock_region_t*, placements into flow[i]'s receiver */
  wmem_list_t* atomics[2]; /* esock_atomic_t*, Atomic Requests sent by flow[i] */
} esock_conv_t;

/* mpa.c */
extern int proto_esock_mpa;
esock_conv_t* esock_conv_get(packet_info* pinfo, gboolean create);
int esock_flow_index(const esock_conv_t* c, const packet_info* pinfo);
/* Records a region the receiver of flow `dir` advertised (stream protocol adverts). */
void esock_add_region(esock_conv_t* c, int dir, guint32 stag, guint64 to, guint64 len,
                      guint32 frame, const char* by);

/* frame.c: MPA Request/Reply/Reject (RFC 5044 section 7.1, RFC 6581 section 7). Returns
 * octets consumed, 0 if not a frame, -needed if more octets are needed. */
int esock_dissect_mpa_frame(tvbuff_t* tvb, int offset, packet_info* pinfo, proto_tree* tree,
                            esock_conv_t* c, int dir, guint32 seq);
gboolean esock_is_mpa_key(tvbuff_t* tvb, int offset);
void esock_frame_register(int proto);

/* fpdu.c: FPDUs, Markers, CRC, resynchronisation. */
/* seq: TCP sequence number of tvb offset 0. Returns where it stopped. */
int esock_dissect_fpdus(tvbuff_t* tvb, int offset, packet_info* pinfo, proto_tree* tree,
                        esock_conv_t* c, int dir, esock_flow_t* f, guint32 seq);
/* Finds FPDU boundaries from `offset` on in a flow with no MPA frame; sets up f and
 * returns the offset of the first FPDU, or -1. */
int esock_resync(tvbuff_t* tvb, int offset, packet_info* pinfo, esock_flow_t* f, guint32 seq);
guint32 esock_crc32c(const guint8* p, size_t n, guint32 crc);
void esock_fpdu_register(int proto);
void esock_fpdu_handoff(void);

/* analysis.c: DDP/RDMAP tracking on a marker-free ULPDU. */
void esock_analyse_ulpdu(tvbuff_t* ulpdu, packet_info* pinfo, proto_tree* tree, esock_conv_t* c,
                         int dir, guint32 key);
void esock_analysis_register(int proto);

/* rfc7306.c: Atomic operations and Immediate Data (RFC 7306) on an untagged ULPDU. First
 * pass: analyse (pairing); every pass: dissect (fields, expert infos). */
void esock_rfc7306_analyse(tvbuff_t* u, packet_info* pinfo, esock_conv_t* c, int dir,
                           esock_rfc7306_t* r);
/* Terminate: links it to the Atomic Request whose DDP header it carries (section 8.2). */
void esock_rfc7306_terminate(tvbuff_t* u, packet_info* pinfo, esock_conv_t* c, int dir,
                             esock_rfc7306_t* r);
void esock_rfc7306_dissect(tvbuff_t* u, packet_info* pinfo, proto_tree* tree, proto_tree* analysis,
                           const esock_rfc7306_t* r);
/* Names Immediate Data in the Info column, which iwarp_ddp_rdmap calls "Unknown 8/9". */
void esock_rfc7306_info(tvbuff_t* u, packet_info* pinfo);
void esock_rfc7306_register(int proto);

/* stream.c: esock's DDPMODE sockets protocol on Send payloads. */
int esock_stream_dissect_hello(tvbuff_t* tvb, int offset, int len, packet_info* pinfo,
                               proto_tree* tree);
void esock_stream_register(void);
void esock_stream_handoff(void);

#endif
