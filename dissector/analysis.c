/* esock Wireshark plugin: per-connection DDP/RDMAP analysis. Wireshark's iwarp_ddp_rdmap
 * shows the headers; this file only reads the few fields it tracks:
 *   untagged messages by QN/MSN/MO (RFC 5041 section 5.3), tagged placements by STag and
 *   TO against advertised regions, RDMA Read Request/Response pairing (RFC 5040 section
 *   4.4 and 5.2) with the response time, the P2P RTR (RFC 6581), and Terminate causes
 *   (RFC 5040 section 7, RFC 5041 section 7.2, RFC 5044 section 8, RFC 6581); the
 *   RFC 7306 messages (Atomics, Immediate Data) are decoded and paired in rfc7306.c.
 * Results are computed on the first pass and kept per FPDU, so later passes show the same.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "esock_mpa.h"

typedef struct result {
  gboolean untagged, tagged;
  guint32 qn, msn, mo, msn_expected, mo_expected;
  gboolean msn_bad, mo_bad, msg_done;
  guint32 msg_len, msg_segments, msg_first_frame;
  guint32 stag, len;
  guint64 to;
  const esock_region_t* region;
  gboolean outside;
  esock_read_t* read;
  gboolean is_read_request, unsolicited, rtr;
  gboolean term;
  guint8 layer, etype, ecode;
  esock_rfc7306_t rfc7306;
} result_t;

static wmem_map_t* results; /* (frame << 32 | stream position) -> result_t */
static gint ett_analysis = -1;
static int hf_analysis = -1, hf_qn = -1, hf_msn = -1, hf_msn_expected = -1, hf_mo_expected = -1,
           hf_msg_len = -1, hf_msg_segments = -1, hf_msg_first = -1, hf_stag = -1, hf_to = -1,
           hf_len = -1, hf_region_frame = -1, hf_outside = -1, hf_read_req_in = -1,
           hf_read_resp_in = -1, hf_read_done_in = -1, hf_read_time = -1, hf_read_size = -1,
           hf_rtr = -1, hf_term_layer = -1, hf_term_type = -1, hf_term_code = -1,
           hf_term_cause = -1;
static expert_field ei_msn = EI_INIT, ei_mo = EI_INIT, ei_outside = EI_INIT,
                    ei_unsolicited = EI_INIT, ei_term = EI_INIT, ei_rtr = EI_INIT;

static const value_string layer_vals[] = {{0, "RDMAP"}, {1, "DDP"}, {2, "LLP (MPA)"}, {0, NULL}};

/* Terminate causes as registered by IANA (RFC 6580). */
static const char* term_cause(guint8 layer, guint8 type, guint8 code) {
  switch (layer << 4 | type) {
    case 0x00:
      return "RDMAP Local Catastrophic Error";
    case 0x01:
      switch (code) {
        case 0x00:
          return "RDMAP Remote Protection Error: invalid STag";
        case 0x01:
          return "RDMAP Remote Protection Error: base or bounds violation";
        case 0x02:
          return "RDMAP Remote Protection Error: access rights violation";
        case 0x03:
          return "RDMAP Remote Protection Error: STag not associated with RDMAP Stream";
        case 0x04:
          return "RDMAP Remote Protection Error: TO wrap";
        case 0x09:
          return "RDMAP Remote Protection Error: STag cannot be invalidated";
        default:
          return "RDMAP Remote Protection Error: unspecified";
      }
    case 0x02:
      switch (code) {
        case 0x05:
          return "RDMAP Remote Operation Error: invalid RDMAP version";
        case 0x06:
          return "RDMAP Remote Operation Error: unexpected OpCode";
        case 0x07: /* also RFC 7306 section 8.2's answer to a misaligned Atomic Request */
          return "RDMAP Remote Operation Error: catastrophic error, localized to RDMAP Stream";
        case 0x08:
          return "RDMAP Remote Operation Error: catastrophic error, global";
        case 0x09:
          return "RDMAP Remote Operation Error: STag cannot be invalidated";
        default:
          return "RDMAP Remote Operation Error: unspecified";
      }
    case 0x10:
      return "DDP Local Catastrophic Error";
    case 0x11:
      switch (code) {
        case 0x00:
          return "DDP Tagged Buffer Error: invalid STag";
        case 0x01:
          return "DDP Tagged Buffer Error: base or bounds violation";
        case 0x02:
          return "DDP Tagged Buffer Error: STag not associated with DDP Stream";
        case 0x03:
          return "DDP Tagged Buffer Error: TO wrap";
        case 0x04:
          return "DDP Tagged Buffer Error: invalid DDP version";
        default:
          return "DDP Tagged Buffer Error";
      }
    case 0x12:
      switch (code) {
        case 0x01:
          return "DDP Untagged Buffer Error: invalid QN";
        case 0x02:
          return "DDP Untagged Buffer Error: invalid MSN, no buffer available";
        case 0x03:
          return "DDP Untagged Buffer Error: invalid MSN, MSN range";
        case 0x04:
          return "DDP Untagged Buffer Error: invalid MO";
        case 0x05:
          return "DDP Untagged Buffer Error: DDP message too long";
        case 0x06:
          return "DDP Untagged Buffer Error: invalid DDP version";
        default:
          return "DDP Untagged Buffer Error";
      }
    case 0x20:
      switch (code) {
        case 0x01:
          return "MPA: TCP connection closed, terminated or lost";
        case 0x02:
          return "MPA: CRC error";
        case 0x03:
          return "MPA: Marker and ULPDU Length field mismatch";
        case 0x04:
          return "MPA: invalid MPA Request or Reply";
        case 0x05:
          return "MPA: local catastrophic error";
        case 0x06:
          return "MPA: insufficient IRD resources";
        case 0x07:
          return "MPA: no matching RTR model";
        default:
          return "MPA error";
      }
    default:
      return "unknown layer/type";
  }
}

static void analyse(tvbuff_t* u, packet_info* pinfo, esock_conv_t* c, int dir, result_t* r) {
  guint32 ulen = tvb_reported_length(u);
  esock_flow_t* f = &c->flow[dir];
  guint8 b0, op;
  gboolean last;

  if (tvb_captured_length(u) < 2) return;
  b0 = tvb_get_guint8(u, 0);
  op = tvb_get_guint8(u, 1) & 0x0f;
  last = (b0 & 0x40) != 0;
  if (dir == 0 && f->rtr_pending) {
    /* RFC 6581: in peer-to-peer mode the initiator's first FPDU is the RTR message. */
    f->rtr_pending = FALSE;
    r->rtr = TRUE;
  }
  if (b0 & 0x80) {
    wmem_list_frame_t* it;
    if (tvb_captured_length(u) < 14) return;
    r->tagged = TRUE;
    r->stag = tvb_get_ntohl(u, 2);
    r->to = tvb_get_ntoh64(u, 6);
    r->len = ulen - 14;
    if (op == 2) { /* Read Response: answers the oldest open Read Request for this sink */
      for (it = wmem_list_head(c->reads[!dir]); it; it = wmem_list_frame_next(it)) {
        esock_read_t* rd = (esock_read_t*)wmem_list_frame_data(it);
        if (!rd->done && rd->sink_stag == r->stag && r->to == rd->sink_to + rd->bytes) {
          r->read = rd;
          break;
        }
      }
      if (r->read) {
        esock_read_t* rd = r->read;
        if (!rd->first_resp_frame) rd->first_resp_frame = pinfo->num;
        rd->bytes += r->len;
        r->outside = rd->bytes > rd->size;
        if (last) {
          rd->done = TRUE;
          rd->last_resp_frame = pinfo->num;
          nstime_delta(&rd->resp_time, &pinfo->abs_ts, &rd->req_time);
        }
      } else {
        /* The request may predate a capture that starts mid-stream. */
        r->unsolicited = !c->flow[0].resynced && !c->flow[1].resynced;
      }
    }
    /* Any placement into a region the receiver advertised must stay inside it. Regions
     * are matched by STag; with none for this STag there is nothing to check. */
    for (it = wmem_list_head(c->regions[dir]); it; it = wmem_list_frame_next(it)) {
      const esock_region_t* g = (const esock_region_t*)wmem_list_frame_data(it);
      if (g->stag != r->stag) continue;
      r->region = g;
      if (r->to >= g->to && r->to - g->to <= g->len && r->len <= g->len - (r->to - g->to)) break;
    }
    if (r->region && !(r->to >= r->region->to && r->to - r->region->to <= r->region->len &&
                       r->len <= r->region->len - (r->to - r->region->to)))
      r->outside = TRUE;
    return;
  }

  if (tvb_captured_length(u) < 18) return;
  r->untagged = TRUE;
  r->qn = tvb_get_ntohl(u, 6);
  r->msn = tvb_get_ntohl(u, 10);
  r->mo = tvb_get_ntohl(u, 14);
  if (r->qn < ESOCK_QUEUES) {
    guint32 q = r->qn, payload = ulen - 18;
    if (!f->in_msg[q]) {
      /* A new message: MSN one more than the last (the first is 1, RFC 5041 5.1). */
      if (f->msn_seen[q] || !f->resynced) {
        r->msn_expected = f->msn_seen[q] ? f->msn[q] + 1 : 1;
        r->msn_bad = r->msn != r->msn_expected;
      }
      r->mo_expected = 0;
      r->mo_bad = r->mo != 0 && (f->msn_seen[q] || !f->resynced);
      f->msg_bytes[q] = r->mo;
      f->msg_segments[q] = 0;
      f->msg_first_frame[q] = pinfo->num;
    } else {
      r->msn_expected = f->msn[q];
      r->msn_bad = r->msn != f->msn[q];
      r->mo_expected = f->msg_bytes[q];
      r->mo_bad = r->mo != f->msg_bytes[q];
      if (r->msn_bad) {
        f->msg_bytes[q] = r->mo;
        f->msg_segments[q] = 0;
        f->msg_first_frame[q] = pinfo->num;
      }
    }
    f->msn[q] = r->msn;
    f->msn_seen[q] = TRUE;
    f->msg_bytes[q] = r->mo + payload;
    f->msg_segments[q]++;
    f->in_msg[q] = !last;
    if (last) {
      r->msg_done = TRUE;
      r->msg_len = f->msg_bytes[q];
      r->msg_segments = f->msg_segments[q];
      r->msg_first_frame = f->msg_first_frame[q];
    }
  }
  esock_rfc7306_analyse(u, pinfo, c, dir, &r->rfc7306); /* opcodes 8-11 */
  if (op == 1 && tvb_captured_length(u) >= 18 + 28) {   /* RDMA Read Request, RFC 5040 4.4 */
    esock_read_t* rd = wmem_new0(wmem_file_scope(), esock_read_t);
    rd->sink_stag = tvb_get_ntohl(u, 18);
    rd->sink_to = tvb_get_ntoh64(u, 22);
    rd->size = tvb_get_ntohl(u, 30);
    rd->src_stag = tvb_get_ntohl(u, 34);
    rd->src_to = tvb_get_ntoh64(u, 38);
    rd->req_frame = pinfo->num;
    rd->req_time = pinfo->abs_ts;
    wmem_list_append(c->reads[dir], rd);
    /* The Read Responses will be placed into the requester's sink (flow !dir carries them). */
    esock_add_region(c, !dir, rd->sink_stag, rd->sink_to, rd->size, pinfo->num,
                     "RDMA Read Request");
    r->read = rd;
    r->is_read_request = TRUE;
  }
  if (op == 7 && tvb_captured_length(u) >= 20) { /* Terminate, RFC 5040 section 4.8 */
    guint8 t0 = tvb_get_guint8(u, 18);
    r->term = TRUE;
    r->layer = t0 >> 4;
    r->etype = t0 & 0x0f;
    r->ecode = tvb_get_guint8(u, 19);
    esock_rfc7306_terminate(u, pinfo, c, dir, &r->rfc7306);
  }
}

void esock_analyse_ulpdu(tvbuff_t* u, packet_info* pinfo, proto_tree* tree, esock_conv_t* c,
                         int dir, guint32 key) {
  guint64 k = (guint64)pinfo->num << 32 | key;
  result_t* r = (result_t*)wmem_map_lookup(results, &k);
  proto_item *ai, *ti;
  proto_tree* t;

  if (!r) {
    guint64* kp = wmem_new(wmem_file_scope(), guint64);
    *kp = k;
    r = wmem_new0(wmem_file_scope(), result_t);
    if (!PINFO_FD_VISITED(pinfo)) analyse(u, pinfo, c, dir, r);
    wmem_map_insert(results, kp, r);
  }
  ai = proto_tree_add_item(tree, hf_analysis, u, 0, 0, ENC_NA);
  proto_item_set_generated(ai);
  t = proto_item_add_subtree(ai, ett_analysis);
#define GEN(x) proto_item_set_generated(x)
  if (r->rtr) {
    ti = proto_tree_add_boolean(t, hf_rtr, u, 0, 0, TRUE);
    GEN(ti);
    expert_add_info(pinfo, ti, &ei_rtr);
  }
  if (r->untagged) {
    GEN(proto_tree_add_uint(t, hf_qn, u, 0, 0, r->qn));
    GEN(proto_tree_add_uint(t, hf_msn, u, 0, 0, r->msn));
    if (r->msn_bad) {
      ti = proto_tree_add_uint(t, hf_msn_expected, u, 0, 0, r->msn_expected);
      GEN(ti);
      expert_add_info_format(pinfo, ti, &ei_msn, "MSN %u out of order on queue %u (expected %u)",
                             r->msn, r->qn, r->msn_expected);
    }
    if (r->mo_bad) {
      ti = proto_tree_add_uint(t, hf_mo_expected, u, 0, 0, r->mo_expected);
      GEN(ti);
      expert_add_info_format(pinfo, ti, &ei_mo, "MO %u leaves a gap or overlap (expected %u)",
                             r->mo, r->mo_expected);
    }
    if (r->msg_done) {
      GEN(proto_tree_add_uint(t, hf_msg_len, u, 0, 0, r->msg_len));
      GEN(proto_tree_add_uint(t, hf_msg_segments, u, 0, 0, r->msg_segments));
      GEN(proto_tree_add_uint(t, hf_msg_first, u, 0, 0, r->msg_first_frame));
    }
  }
  if (r->tagged) {
    GEN(proto_tree_add_uint(t, hf_stag, u, 0, 0, r->stag));
    GEN(proto_tree_add_uint64(t, hf_to, u, 0, 0, r->to));
    GEN(proto_tree_add_uint(t, hf_len, u, 0, 0, r->len));
    if (r->region) GEN(proto_tree_add_uint(t, hf_region_frame, u, 0, 0, r->region->frame));
    if (r->outside) {
      ti = proto_tree_add_boolean(t, hf_outside, u, 0, 0, TRUE);
      GEN(ti);
      expert_add_info_format(pinfo, ti, &ei_outside,
                             "Placement STag 0x%08x TO %" G_GINT64_MODIFIER
                             "u length %u outside "
                             "the region advertised by %s in frame %u",
                             r->stag, r->to, r->len, r->region ? r->region->by : "a Read Request",
                             r->region ? r->region->frame : (r->read ? r->read->req_frame : 0));
    }
    if (r->unsolicited) expert_add_info(pinfo, ai, &ei_unsolicited);
  }
  if (r->read) {
    esock_read_t* rd = r->read;
    GEN(proto_tree_add_uint(t, hf_read_size, u, 0, 0, rd->size));
    if (r->is_read_request) {
      if (rd->first_resp_frame)
        GEN(proto_tree_add_uint(t, hf_read_resp_in, u, 0, 0, rd->first_resp_frame));
      if (rd->done) GEN(proto_tree_add_uint(t, hf_read_done_in, u, 0, 0, rd->last_resp_frame));
    } else {
      GEN(proto_tree_add_uint(t, hf_read_req_in, u, 0, 0, rd->req_frame));
      if (rd->done && rd->last_resp_frame == pinfo->num)
        GEN(proto_tree_add_time(t, hf_read_time, u, 0, 0, &rd->resp_time));
    }
  }
  if (r->term) {
    const char* cause = term_cause(r->layer, r->etype, r->ecode);
    GEN(proto_tree_add_uint(t, hf_term_layer, u, 0, 0, r->layer));
    GEN(proto_tree_add_uint(t, hf_term_type, u, 0, 0, r->etype));
    GEN(proto_tree_add_uint(t, hf_term_code, u, 0, 0, r->ecode));
    ti = proto_tree_add_string(t, hf_term_cause, u, 0, 0, cause);
    GEN(ti);
    expert_add_info_format(pinfo, ti, &ei_term, "Terminate: %s", cause);
  }
  esock_rfc7306_dissect(u, pinfo, tree, t, &r->rfc7306);
#undef GEN
}

void esock_analysis_register(int proto) {
  static hf_register_info hf[] = {
      {&hf_analysis,
       {"esock analysis", "esock_mpa.analysis", FT_NONE, BASE_NONE, NULL, 0x0, NULL, HFILL}},
      {&hf_qn,
       {"Queue number", "esock_mpa.analysis.qn", FT_UINT32, BASE_DEC, NULL, 0x0, NULL, HFILL}},
      {&hf_msn, {"MSN", "esock_mpa.analysis.msn", FT_UINT32, BASE_DEC, NULL, 0x0, NULL, HFILL}},
      {&hf_msn_expected,
       {"Expected MSN", "esock_mpa.analysis.msn_expected", FT_UINT32, BASE_DEC, NULL, 0x0,
        "Present only when the MSN is out of order", HFILL}},
      {&hf_mo_expected,
       {"Expected MO", "esock_mpa.analysis.mo_expected", FT_UINT32, BASE_DEC, NULL, 0x0,
        "Present only when the MO leaves a gap", HFILL}},
      {&hf_msg_len,
       {"Message length", "esock_mpa.analysis.msg.length", FT_UINT32, BASE_DEC, NULL, 0x0,
        "Untagged message reassembled by MSN/MO: total octets (on its last segment)", HFILL}},
      {&hf_msg_segments,
       {"Message segments", "esock_mpa.analysis.msg.segments", FT_UINT32, BASE_DEC, NULL, 0x0, NULL,
        HFILL}},
      {&hf_msg_first,
       {"Message starts in frame", "esock_mpa.analysis.msg.first_frame", FT_FRAMENUM, BASE_NONE,
        NULL, 0x0, NULL, HFILL}},
      {&hf_stag,
       {"Placement STag", "esock_mpa.analysis.placement.stag", FT_UINT32, BASE_HEX, NULL, 0x0, NULL,
        HFILL}},
      {&hf_to,
       {"Placement TO", "esock_mpa.analysis.placement.to", FT_UINT64, BASE_HEX, NULL, 0x0, NULL,
        HFILL}},
      {&hf_len,
       {"Placement length", "esock_mpa.analysis.placement.length", FT_UINT32, BASE_DEC, NULL, 0x0,
        NULL, HFILL}},
      {&hf_region_frame,
       {"Region advertised in frame", "esock_mpa.analysis.placement.region_frame", FT_FRAMENUM,
        BASE_NONE, NULL, 0x0, NULL, HFILL}},
      {&hf_outside,
       {"Placement outside the advertised region", "esock_mpa.analysis.placement.outside",
        FT_BOOLEAN, BASE_NONE, NULL, 0x0, NULL, HFILL}},
      {&hf_read_req_in,
       {"Read Request in frame", "esock_mpa.analysis.read.request_in", FT_FRAMENUM, BASE_NONE,
        FRAMENUM_TYPE(FT_FRAMENUM_REQUEST), 0x0, NULL, HFILL}},
      {&hf_read_resp_in,
       {"First Read Response in frame", "esock_mpa.analysis.read.response_in", FT_FRAMENUM,
        BASE_NONE, FRAMENUM_TYPE(FT_FRAMENUM_RESPONSE), 0x0, NULL, HFILL}},
      {&hf_read_done_in,
       {"Last Read Response in frame", "esock_mpa.analysis.read.done_in", FT_FRAMENUM, BASE_NONE,
        NULL, 0x0, NULL, HFILL}},
      {&hf_read_time,
       {"Read response time", "esock_mpa.analysis.read.time", FT_RELATIVE_TIME, BASE_NONE, NULL,
        0x0, "From the Read Request to its last Read Response", HFILL}},
      {&hf_read_size,
       {"Read message size", "esock_mpa.analysis.read.size", FT_UINT32, BASE_DEC, NULL, 0x0, NULL,
        HFILL}},
      {&hf_rtr,
       {"Ready-to-receive (RTR) message", "esock_mpa.analysis.rtr", FT_BOOLEAN, BASE_NONE, NULL,
        0x0, "RFC 6581 peer-to-peer RTR", HFILL}},
      {&hf_term_layer,
       {"Terminate layer", "esock_mpa.analysis.terminate.layer", FT_UINT8, BASE_DEC,
        VALS(layer_vals), 0x0, NULL, HFILL}},
      {&hf_term_type,
       {"Terminate error type", "esock_mpa.analysis.terminate.type", FT_UINT8, BASE_DEC, NULL, 0x0,
        NULL, HFILL}},
      {&hf_term_code,
       {"Terminate error code", "esock_mpa.analysis.terminate.code", FT_UINT8, BASE_HEX, NULL, 0x0,
        NULL, HFILL}},
      {&hf_term_cause,
       {"Terminate cause", "esock_mpa.analysis.terminate.cause", FT_STRING, BASE_NONE, NULL, 0x0,
        NULL, HFILL}},
  };
  static gint* ett[] = {&ett_analysis};
  static ei_register_info ei[] = {
      {&ei_msn,
       {"esock_mpa.analysis.msn_order", PI_SEQUENCE, PI_WARN, "MSN out of order", EXPFILL}},
      {&ei_mo, {"esock_mpa.analysis.mo_gap", PI_SEQUENCE, PI_WARN, "MO gap", EXPFILL}},
      {&ei_outside,
       {"esock_mpa.analysis.outside_region", PI_PROTOCOL, PI_WARN,
        "Placement outside an advertised region", EXPFILL}},
      {&ei_unsolicited,
       {"esock_mpa.analysis.unsolicited_read_response", PI_SEQUENCE, PI_WARN,
        "RDMA Read Response without a matching Read Request", EXPFILL}},
      {&ei_term, {"esock_mpa.analysis.terminate", PI_RESPONSE_CODE, PI_WARN, "Terminate", EXPFILL}},
      {&ei_rtr,
       {"esock_mpa.analysis.rtr.note", PI_SEQUENCE, PI_CHAT, "Peer-to-peer RTR message (RFC 6581)",
        EXPFILL}},
  };
  expert_module_t* em;
  proto_register_field_array(proto, hf, array_length(hf));
  proto_register_subtree_array(ett, array_length(ett));
  em = expert_register_protocol(proto);
  expert_register_field_array(em, ei, array_length(ei));
  results =
      wmem_map_new_autoreset(wmem_epan_scope(), wmem_file_scope(), g_int64_hash, g_int64_equal);
}
