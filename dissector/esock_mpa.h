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
   * Request, 2 Terminate). */
  gboolean msn_seen[3];
  guint32 msn[3];     /* MSN of the message in progress / last completed */
  gboolean in_msg[3]; /* a message with L=0 segments is in progress */
  guint32 msg_bytes[3];
  guint32 msg_segments[3];
  guint32 msg_first_frame[3];
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

/* stream.c: esock's DDPMODE sockets protocol on Send payloads. */
int esock_stream_dissect_hello(tvbuff_t* tvb, int offset, int len, packet_info* pinfo,
                               proto_tree* tree);
void esock_stream_register(void);
void esock_stream_handoff(void);

#endif
