/* esock Wireshark plugin: ESTP, esock's stream protocol for DDPMODE sockets
 * (docs/stream-protocol.md): the Hello in MPA private data, and one ESTP message per RDMAP
 * Send (DATA, CREDIT, SRCAVAIL, RDMADONE, SINKAVAIL, WRITEDONE, SINKCANCEL, FIN).
 *
 * Send payloads come from Wireshark's iwarp_ddp_rdmap through its heuristic list (it
 * reassembles multi-segment Sends first and passes an rdmap_info_t); ESTP is recognised by
 * its magic and version. SINKAVAIL advertises a region the peer may RDMA-Write into, which
 * the analysis then checks placements against.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "esock_mpa.h"

#include <epan/dissectors/packet-iwarp-ddp-rdmap.h>

#define ESTP_MAGIC 0x45535450u /* "ESTP" */
#define ESTP_HDR 16

static int proto_esock_stream = -1;
static gint ett_estp = -1;
static int hf_magic = -1, hf_version = -1, hf_type = -1, hf_flags = -1, hf_eom = -1,
           hf_credits = -1, hf_length = -1, hf_stag = -1, hf_to = -1, hf_id = -1, hf_data = -1,
           hf_hello = -1, hf_hflags = -1, hf_msgmode = -1, hf_raw = -1, hf_sink = -1,
           hf_rdmap_ext = -1, hf_reserved = -1, hf_recv_buffers = -1, hf_recv_buffer_size = -1;
static expert_field ei_bad_length = EI_INIT, ei_bad_hello = EI_INIT;

static const value_string type_vals[] = {{1, "DATA"},       {2, "CREDIT"},    {3, "SRCAVAIL"},
                                         {4, "RDMADONE"},   {5, "SINKAVAIL"}, {6, "WRITEDONE"},
                                         {7, "SINKCANCEL"}, {8, "FIN"},       {0, NULL}};

/* Section 3: the Hello at the front of the ULP private data of the Request and Reply. */
int esock_stream_dissect_hello(tvbuff_t* tvb, int offset, int len, packet_info* pinfo,
                               proto_tree* tree) {
  static int* const hflags[] = {&hf_msgmode, &hf_raw, &hf_sink, &hf_rdmap_ext, NULL};
  proto_item* ti;
  proto_tree* t;
  if (len < ESTP_HDR || tvb_get_ntohl(tvb, offset) != ESTP_MAGIC) return 0;
  ti = proto_tree_add_item(tree, hf_hello, tvb, offset, ESTP_HDR, ENC_NA);
  t = proto_item_add_subtree(ti, ett_estp);
  proto_tree_add_item(t, hf_magic, tvb, offset, 4, ENC_BIG_ENDIAN);
  proto_tree_add_item(t, hf_version, tvb, offset + 4, 1, ENC_NA);
  proto_tree_add_bitmask(t, tvb, offset + 5, hf_hflags, ett_estp, hflags, ENC_NA);
  proto_tree_add_item(t, hf_reserved, tvb, offset + 6, 2, ENC_BIG_ENDIAN);
  proto_tree_add_item(t, hf_recv_buffers, tvb, offset + 8, 4, ENC_BIG_ENDIAN);
  ti = proto_tree_add_item(t, hf_recv_buffer_size, tvb, offset + 12, 4, ENC_BIG_ENDIAN);
  if (tvb_get_guint8(tvb, offset + 4) != 1 || tvb_get_ntohl(tvb, offset + 8) == 0 ||
      tvb_get_ntohl(tvb, offset + 12) < 256)
    expert_add_info(pinfo, ti, &ei_bad_hello);
  col_append_fstr(pinfo->cinfo, COL_INFO, " ESTP Hello R=%u B=%u", tvb_get_ntohl(tvb, offset + 8),
                  tvb_get_ntohl(tvb, offset + 12));
  return ESTP_HDR;
}

static gboolean heur_esock_stream(tvbuff_t* tvb, packet_info* pinfo, proto_tree* tree, void* data) {
  static int* const flags[] = {&hf_eom, NULL};
  rdmap_info_t* info = (rdmap_info_t*)data;
  int len = (int)tvb_reported_length(tvb);
  guint8 type;
  guint32 length;
  proto_item *ti, *lti;
  proto_tree* t;
  gboolean ok;

  if (info && (info->opcode < RDMA_SEND || info->opcode > RDMA_SEND_SE_INVALIDATE)) return FALSE;
  if (tvb_captured_length(tvb) < ESTP_HDR || tvb_get_ntohl(tvb, 0) != ESTP_MAGIC ||
      tvb_get_guint8(tvb, 4) != 1)
    return FALSE;
  type = tvb_get_guint8(tvb, 5);
  length = tvb_get_ntohl(tvb, 12);

  col_set_str(pinfo->cinfo, COL_PROTOCOL, "ESTP");
  col_append_fstr(pinfo->cinfo, COL_INFO, " ESTP %s", val_to_str(type, type_vals, "type %u"));
  ti = proto_tree_add_item(tree, proto_esock_stream, tvb, 0, -1, ENC_NA);
  proto_item_append_text(ti, ", %s", val_to_str(type, type_vals, "type %u"));
  t = proto_item_add_subtree(ti, ett_estp);
  proto_tree_add_item(t, hf_magic, tvb, 0, 4, ENC_BIG_ENDIAN);
  proto_tree_add_item(t, hf_version, tvb, 4, 1, ENC_NA);
  proto_tree_add_item(t, hf_type, tvb, 5, 1, ENC_NA);
  proto_tree_add_bitmask(t, tvb, 6, hf_flags, ett_estp, flags, ENC_BIG_ENDIAN);
  proto_tree_add_item(t, hf_credits, tvb, 8, 4, ENC_BIG_ENDIAN);
  lti = proto_tree_add_item(t, hf_length, tvb, 12, 4, ENC_BIG_ENDIAN);

  /* Section 5: the length field must agree with the message size. */
  switch (type) {
    case 1:
      ok = length == (guint32)(len - ESTP_HDR);
      if (len > ESTP_HDR) proto_tree_add_item(t, hf_data, tvb, ESTP_HDR, -1, ENC_NA);
      break;
    case 3:
    case 5:
      ok = len == 32;
      if (len >= 32) {
        guint32 stag = tvb_get_ntohl(tvb, 16);
        guint64 to = tvb_get_ntoh64(tvb, 20);
        proto_tree_add_item(t, hf_stag, tvb, 16, 4, ENC_BIG_ENDIAN);
        proto_tree_add_item(t, hf_to, tvb, 20, 8, ENC_BIG_ENDIAN);
        proto_tree_add_item(t, hf_id, tvb, 28, 4, ENC_BIG_ENDIAN);
        col_append_fstr(pinfo->cinfo, COL_INFO, " %u octets STag 0x%08x", length, stag);
        /* Section 6.2: the peer may RDMA-Write up to `length` octets into this sink. */
        if (type == 5 && !PINFO_FD_VISITED(pinfo)) {
          esock_conv_t* c = esock_conv_get(pinfo, FALSE);
          if (c)
            esock_add_region(c, !esock_flow_index(c, pinfo), stag, to, length, pinfo->num,
                             "ESTP SINKAVAIL");
        }
      }
      break;
    case 4:
    case 6:
    case 7:
      ok = len == 20 && (type != 7 || length == 0);
      if (len >= 20) proto_tree_add_item(t, hf_id, tvb, 16, 4, ENC_BIG_ENDIAN);
      break;
    case 2:
    case 8:
      ok = len == ESTP_HDR && length == 0;
      break;
    default:
      ok = FALSE;
  }
  if (!ok) expert_add_info(pinfo, lti, &ei_bad_length);
  return TRUE;
}

void esock_stream_register(void) {
  static hf_register_info hf[] = {
      {&hf_magic,
       {"Magic", "esock_stream.magic", FT_UINT32, BASE_HEX, NULL, 0x0, "\"ESTP\"", HFILL}},
      {&hf_version,
       {"Version", "esock_stream.version", FT_UINT8, BASE_DEC, NULL, 0x0, NULL, HFILL}},
      {&hf_type,
       {"Type", "esock_stream.type", FT_UINT8, BASE_HEX, VALS(type_vals), 0x0, NULL, HFILL}},
      {&hf_flags, {"Flags", "esock_stream.flags", FT_UINT16, BASE_HEX, NULL, 0x0, NULL, HFILL}},
      {&hf_eom,
       {"End of message (EOM)", "esock_stream.flags.eom", FT_BOOLEAN, 16, NULL, 0x0001, NULL,
        HFILL}},
      {&hf_credits,
       {"Credits", "esock_stream.credits", FT_UINT32, BASE_DEC, NULL, 0x0,
        "Receive buffers re-posted since the previous grant", HFILL}},
      {&hf_length, {"Length", "esock_stream.length", FT_UINT32, BASE_DEC, NULL, 0x0, NULL, HFILL}},
      {&hf_stag, {"STag", "esock_stream.stag", FT_UINT32, BASE_HEX, NULL, 0x0, NULL, HFILL}},
      {&hf_to, {"Tagged offset", "esock_stream.to", FT_UINT64, BASE_HEX, NULL, 0x0, NULL, HFILL}},
      {&hf_id, {"Rendezvous id", "esock_stream.id", FT_UINT32, BASE_DEC, NULL, 0x0, NULL, HFILL}},
      {&hf_data, {"Data", "esock_stream.data", FT_BYTES, BASE_NONE, NULL, 0x0, NULL, HFILL}},
      {&hf_hello, {"ESTP Hello", "esock_stream.hello", FT_NONE, BASE_NONE, NULL, 0x0, NULL, HFILL}},
      {&hf_hflags,
       {"Hello flags", "esock_stream.hello.flags", FT_UINT8, BASE_HEX, NULL, 0x0, NULL, HFILL}},
      {&hf_msgmode,
       {"MSGMODE", "esock_stream.hello.msgmode", FT_BOOLEAN, 8, NULL, 0x01, NULL, HFILL}},
      {&hf_raw, {"RAW", "esock_stream.hello.raw", FT_BOOLEAN, 8, NULL, 0x02, NULL, HFILL}},
      /* Section 3 bit 3: RFC 7306's messages offered (RAWMODE; used when both ends set it). */
      {&hf_rdmap_ext,
       {"RDMAP_EXT (takes RFC 7306 atomics and Immediate Data)", "esock_stream.hello.rdmap_ext",
        FT_BOOLEAN, 8, NULL, 0x08, NULL, HFILL}},
      {&hf_sink,
       {"SINK (writes into sinks)", "esock_stream.hello.sink", FT_BOOLEAN, 8, NULL, 0x04, NULL,
        HFILL}},
      {&hf_reserved,
       {"Reserved", "esock_stream.hello.reserved", FT_UINT16, BASE_HEX, NULL, 0x0, NULL, HFILL}},
      {&hf_recv_buffers,
       {"Receive buffers (R)", "esock_stream.hello.recv_buffers", FT_UINT32, BASE_DEC, NULL, 0x0,
        NULL, HFILL}},
      {&hf_recv_buffer_size,
       {"Receive buffer size (B)", "esock_stream.hello.recv_buffer_size", FT_UINT32, BASE_DEC, NULL,
        0x0, NULL, HFILL}},
  };
  static gint* ett[] = {&ett_estp};
  static ei_register_info ei[] = {
      {&ei_bad_length,
       {"esock_stream.bad_length", PI_PROTOCOL, PI_WARN,
        "ESTP length inconsistent with the message (a protocol error, section 4)", EXPFILL}},
      {&ei_bad_hello,
       {"esock_stream.bad_hello", PI_PROTOCOL, PI_WARN, "Unusable ESTP Hello (section 3)",
        EXPFILL}},
  };
  expert_module_t* em;
  proto_esock_stream =
      proto_register_protocol("esock stream protocol (ESTP)", "ESTP", "esock_stream");
  proto_register_field_array(proto_esock_stream, hf, array_length(hf));
  proto_register_subtree_array(ett, array_length(ett));
  em = expert_register_protocol(proto_esock_stream);
  expert_register_field_array(em, ei, array_length(ei));
}

void esock_stream_handoff(void) {
  heur_dissector_add("iwarp_ddp_rdmap", heur_esock_stream, "esock stream protocol (ESTP)",
                     "esock_stream_rdmap", proto_esock_stream, HEURISTIC_ENABLE);
}
