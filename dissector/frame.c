/* esock Wireshark plugin: MPA Request/Reply/Reject frames (RFC 5044 section 7.1) and the
 * RFC 6581 enhanced connection establishment block (IRD/ORD, peer-to-peer, RTR types),
 * which Wireshark 4.0's iwarp_mpa shows only as raw private data.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <string.h>

#include "esock_mpa.h"

static const char key_req[] = "MPA ID Req Frame";
static const char key_rep[] = "MPA ID Rep Frame";

enum { FRAME_REQUEST = 1, FRAME_REPLY = 2, FRAME_REJECT = 3 };
static const value_string frame_type_vals[] = {{FRAME_REQUEST, "MPA Request"},
                                               {FRAME_REPLY, "MPA Reply"},
                                               {FRAME_REJECT, "MPA Reply (Reject)"},
                                               {0, NULL}};

static gint ett_frame = -1, ett_flags = -1, ett_v2 = -1, ett_neg = -1;
static int hf_frame_type = -1, hf_key = -1, hf_flags = -1, hf_flag_m = -1, hf_flag_c = -1,
           hf_flag_r = -1, hf_flag_enh = -1, hf_flag_res = -1, hf_rev = -1, hf_pd_len = -1,
           hf_v2_ird_word = -1, hf_v2_p2p = -1, hf_v2_rtr_send = -1, hf_v2_ird = -1,
           hf_v2_ord_word = -1, hf_v2_rtr_write = -1, hf_v2_rtr_read = -1, hf_v2_ord = -1,
           hf_pd = -1, hf_neg_markers_i2r = -1, hf_neg_markers_r2i = -1, hf_neg_crc = -1,
           hf_neg_rtr = -1, hf_neg = -1;
static expert_field ei_bad_rev = EI_INIT, ei_pd_too_long = EI_INIT, ei_v2_missing = EI_INIT,
                    ei_reject = EI_INIT, ei_reject_in_request = EI_INIT, ei_rtr_choice = EI_INIT;

gboolean esock_is_mpa_key(tvbuff_t* tvb, int offset) {
  guint8 k[16];
  if (tvb_captured_length_remaining(tvb, offset) < 16) return FALSE;
  tvb_memcpy(tvb, k, offset, 16);
  return memcmp(k, key_req, 16) == 0 || memcmp(k, key_rep, 16) == 0;
}

/* RFC 6581 section 7: |P|L| IRD |W|R| ORD | at the front of revision 2 private data. In a
 * Request P asks for peer-to-peer mode and L/W/R list the RTR messages the initiator can
 * send; in a Reply the responder keeps P and sets the one RTR type it wants. */
static const char* rtr_name(guint16 ird_word, guint16 ord_word) {
  int n = !!(ird_word & 0x4000) + !!(ord_word & 0x8000) + !!(ord_word & 0x4000);
  if (!(ird_word & 0x8000)) return "none (not peer-to-peer)";
  if (n != 1) return "invalid (not exactly one RTR type)";
  if (ird_word & 0x4000) return "zero-length Send";
  return (ord_word & 0x8000) ? "zero-length RDMA Write" : "zero-length RDMA Read";
}

int esock_dissect_mpa_frame(tvbuff_t* tvb, int offset, packet_info* pinfo, proto_tree* tree,
                            esock_conv_t* c, int dir, guint32 seq) {
  static int* const flag_bits[] = {&hf_flag_m,   &hf_flag_c,   &hf_flag_r,
                                   &hf_flag_enh, &hf_flag_res, NULL};
  static int* const ird_bits[] = {&hf_v2_p2p, &hf_v2_rtr_send, &hf_v2_ird, NULL};
  static int* const ord_bits[] = {&hf_v2_rtr_write, &hf_v2_rtr_read, &hf_v2_ord, NULL};
  int avail = tvb_reported_length_remaining(tvb, offset);
  gboolean request;
  guint8 flags, rev;
  guint16 pd_len, ird_word = 0, ord_word = 0;
  int type, pd_off;
  proto_item* ti;
  proto_tree* t;
  esock_flow_t *fi = &c->flow[0], *fr = &c->flow[1];

  if (!esock_is_mpa_key(tvb, offset)) return avail < 16 ? -(16 - avail) : 0;
  if (avail < (int)ESOCK_MPA_FRAME_HDR) return -((int)ESOCK_MPA_FRAME_HDR - avail);
  pd_len = tvb_get_ntohs(tvb, offset + 18);
  /* RFC 5044 section 7.1: PD_Length at most 512; longer is shown as it is, not reassembled. */
  if (pd_len <= ESOCK_MPA_MAX_PD && avail < (int)ESOCK_MPA_FRAME_HDR + pd_len)
    return -((int)ESOCK_MPA_FRAME_HDR + pd_len - avail);
  if (pd_len > ESOCK_MPA_MAX_PD && avail < (int)ESOCK_MPA_FRAME_HDR + pd_len)
    pd_len = (guint16)(avail - (int)ESOCK_MPA_FRAME_HDR);

  request = tvb_get_guint8(tvb, offset + 9) == 'q';
  flags = tvb_get_guint8(tvb, offset + 16);
  rev = tvb_get_guint8(tvb, offset + 17);
  type = request ? FRAME_REQUEST : ((flags & 0x20) ? FRAME_REJECT : FRAME_REPLY);

  ti = proto_tree_add_uint(tree, hf_frame_type, tvb, offset, ESOCK_MPA_FRAME_HDR + pd_len,
                           (guint32)type);
  t = proto_item_add_subtree(ti, ett_frame);
  proto_tree_add_item(t, hf_key, tvb, offset, 16, ENC_ASCII);
  proto_tree_add_bitmask(t, tvb, offset + 16, hf_flags, ett_flags, flag_bits, ENC_NA);
  ti = proto_tree_add_item(t, hf_rev, tvb, offset + 17, 1, ENC_NA);
  if (rev != 1 && rev != 2) expert_add_info(pinfo, ti, &ei_bad_rev);
  ti = proto_tree_add_item(t, hf_pd_len, tvb, offset + 18, 2, ENC_BIG_ENDIAN);
  if (tvb_get_ntohs(tvb, offset + 18) > ESOCK_MPA_MAX_PD)
    expert_add_info(pinfo, ti, &ei_pd_too_long);
  if (request && (flags & 0x20)) expert_add_info(pinfo, ti, &ei_reject_in_request);

  pd_off = offset + (int)ESOCK_MPA_FRAME_HDR;
  if (rev == 2 && pd_len >= 4) {
    proto_tree* v;
    ird_word = tvb_get_ntohs(tvb, pd_off);
    ord_word = tvb_get_ntohs(tvb, pd_off + 2);
    ti = proto_tree_add_none_format(
        t, hf_v2_ird_word, tvb, pd_off, 4,
        "Enhanced connection establishment (RFC 6581): IRD %u, ORD %u%s", ird_word & 0x3fff,
        ord_word & 0x3fff, (ird_word & 0x8000) ? ", peer-to-peer" : "");
    v = proto_item_add_subtree(ti, ett_v2);
    proto_tree_add_bitmask_list(v, tvb, pd_off, 2, ird_bits, ENC_BIG_ENDIAN);
    proto_tree_add_bitmask_list(v, tvb, pd_off + 2, 2, ord_bits, ENC_BIG_ENDIAN);
    (void)hf_v2_ord_word;
    if (!request && type == FRAME_REPLY && (ird_word & 0x8000) &&
        (!!(ird_word & 0x4000) + !!(ord_word & 0x8000) + !!(ord_word & 0x4000)) != 1)
      expert_add_info(pinfo, ti, &ei_rtr_choice);
    pd_off += 4;
  } else if (rev == 2 && type != FRAME_REJECT) {
    expert_add_info(pinfo, ti, &ei_v2_missing);
  }
  if (pd_off < offset + (int)ESOCK_MPA_FRAME_HDR + pd_len)
    pd_off += esock_stream_dissect_hello(
        tvb, pd_off, offset + (int)ESOCK_MPA_FRAME_HDR + pd_len - pd_off, pinfo, t);
  if (pd_off < offset + (int)ESOCK_MPA_FRAME_HDR + pd_len)
    proto_tree_add_item(t, hf_pd, tvb, pd_off, offset + (int)ESOCK_MPA_FRAME_HDR + pd_len - pd_off,
                        ENC_NA);

  col_append_sep_str(pinfo->cinfo, COL_INFO, " ",
                     val_to_str_const((guint32)type, frame_type_vals, "?"));
  col_append_fstr(pinfo->cinfo, COL_INFO, " rev %u%s%s", rev, (flags & 0x80) ? " M" : "",
                  (flags & 0x40) ? " C" : "");
  if (rev == 2 && pd_len >= 4)
    col_append_fstr(pinfo->cinfo, COL_INFO, " IRD %u ORD %u%s", ird_word & 0x3fff,
                    ord_word & 0x3fff, (ird_word & 0x8000) ? " P2P" : "");
  if (type == FRAME_REJECT) expert_add_info(pinfo, ti, &ei_reject);

  /* The stream of this direction starts right after its frame (RFC 5044 section 5). */
  c->flow[dir].frame_done = TRUE;
  c->flow[dir].base_seq = seq + (guint32)(ESOCK_MPA_FRAME_HDR + pd_len) + (guint32)offset;
  if (request) {
    c->have_request = TRUE;
    c->req_flags = flags;
    c->req_rev = rev;
  } else {
    c->have_reply = TRUE;
    c->rep_flags = flags;
    c->rep_rev = rev;
    c->rejected = type == FRAME_REJECT;
    c->p2p = rev == 2 && pd_len >= 4 && (ird_word & 0x8000);
    if (!c->rejected) {
      proto_tree* n;
      gboolean crc = (flags & 0x40) || (c->have_request && (c->req_flags & 0x40));
      /* RFC 5044 section 7.1: M asks the peer to send Markers to the frame's sender;
       * CRC is in use in both directions when negotiated. */
      fi->markers = (flags & 0x80) != 0;
      fr->markers = c->have_request && (c->req_flags & 0x80);
      fi->crc = fr->crc = crc;
      fi->synced = c->have_request;
      fr->synced = TRUE;
      fi->rtr_pending = c->p2p;
      ti = proto_tree_add_item(t, hf_neg, tvb, offset, 0, ENC_NA);
      proto_item_set_generated(ti);
      n = proto_item_add_subtree(ti, ett_neg);
      ti = proto_tree_add_boolean(n, hf_neg_markers_i2r, tvb, offset, 0, fi->markers);
      proto_item_set_generated(ti);
      ti = proto_tree_add_boolean(n, hf_neg_markers_r2i, tvb, offset, 0, fr->markers);
      proto_item_set_generated(ti);
      ti = proto_tree_add_boolean(n, hf_neg_crc, tvb, offset, 0, crc);
      proto_item_set_generated(ti);
      ti = proto_tree_add_string(n, hf_neg_rtr, tvb, offset, 0,
                                 rev == 2 && pd_len >= 4 ? rtr_name(ird_word, ord_word) : "none");
      proto_item_set_generated(ti);
    }
  }
  return (int)ESOCK_MPA_FRAME_HDR + pd_len;
}

void esock_frame_register(int proto) {
  static hf_register_info hf[] = {
      {&hf_frame_type,
       {"MPA frame", "esock_mpa.frame", FT_UINT8, BASE_DEC, VALS(frame_type_vals), 0x0,
        "1 Request, 2 Reply, 3 Reject", HFILL}},
      {&hf_key, {"Key", "esock_mpa.key", FT_STRING, BASE_NONE, NULL, 0x0, NULL, HFILL}},
      {&hf_flags, {"Flags", "esock_mpa.flags", FT_UINT8, BASE_HEX, NULL, 0x0, NULL, HFILL}},
      {&hf_flag_m,
       {"Markers (M)", "esock_mpa.flags.m", FT_BOOLEAN, 8, NULL, 0x80,
        "The sender wants to receive Markers", HFILL}},
      {&hf_flag_c, {"CRC (C)", "esock_mpa.flags.c", FT_BOOLEAN, 8, NULL, 0x40, NULL, HFILL}},
      {&hf_flag_r, {"Reject (R)", "esock_mpa.flags.r", FT_BOOLEAN, 8, NULL, 0x20, NULL, HFILL}},
      {&hf_flag_enh,
       {"Enhanced (Linux siw/cxgb4 revision 2 bit)", "esock_mpa.flags.enhanced", FT_BOOLEAN, 8,
        NULL, 0x10, "Private data starts with the RFC 6581 IRD/ORD block", HFILL}},
      {&hf_flag_res,
       {"Reserved", "esock_mpa.flags.reserved", FT_UINT8, BASE_HEX, NULL, 0x0f, NULL, HFILL}},
      {&hf_rev, {"Revision", "esock_mpa.rev", FT_UINT8, BASE_DEC, NULL, 0x0, NULL, HFILL}},
      {&hf_pd_len,
       {"Private data length", "esock_mpa.pd_length", FT_UINT16, BASE_DEC, NULL, 0x0, NULL, HFILL}},
      {&hf_v2_ird_word,
       {"Enhanced connection establishment", "esock_mpa.v2", FT_NONE, BASE_NONE, NULL, 0x0,
        "RFC 6581 IRD/ORD block", HFILL}},
      {&hf_v2_p2p,
       {"Peer-to-peer (P)", "esock_mpa.v2.p2p", FT_BOOLEAN, 16, NULL, 0x8000, NULL, HFILL}},
      {&hf_v2_rtr_send,
       {"RTR: zero-length Send (L)", "esock_mpa.v2.rtr_send", FT_BOOLEAN, 16, NULL, 0x4000, NULL,
        HFILL}},
      {&hf_v2_ird,
       {"IRD", "esock_mpa.v2.ird", FT_UINT16, BASE_DEC, NULL, 0x3fff,
        "Inbound RDMA Read queue depth", HFILL}},
      {&hf_v2_ord_word,
       {"ORD word", "esock_mpa.v2.ord_word", FT_UINT16, BASE_HEX, NULL, 0x0, NULL, HFILL}},
      {&hf_v2_rtr_write,
       {"RTR: zero-length RDMA Write (W)", "esock_mpa.v2.rtr_write", FT_BOOLEAN, 16, NULL, 0x8000,
        NULL, HFILL}},
      {&hf_v2_rtr_read,
       {"RTR: zero-length RDMA Read (R)", "esock_mpa.v2.rtr_read", FT_BOOLEAN, 16, NULL, 0x4000,
        NULL, HFILL}},
      {&hf_v2_ord,
       {"ORD", "esock_mpa.v2.ord", FT_UINT16, BASE_DEC, NULL, 0x3fff,
        "Outbound RDMA Read queue depth", HFILL}},
      {&hf_pd,
       {"Private data", "esock_mpa.private_data", FT_BYTES, BASE_NONE, NULL, 0x0,
        "ULP private data after the RFC 6581 block", HFILL}},
      {&hf_neg,
       {"Negotiated", "esock_mpa.negotiated", FT_NONE, BASE_NONE, NULL, 0x0,
        "What this Request/Reply exchange settled", HFILL}},
      {&hf_neg_markers_i2r,
       {"Markers initiator to responder", "esock_mpa.negotiated.markers_i2r", FT_BOOLEAN, BASE_NONE,
        NULL, 0x0, NULL, HFILL}},
      {&hf_neg_markers_r2i,
       {"Markers responder to initiator", "esock_mpa.negotiated.markers_r2i", FT_BOOLEAN, BASE_NONE,
        NULL, 0x0, NULL, HFILL}},
      {&hf_neg_crc,
       {"CRC", "esock_mpa.negotiated.crc", FT_BOOLEAN, BASE_NONE, NULL, 0x0, NULL, HFILL}},
      {&hf_neg_rtr,
       {"RTR message", "esock_mpa.negotiated.rtr", FT_STRING, BASE_NONE, NULL, 0x0,
        "RFC 6581 RTR the responder chose", HFILL}},
  };
  static gint* ett[] = {&ett_frame, &ett_flags, &ett_v2, &ett_neg};
  static ei_register_info ei[] = {
      {&ei_bad_rev,
       {"esock_mpa.bad_revision", PI_PROTOCOL, PI_ERROR, "MPA revision other than 1 or 2",
        EXPFILL}},
      {&ei_pd_too_long,
       {"esock_mpa.pd_too_long", PI_MALFORMED, PI_ERROR,
        "PD_Length larger than 512 (RFC 5044 section 7.1)", EXPFILL}},
      {&ei_v2_missing,
       {"esock_mpa.v2_missing", PI_PROTOCOL, PI_WARN,
        "Revision 2 frame without the RFC 6581 IRD/ORD block", EXPFILL}},
      {&ei_reject,
       {"esock_mpa.rejected", PI_SEQUENCE, PI_WARN, "Connection rejected by the responder (R bit)",
        EXPFILL}},
      {&ei_reject_in_request,
       {"esock_mpa.reject_in_request", PI_PROTOCOL, PI_WARN, "R bit set in a Request", EXPFILL}},
      {&ei_rtr_choice,
       {"esock_mpa.rtr_choice", PI_PROTOCOL, PI_WARN,
        "Peer-to-peer Reply must choose exactly one RTR type (RFC 6581)", EXPFILL}},
  };
  expert_module_t* em;

  proto_register_field_array(proto, hf, array_length(hf));
  proto_register_subtree_array(ett, array_length(ett));
  em = expert_register_protocol(proto);
  expert_register_field_array(em, ei, array_length(ei));
}
