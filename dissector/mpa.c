/* esock Wireshark plugin: protocol registration, per-connection state and the TCP entry
 * points (a heuristic that claims MPA connections, then a conversation dissector).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <ws_version.h>

#include <epan/dissectors/packet-tcp.h>
#include <epan/proto_data.h>

#include "esock_mpa.h"

int proto_esock_mpa = -1;
static gint ett_esock_mpa = -1;
static int hf_direction = -1;
static int hf_unsynced = -1;
static dissector_handle_t esock_mpa_handle;

static const value_string direction_vals[] = {
    {0, "Initiator to Responder"}, {1, "Responder to Initiator"}, {0, NULL}};

esock_conv_t* esock_conv_get(packet_info* pinfo, gboolean create) {
  conversation_t* conv = find_or_create_conversation(pinfo);
  esock_conv_t* c = (esock_conv_t*)conversation_get_proto_data(conv, proto_esock_mpa);
  if (c || !create) return c;
  c = wmem_new0(wmem_file_scope(), esock_conv_t);
  copy_address_wmem(wmem_file_scope(), &c->addr[0], &pinfo->src);
  copy_address_wmem(wmem_file_scope(), &c->addr[1], &pinfo->dst);
  c->port[0] = pinfo->srcport;
  c->port[1] = pinfo->destport;
  for (int i = 0; i < 2; i++) {
    c->reads[i] = wmem_list_new(wmem_file_scope());
    c->regions[i] = wmem_list_new(wmem_file_scope());
    c->atomics[i] = wmem_list_new(wmem_file_scope());
  }
  conversation_add_proto_data(conv, proto_esock_mpa, c);
  /* From now on TCP hands this connection straight to us, ahead of any heuristic
   * (including the built-in iwarp_mpa one). */
  conversation_set_dissector(conv, esock_mpa_handle);
  return c;
}

int esock_flow_index(const esock_conv_t* c, const packet_info* pinfo) {
  return (pinfo->srcport == c->port[0] && addresses_equal(&pinfo->src, &c->addr[0])) ? 0 : 1;
}

void esock_add_region(esock_conv_t* c, int dir, guint32 stag, guint64 to, guint64 len,
                      guint32 frame, const char* by) {
  esock_region_t* r = wmem_new0(wmem_file_scope(), esock_region_t);
  r->stag = stag;
  r->to = to;
  r->len = len;
  r->frame = frame;
  r->by = by;
  wmem_list_append(c->regions[dir], r);
}

/* One TCP segment (or reassembled run of segments) of a connection we own. */
static int dissect_esock_mpa(tvbuff_t* tvb, packet_info* pinfo, proto_tree* tree, void* data) {
  struct tcpinfo* tcpinfo = (struct tcpinfo*)data;
  esock_conv_t* c;
  esock_flow_t* f;
  proto_item* ti;
  proto_tree* t;
  int dir, offset = 0, n;
  guint32 seq;
  esock_flow_t local;

  if (!tcpinfo) return 0;
  c = esock_conv_get(pinfo, TRUE);
  dir = esock_flow_index(c, pinfo);
  f = &c->flow[dir];
  seq = tcpinfo->seq;
  /* A capture that starts with the Reply: its sender is the responder, index 1. */
  if (!c->have_request && !c->have_reply && !c->flow[0].frame_done && !c->flow[0].synced &&
      !c->flow[1].frame_done && !c->flow[1].synced && esock_is_mpa_key(tvb, 0) &&
      tvb_get_guint8(tvb, 9) == 'p' && dir == 0) {
    address a = c->addr[0];
    guint32 p = c->port[0];
    c->addr[0] = c->addr[1];
    c->port[0] = c->port[1];
    c->addr[1] = a;
    c->port[1] = p;
    dir = 1;
    f = &c->flow[dir];
  }

  col_set_str(pinfo->cinfo, COL_PROTOCOL, "esock MPA");
  ti = proto_tree_add_item(tree, proto_esock_mpa, tvb, 0, -1, ENC_NA);
  t = proto_item_add_subtree(ti, ett_esock_mpa);
  ti = proto_tree_add_uint(t, hf_direction, tvb, 0, 0, (guint32)dir);
  proto_item_set_generated(ti);

  /* The first pass moves the flow state along; later passes (GUI, tshark -2) start each
   * segment from the state saved for it. */
  if (!PINFO_FD_VISITED(pinfo)) {
    esock_flow_t* snap = wmem_new(wmem_file_scope(), esock_flow_t);
    *snap = *f;
    p_add_proto_data(wmem_file_scope(), pinfo, proto_esock_mpa, seq, snap);
  } else {
    esock_flow_t* snap =
        (esock_flow_t*)p_get_proto_data(wmem_file_scope(), pinfo, proto_esock_mpa, seq);
    if (snap) {
      local = *snap;
      f = &local;
    }
  }

  if (!f->frame_done && !f->synced) {
    n = esock_dissect_mpa_frame(tvb, offset, pinfo, t, c, dir, seq);
    if (n < 0) {
      pinfo->desegment_offset = offset;
      pinfo->desegment_len = (guint32)-n;
      return tvb_captured_length(tvb);
    }
    if (n > 0) {
      offset += n;
      if (f == &local) /* the Reply set up both flows in c; take this one's result */
        local = c->flow[dir];
    } else {
      f->frame_done = TRUE; /* mid-stream: no MPA frame in this direction */
    }
  }
  if (!f->synced && tvb_reported_length_remaining(tvb, offset) > 0) {
    n = esock_resync(tvb, offset, pinfo, f, seq);
    if (n < 0) {
      proto_tree_add_item(t, hf_unsynced, tvb, offset, -1, ENC_NA);
      col_append_str(pinfo->cinfo, COL_INFO, " [esock MPA: not synchronised]");
      return tvb_captured_length(tvb);
    }
    if (n > offset) proto_tree_add_item(t, hf_unsynced, tvb, offset, n - offset, ENC_NA);
    offset = n;
  }
  if (tvb_reported_length_remaining(tvb, offset) > 0)
    esock_dissect_fpdus(tvb, offset, pinfo, t, c, dir, f, seq);
  return tvb_captured_length(tvb);
}

/* TCP heuristic: an MPA Request or Reply at the front of a segment, or (mid-stream) an
 * FPDU whose CRC or Markers prove its boundaries. */
static gboolean heur_esock_mpa(tvbuff_t* tvb, packet_info* pinfo, proto_tree* tree, void* data) {
  struct tcpinfo* tcpinfo = (struct tcpinfo*)data;
  esock_flow_t probe;

  if (!tcpinfo) return FALSE;
  if (!esock_is_mpa_key(tvb, 0)) {
    memset(&probe, 0, sizeof probe);
    if (esock_resync(tvb, 0, pinfo, &probe, tcpinfo->seq) < 0) return FALSE;
  }
  dissect_esock_mpa(tvb, pinfo, tree, data);
  return TRUE;
}

static void proto_register_esock_mpa(void) {
  static hf_register_info hf[] = {
      {&hf_direction,
       {"Direction", "esock_mpa.direction", FT_UINT8, BASE_DEC, VALS(direction_vals), 0x0,
        "Which end sent this segment (0: the MPA initiator, or the first sender seen)", HFILL}},
      {&hf_unsynced,
       {"Octets before the first recognised FPDU", "esock_mpa.unsynced", FT_BYTES, BASE_NONE, NULL,
        0x0, "Part of an FPDU that started before the capture did", HFILL}},
  };
  static gint* ett[] = {&ett_esock_mpa};

  proto_esock_mpa = proto_register_protocol("esock iWARP MPA (RFC 5044/6581) with analysis",
                                            "esock MPA", "esock_mpa");
  proto_register_field_array(proto_esock_mpa, hf, array_length(hf));
  proto_register_subtree_array(ett, array_length(ett));
  esock_frame_register(proto_esock_mpa);
  esock_fpdu_register(proto_esock_mpa);
  esock_analysis_register(proto_esock_mpa);
  esock_rfc7306_register(proto_esock_mpa);
  esock_stream_register();
  esock_mpa_handle = register_dissector("esock_mpa", dissect_esock_mpa, proto_esock_mpa);
}

static void proto_reg_handoff_esock_mpa(void) {
  heur_dissector_add("tcp", heur_esock_mpa, "esock MPA over TCP", "esock_mpa_tcp", proto_esock_mpa,
                     HEURISTIC_ENABLE);
  dissector_add_for_decode_as("tcp.port", esock_mpa_handle);
  esock_fpdu_handoff();
  esock_stream_handoff();
}

/* Plugin ABI (Wireshark 4.0): version symbols and the registration hook. */
WS_DLL_PUBLIC_DEF const gchar plugin_version[] = ESOCK_PLUGIN_VERSION; /* the project's release */
WS_DLL_PUBLIC_DEF const int plugin_want_major = WIRESHARK_VERSION_MAJOR;
WS_DLL_PUBLIC_DEF const int plugin_want_minor = WIRESHARK_VERSION_MINOR;
WS_DLL_PUBLIC void plugin_register(void);

void plugin_register(void) {
  static proto_plugin plug;
  plug.register_protoinfo = proto_register_esock_mpa;
  plug.register_handoff = proto_reg_handoff_esock_mpa;
  proto_register_plugin(&plug);
}
