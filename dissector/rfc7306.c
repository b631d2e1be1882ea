/* esock Wireshark plugin: the RDMAP extensions of RFC 7306, Atomic operations and Immediate
 * Data. Wireshark 4.0's iwarp_ddp_rdmap shows opcodes 8 and 9 as "Unknown" and labels the
 * Atomic Response's 64-bit value "Original Request Identifier"; this file decodes all four
 * messages into esock_mpa.rfc7306.* fields, pairs each Atomic Request with its Atomic
 * Response (or with the Terminate that refused it) and flags what RFC 7306 forbids.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "esock_mpa.h"

/* RFC 7306 section 4.1: the new opcodes (all untagged). */
#define OP_IMM 8
#define OP_IMM_SE 9
#define OP_ATOMIC_REQ 10
#define OP_ATOMIC_RESP 11
#define HDR 18 /* untagged DDP/RDMAP header: the message body starts here */

/* Each message's queue (section 4.1) and ULPDU length: the header plus 8 octets of
 * Immediate Data (6.2), 52 of Atomic Request (5.2.1), 12 of Atomic Response (5.2.2). */
static const struct {
  guint32 qn, len;
  const char* name;
} msgs[] = {{0, HDR + 8, "Immediate Data"},
            {0, HDR + 8, "Immediate Data with SE"},
            {1, HDR + 52, "Atomic Request"},
            {3, HDR + 12, "Atomic Response"}};

/* Section 5.2.1: the Atomic Operation, low 4 bits of the header's first word. */
static const value_string atomic_ops[] = {{0, "FetchAdd"}, {2, "CmpSwap"}, {0, NULL}};

static gint ett_rfc7306 = -1;
static int hf_rfc7306 = -1, hf_imm = -1, hf_se = -1, hf_reserved = -1, hf_op = -1, hf_req_id = -1,
           hf_stag = -1, hf_to = -1, hf_data = -1, hf_mask = -1, hf_cmp = -1, hf_cmp_mask = -1,
           hf_resp_req_id = -1, hf_resp_value = -1, hf_req_in = -1, hf_resp_in = -1, hf_time = -1,
           hf_term_in = -1, hf_term_req = -1;
static expert_field ei_misaligned = EI_INIT, ei_bad_op = EI_INIT, ei_bad_length = EI_INIT,
                    ei_bad_qn = EI_INIT, ei_unsolicited = EI_INIT, ei_id_mismatch = EI_INIT;

void esock_rfc7306_analyse(tvbuff_t* u, packet_info* pinfo, esock_conv_t* c, int dir,
                           esock_rfc7306_t* r) {
  guint8 op = tvb_get_guint8(u, 1) & 0x0f;
  gboolean last = (tvb_get_guint8(u, 0) & 0x40) != 0, resynced;
  esock_atomic_t* a = NULL;
  wmem_list_frame_t* it;

  if (op < OP_IMM || op > OP_ATOMIC_RESP) return;
  r->op = op;
  r->bad_qn = tvb_get_ntohl(u, 6) != msgs[op - OP_IMM].qn;
  /* All four are single-segment messages (L=1, MO 0) of a fixed length. */
  r->bad_length =
      tvb_reported_length(u) != msgs[op - OP_IMM].len || !last || tvb_get_ntohl(u, 14) != 0;
  if (op == OP_ATOMIC_REQ && tvb_bytes_exist(u, HDR, 20)) {
    a = wmem_new0(wmem_file_scope(), esock_atomic_t);
    a->op = tvb_get_guint8(u, HDR + 3) & 0x0f;
    a->req_id = tvb_get_ntohl(u, HDR + 4);
    a->stag = tvb_get_ntohl(u, HDR + 8);
    a->to = tvb_get_ntoh64(u, HDR + 12);
    a->msn = tvb_get_ntohl(u, 10);
    a->req_frame = pinfo->num;
    a->req_time = pinfo->abs_ts;
    r->bad_atomic_op = a->op != 0 && a->op != 2;
    /* Section 5.2.1: the target is a naturally aligned 64-bit word; the responder refuses
     * anything else (section 8.2). */
    r->misaligned = (a->to & 7) != 0;
    r->atomic = a;
    wmem_list_append(c->atomics[dir], a);
  } else if (op == OP_ATOMIC_RESP && tvb_bytes_exist(u, HDR, 4)) {
    /* Section 5.2.2: responses come in request order, so this one answers the oldest
     * request still open; its Original Request Identifier must repeat the request's. */
    r->req_id = tvb_get_ntohl(u, HDR);
    for (it = wmem_list_head(c->atomics[!dir]); it && !a; it = wmem_list_frame_next(it)) {
      esock_atomic_t* x = (esock_atomic_t*)wmem_list_frame_data(it);
      if (!x->done) a = x;
    }
    /* Cut mid-stream, the request may predate the capture. */
    resynced = c->flow[0].resynced || c->flow[1].resynced;
    if (!a) {
      r->unsolicited = !resynced;
      return;
    }
    if (a->req_id != r->req_id) {
      if (resynced) return;
      r->id_mismatch = TRUE;
    }
    a->done = TRUE;
    a->resp_frame = pinfo->num;
    nstime_delta(&a->resp_time, &pinfo->abs_ts, &a->req_time);
    r->atomic = a;
  }
}

void esock_rfc7306_terminate(tvbuff_t* u, packet_info* pinfo, esock_conv_t* c, int dir,
                             esock_rfc7306_t* r) {
  wmem_list_frame_t* it;
  guint32 msn;

  /* RFC 5040 section 4.8: with Hdrct D set the Terminate carries the DDP Segment Length
   * (octets 22-23) and the terminated DDP header (from 24). An untagged one of opcode 10 on
   * QN 1 names, by its MSN, the Atomic Request refused (RFC 7306 section 8.2). */
  if (!tvb_bytes_exist(u, 24, HDR) || !(tvb_get_guint8(u, 20) & 0x40) ||
      (tvb_get_guint8(u, 24) & 0x80) || (tvb_get_guint8(u, 25) & 0x0f) != OP_ATOMIC_REQ ||
      tvb_get_ntohl(u, 24 + 6) != 1)
    return;
  msn = tvb_get_ntohl(u, 24 + 10);
  for (it = wmem_list_head(c->atomics[!dir]); it; it = wmem_list_frame_next(it)) {
    esock_atomic_t* a = (esock_atomic_t*)wmem_list_frame_data(it);
    if (a->msn == msn && !a->term_frame) {
      a->term_frame = pinfo->num;
      a->done = TRUE; /* no Atomic Response will follow */
      r->term = a;
      return;
    }
  }
}

/* A big-endian field if the ULPDU holds it (a short message must not end the segment). */
static proto_item* add(proto_tree* t, int hf, tvbuff_t* u, int off, int len) {
  return tvb_bytes_exist(u, off, len) ? proto_tree_add_item(t, hf, u, off, len, ENC_BIG_ENDIAN)
                                      : NULL;
}

void esock_rfc7306_dissect(tvbuff_t* u, packet_info* pinfo, proto_tree* tree, proto_tree* analysis,
                           const esock_rfc7306_t* r) {
  const esock_atomic_t* a = r->atomic;
  proto_item *ti, *it;
  proto_tree* t;
  guint32 qn, len = tvb_reported_length(u);
#define GEN(x) proto_item_set_generated(x)

  if (r->term) GEN(proto_tree_add_uint(analysis, hf_term_req, u, 0, 0, r->term->req_frame));
  if (!r->op) return;
  qn = tvb_get_ntohl(u, 6);
  ti = proto_tree_add_item(tree, hf_rfc7306, u, HDR, -1, ENC_NA);
  proto_item_append_text(ti, ": %s", msgs[r->op - OP_IMM].name);
  t = proto_item_add_subtree(ti, ett_rfc7306);
  if (r->bad_qn)
    expert_add_info_format(pinfo, ti, &ei_bad_qn, "%s on queue %u (RFC 7306 section 4.1: QN %u)",
                           msgs[r->op - OP_IMM].name, qn, msgs[r->op - OP_IMM].qn);
  if (r->bad_length)
    expert_add_info_format(pinfo, ti, &ei_bad_length,
                           "%s of %u octets, L=%u, MO %u (RFC 7306: one DDP segment of %u)",
                           msgs[r->op - OP_IMM].name, len, (tvb_get_guint8(u, 0) & 0x40) != 0,
                           tvb_get_ntohl(u, 14), msgs[r->op - OP_IMM].len);
  switch (r->op) {
    case OP_IMM:
    case OP_IMM_SE: /* section 6.2: 8 octets the ULP gets with the completion */
      add(t, hf_imm, u, HDR, 8);
      GEN(proto_tree_add_boolean(t, hf_se, u, 0, 0, r->op == OP_IMM_SE));
      break;
    case OP_ATOMIC_REQ: /* section 5.2.1 */
      add(t, hf_reserved, u, HDR, 4);
      it = add(t, hf_op, u, HDR, 4);
      if (r->bad_atomic_op)
        expert_add_info_format(pinfo, it ? it : ti, &ei_bad_op,
                               "Reserved Atomic Operation %u (RFC 7306 section 5.2.1)", a->op);
      add(t, hf_req_id, u, HDR + 4, 4);
      add(t, hf_stag, u, HDR + 8, 4);
      it = add(t, hf_to, u, HDR + 12, 8);
      if (r->misaligned)
        expert_add_info_format(pinfo, it ? it : ti, &ei_misaligned,
                               "Atomic target TO 0x%016" G_GINT64_MODIFIER
                               "x not 8-octet aligned (RFC 7306 section 5.2.1; the responder "
                               "terminates, section 8.2)",
                               a->to);
      add(t, hf_data, u, HDR + 20, 8);
      add(t, hf_mask, u, HDR + 28, 8);
      add(t, hf_cmp, u, HDR + 36, 8);
      add(t, hf_cmp_mask, u, HDR + 44, 8);
      if (a && a->resp_frame)
        GEN(proto_tree_add_uint(analysis, hf_resp_in, u, 0, 0, a->resp_frame));
      if (a && a->term_frame)
        GEN(proto_tree_add_uint(analysis, hf_term_in, u, 0, 0, a->term_frame));
      break;
    case OP_ATOMIC_RESP: /* section 5.2.2 */
      it = add(t, hf_resp_req_id, u, HDR, 4);
      add(t, hf_resp_value, u, HDR + 4, 8);
      if (a) {
        GEN(proto_tree_add_uint(analysis, hf_req_in, u, 0, 0, a->req_frame));
        GEN(proto_tree_add_time(analysis, hf_time, u, 0, 0, &a->resp_time));
      }
      if (r->unsolicited) expert_add_info(pinfo, ti, &ei_unsolicited);
      if (r->id_mismatch)
        expert_add_info_format(pinfo, it ? it : ti, &ei_id_mismatch,
                               "Original Request Identifier 0x%08x, but the Atomic Request it "
                               "answers (frame %u) has 0x%08x",
                               r->req_id, a->req_frame, a->req_id);
      break;
  }
#undef GEN
}

void esock_rfc7306_info(tvbuff_t* u, packet_info* pinfo) {
  guint8 op;
  if (!tvb_bytes_exist(u, 0, HDR)) return;
  op = tvb_get_guint8(u, 1) & 0x0f;
  if ((tvb_get_guint8(u, 0) & 0x80) || (op != OP_IMM && op != OP_IMM_SE)) return;
  col_append_fstr(pinfo->cinfo, COL_INFO, " %s", msgs[op - OP_IMM].name);
  if (tvb_bytes_exist(u, HDR, 8))
    col_append_fstr(pinfo->cinfo, COL_INFO, " 0x%016" G_GINT64_MODIFIER "x",
                    tvb_get_ntoh64(u, HDR));
}

void esock_rfc7306_register(int proto) {
  static hf_register_info hf[] = {
      {&hf_rfc7306,
       {"RFC 7306 message", "esock_mpa.rfc7306", FT_NONE, BASE_NONE, NULL, 0x0,
        "RDMAP extension: Atomic operation or Immediate Data", HFILL}},
      {&hf_imm,
       {"Immediate Data", "esock_mpa.rfc7306.immediate_data", FT_UINT64, BASE_HEX, NULL, 0x0,
        "RFC 7306 section 6.2: 8 opaque octets", HFILL}},
      {&hf_se,
       {"Solicited Event", "esock_mpa.rfc7306.solicited", FT_BOOLEAN, BASE_NONE, NULL, 0x0,
        "Immediate Data with Solicited Event (opcode 0x9)", HFILL}},
      {&hf_reserved,
       {"Reserved", "esock_mpa.rfc7306.atomic.reserved", FT_UINT32, BASE_HEX, NULL, 0xfffffff0,
        NULL, HFILL}},
      {&hf_op,
       {"Atomic Operation", "esock_mpa.rfc7306.atomic.op", FT_UINT32, BASE_DEC, VALS(atomic_ops),
        0x0000000f, NULL, HFILL}},
      {&hf_req_id,
       {"Request Identifier", "esock_mpa.rfc7306.atomic.request_id", FT_UINT32, BASE_HEX, NULL, 0x0,
        NULL, HFILL}},
      {&hf_stag,
       {"Remote STag", "esock_mpa.rfc7306.atomic.stag", FT_UINT32, BASE_HEX, NULL, 0x0, NULL,
        HFILL}},
      {&hf_to,
       {"Remote Tagged Offset", "esock_mpa.rfc7306.atomic.to", FT_UINT64, BASE_HEX, NULL, 0x0, NULL,
        HFILL}},
      {&hf_data,
       {"Add or Swap Data", "esock_mpa.rfc7306.atomic.data", FT_UINT64, BASE_HEX, NULL, 0x0, NULL,
        HFILL}},
      {&hf_mask,
       {"Add or Swap Mask", "esock_mpa.rfc7306.atomic.mask", FT_UINT64, BASE_HEX, NULL, 0x0, NULL,
        HFILL}},
      {&hf_cmp,
       {"Compare Data", "esock_mpa.rfc7306.atomic.compare_data", FT_UINT64, BASE_HEX, NULL, 0x0,
        NULL, HFILL}},
      {&hf_cmp_mask,
       {"Compare Mask", "esock_mpa.rfc7306.atomic.compare_mask", FT_UINT64, BASE_HEX, NULL, 0x0,
        NULL, HFILL}},
      {&hf_resp_req_id,
       {"Original Request Identifier", "esock_mpa.rfc7306.response.request_id", FT_UINT32, BASE_HEX,
        NULL, 0x0, NULL, HFILL}},
      {&hf_resp_value,
       {"Original Remote Data Value", "esock_mpa.rfc7306.response.value", FT_UINT64, BASE_HEX, NULL,
        0x0, "The target's value before the operation", HFILL}},
      {&hf_req_in,
       {"Atomic Request in frame", "esock_mpa.analysis.atomic.request_in", FT_FRAMENUM, BASE_NONE,
        FRAMENUM_TYPE(FT_FRAMENUM_REQUEST), 0x0, NULL, HFILL}},
      {&hf_resp_in,
       {"Atomic Response in frame", "esock_mpa.analysis.atomic.response_in", FT_FRAMENUM, BASE_NONE,
        FRAMENUM_TYPE(FT_FRAMENUM_RESPONSE), 0x0, NULL, HFILL}},
      {&hf_time,
       {"Atomic response time", "esock_mpa.analysis.atomic.time", FT_RELATIVE_TIME, BASE_NONE, NULL,
        0x0, "From the Atomic Request to its Atomic Response", HFILL}},
      {&hf_term_in,
       {"Refused by the Terminate in frame", "esock_mpa.analysis.atomic.terminate_in", FT_FRAMENUM,
        BASE_NONE, NULL, 0x0, NULL, HFILL}},
      {&hf_term_req,
       {"Terminated Atomic Request in frame", "esock_mpa.analysis.terminate.atomic_in", FT_FRAMENUM,
        BASE_NONE, FRAMENUM_TYPE(FT_FRAMENUM_REQUEST), 0x0,
        "The Atomic Request whose DDP header the Terminate carries (RFC 7306 section 8.2)", HFILL}},
  };
  static gint* ett[] = {&ett_rfc7306};
  static ei_register_info ei[] = {
      {&ei_misaligned,
       {"esock_mpa.rfc7306.misaligned", PI_PROTOCOL, PI_WARN,
        "Atomic Request target not 8-octet aligned", EXPFILL}},
      {&ei_bad_op,
       {"esock_mpa.rfc7306.bad_atomic_op", PI_PROTOCOL, PI_WARN, "Reserved Atomic Operation",
        EXPFILL}},
      {&ei_bad_length,
       {"esock_mpa.rfc7306.bad_length", PI_PROTOCOL, PI_WARN,
        "RFC 7306 message of the wrong length or not one DDP segment", EXPFILL}},
      {&ei_bad_qn,
       {"esock_mpa.rfc7306.bad_qn", PI_PROTOCOL, PI_WARN, "RFC 7306 message on the wrong queue",
        EXPFILL}},
      {&ei_unsolicited,
       {"esock_mpa.analysis.atomic.unsolicited", PI_SEQUENCE, PI_WARN,
        "Atomic Response without an outstanding Atomic Request", EXPFILL}},
      {&ei_id_mismatch,
       {"esock_mpa.analysis.atomic.id_mismatch", PI_SEQUENCE, PI_WARN,
        "Atomic Response's request identifier does not match its request", EXPFILL}},
  };
  expert_module_t* em;
  proto_register_field_array(proto, hf, array_length(hf));
  proto_register_subtree_array(ett, array_length(ett));
  em = expert_register_protocol(proto);
  expert_register_field_array(em, ei, array_length(ei));
}
