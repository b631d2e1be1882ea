/* esock Wireshark plugin: FPDUs (RFC 5044 sections 4 and 5) with Markers at any stream
 * position, CRC32c verification, and resynchronisation when the capture starts
 * mid-stream. The marker-free ULPDU goes to Wireshark's own iwarp_ddp_rdmap dissector.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <string.h>

#include "esock_mpa.h"

static dissector_handle_t ddp_rdmap_handle;
static gint ett_fpdu = -1, ett_marker = -1;
static int hf_fpdu = -1, hf_stream_pos = -1, hf_fpdu_len = -1, hf_marker = -1, hf_marker_res = -1,
           hf_marker_ptr = -1, hf_marker_pos = -1, hf_ulpdu_len = -1, hf_pad = -1, hf_crc = -1,
           hf_crc_status = -1, hf_resynced = -1, hf_incomplete = -1;
static expert_field ei_crc_bad = EI_INIT, ei_marker_bad = EI_INIT, ei_resynced = EI_INIT,
                    ei_incomplete = EI_INIT;

/* CRC32c (Castagnoli, reflected, RFC 3720 section 12.1 as RFC 5044 section 4.4 uses it):
 * the finished value; chain with crc = previous result. */
guint32 esock_crc32c(const guint8* p, size_t n, guint32 crc) {
  static guint32 table[256];
  static gboolean ready;
  if (!ready) {
    for (guint32 i = 0; i < 256; i++) {
      guint32 r = i;
      for (int k = 0; k < 8; k++) r = (r >> 1) ^ ((r & 1) ? 0x82f63b78u : 0);
      table[i] = r;
    }
    ready = TRUE;
  }
  crc = ~crc;
  while (n--) crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return ~crc;
}

/* Octets of an FPDU without Markers: length field, ULPDU, pad to 4, CRC (RFC 5044 4.1). */
static guint32 unmarked_len(guint32 ulen) {
  return ((2 + ulen + 3) & ~3u) + ESOCK_CRC_LEN;
}
static guint32 to_next_marker(guint32 pos) {
  return (ESOCK_MARKER_INTERVAL - pos % ESOCK_MARKER_INTERVAL) % ESOCK_MARKER_INTERVAL;
}
/* Markers inside an FPDU of `unmarked` octets at stream position pos, counting one due at
 * pos (it precedes the ULPDU_Length) and not one due right after the FPDU. */
static guint32 markers_in(guint32 pos, guint32 unmarked) {
  guint32 d = to_next_marker(pos);
  if (unmarked <= d) return 0;
  return (unmarked - d - 1) / (ESOCK_MARKER_INTERVAL - ESOCK_MARKER_LEN) + 1;
}

/* What check_fpdu found out about the FPDU at an offset. */
typedef struct fpdu_shape {
  guint32 total; /* octets on the wire */
  guint32 lead;  /* 4 when a Marker precedes the ULPDU_Length */
  guint32 ulen;
  guint32 nmarkers;
  guint8* unmarked; /* ULPDU_Length..CRC without Markers (pinfo->pool) */
  gboolean markers_ok, crc_good, crc_zero, plausible;
} fpdu_shape_t;

/* RFC 5041 section 4 / RFC 5040 section 4: DDP version 1, RDMAP version 1, reserved bits
 * zero, an opcode that fits the buffer model, and a header that fits the ULPDU. RFC 7306
 * section 4.1 adds untagged opcodes 8-11, each on its own queue, so that a capture cut
 * mid-stream still finds FPDUs of them; 12-15 stay unassigned. */
static gboolean ddp_plausible(const guint8* u, guint32 ulen) {
  guint8 op;
  if (ulen < 14 || (u[0] & 0x3f) != 0x01 || (u[1] & 0xf0) != 0x40) return FALSE;
  op = u[1] & 0x0f;
  if (u[0] & 0x80) return op == 0 || op == 2;
  if (ulen < 18 || u[6] != 0 || u[7] != 0 || u[8] != 0) return FALSE;
  switch (op) {
    case 1:
    case 3:
    case 4:
    case 5:
    case 6:
    case 7:
      return u[9] <= 2;
    case 8: /* Immediate Data (with SE): the Send queue, RFC 7306 section 6.2 */
    case 9:
      return u[9] == 0;
    case 10: /* Atomic Request: the Read Request queue, section 5.2.1 */
      return u[9] == 1;
    case 11: /* Atomic Response: QN 3, section 5.2.2 */
      return u[9] == 3;
    default:
      return FALSE;
  }
}

/* Lays out the FPDU at `offset` (stream position pos). FALSE if it is not all there. */
static gboolean shape_fpdu(tvbuff_t* tvb, int offset, packet_info* pinfo, guint32 pos,
                           gboolean markers, fpdu_shape_t* s) {
  int avail = tvb_captured_length_remaining(tvb, offset);
  guint32 unmarked, d, w = 0, u = 0;

  memset(s, 0, sizeof *s);
  s->lead = (markers && pos % ESOCK_MARKER_INTERVAL == 0) ? ESOCK_MARKER_LEN : 0;
  if (avail < (int)s->lead + 2) return FALSE;
  s->ulen = tvb_get_ntohs(tvb, offset + (int)s->lead);
  unmarked = unmarked_len(s->ulen);
  s->nmarkers = markers ? markers_in(pos, unmarked) : 0;
  s->total = unmarked + ESOCK_MARKER_LEN * s->nmarkers;
  if ((guint32)avail < s->total) return FALSE;
  s->unmarked = (guint8*)wmem_alloc(pinfo->pool, unmarked);
  s->markers_ok = TRUE;
  d = markers ? to_next_marker(pos) : s->total;
  /* Copy around the Markers; each FPDUPTR must point back at the ULPDU_Length (0 for a
   * Marker right before it), RFC 5044 section 5. */
  while (w < s->total) {
    if (markers && w == d && w + ESOCK_MARKER_LEN <= s->total - ESOCK_CRC_LEN) {
      guint16 ptr = tvb_get_ntohs(tvb, offset + (int)w + 2);
      if (tvb_get_ntohs(tvb, offset + (int)w) != 0 || ptr != (w == 0 ? 0 : w - s->lead))
        s->markers_ok = FALSE;
      w += ESOCK_MARKER_LEN;
      d += ESOCK_MARKER_INTERVAL;
      continue;
    }
    {
      guint32 chunk = (markers && d > w) ? d - w : s->total - w;
      if (chunk > s->total - w) chunk = s->total - w;
      tvb_memcpy(tvb, s->unmarked + u, offset + (int)w, chunk);
      u += chunk;
      w += chunk;
    }
  }
  {
    guint32 wire = tvb_get_letohl(tvb, offset + (int)s->total - 4);
    guint32 calc = esock_crc32c(tvb_get_ptr(tvb, offset, (int)s->total - 4), s->total - 4, 0);
    s->crc_good = wire == calc;
    s->crc_zero = wire == 0;
  }
  s->plausible = ddp_plausible(s->unmarked + 2, s->ulen);
  return TRUE;
}

int esock_resync(tvbuff_t* tvb, int off0, packet_info* pinfo, esock_flow_t* f, guint32 seq) {
  int end = (int)tvb_captured_length(tvb), i, limit;
  fpdu_shape_t s;

  /* A Marker names its FPDU's header and fixes the Marker phase: every 512th octet. Two
   * intervals hold at least one Marker of any stream that has them. */
  limit = off0 + 2 * (int)ESOCK_MARKER_INTERVAL + 4;
  for (i = off0; i + 4 <= end && i < limit; i++) {
    guint16 ptr;
    int start;
    guint32 base, pos;
    if (tvb_get_ntohs(tvb, i) != 0) continue;
    ptr = tvb_get_ntohs(tvb, i + 2);
    if (ptr & 3) continue;
    if (ptr == 0) {
      start = i;
    } else {
      if ((int)ptr > i - off0) continue;
      start = i - ptr;
    }
    base = seq + (guint32)i;
    pos = seq + (guint32)start - base;
    if (ptr != 0 && pos % ESOCK_MARKER_INTERVAL == 0)
      continue; /* would need a Marker right before its header: not this one's FPDU */
    if (!shape_fpdu(tvb, start, pinfo, pos, TRUE, &s) || !s.markers_ok || s.nmarkers == 0 ||
        !s.plausible || !(s.crc_good || s.crc_zero))
      continue;
    f->markers = TRUE;
    f->crc = s.crc_good;
    f->base_seq = base;
    f->synced = f->resynced = f->frame_done = TRUE;
    f->tentative = FALSE;
    f->sync_frame = pinfo->num;
    return start;
  }
  /* No Marker: an FPDU at the front whose CRC holds (or, CRC off, FPDUs that tile the
   * segment exactly) is taken as "no Markers" until an FPDU disagrees. */
  if (shape_fpdu(tvb, off0, pinfo, 0, FALSE, &s) && s.plausible && (s.crc_good || s.crc_zero)) {
    if (!s.crc_good) {
      int o = off0 + (int)s.total;
      while (o < end && shape_fpdu(tvb, o, pinfo, 0, FALSE, &s) && s.plausible && s.crc_zero)
        o += (int)s.total;
      if (o != end) return -1;
    }
    f->markers = FALSE;
    f->crc = s.crc_good;
    f->base_seq = seq + (guint32)off0;
    f->synced = f->resynced = f->frame_done = TRUE;
    f->tentative = TRUE;
    f->sync_frame = pinfo->num;
    return off0;
  }
  return -1;
}

static void dissect_one(tvbuff_t* tvb, int offset, packet_info* pinfo, proto_tree* tree,
                        esock_conv_t* c, int dir, esock_flow_t* f, guint32 pos,
                        const fpdu_shape_t* s) {
  proto_item* ti;
  proto_tree* t;
  tvbuff_t* ulpdu;
  guint32 d = to_next_marker(pos), pad = unmarked_len(s->ulen) - 6 - s->ulen, j;
  gboolean marker_in_ulpdu = FALSE;

  ti = proto_tree_add_item(tree, hf_fpdu, tvb, offset, (int)s->total, ENC_NA);
  proto_item_append_text(ti, ", ULPDU %u octets%s", s->ulen, s->nmarkers ? ", with Markers" : "");
  t = proto_item_add_subtree(ti, ett_fpdu);
  ti = proto_tree_add_uint(t, hf_stream_pos, tvb, offset, 0, pos);
  proto_item_set_generated(ti);
  ti = proto_tree_add_uint(t, hf_fpdu_len, tvb, offset, 0, s->total);
  proto_item_set_generated(ti);
  if (f->resynced) {
    ti = proto_tree_add_uint(t, hf_resynced, tvb, offset, 0, f->sync_frame);
    proto_item_set_generated(ti);
    if (f->sync_frame == pinfo->num) expert_add_info(pinfo, ti, &ei_resynced);
  }
  for (j = 0; j < s->nmarkers; j++) {
    guint32 mo = d + j * ESOCK_MARKER_INTERVAL;
    proto_tree* mt;
    guint16 ptr = tvb_get_ntohs(tvb, offset + (int)mo + 2);
    if (mo > s->lead && mo < s->lead + 2 + s->ulen) marker_in_ulpdu = TRUE;
    ti = proto_tree_add_item(t, hf_marker, tvb, offset + (int)mo, 4, ENC_NA);
    mt = proto_item_add_subtree(ti, ett_marker);
    proto_tree_add_item(mt, hf_marker_res, tvb, offset + (int)mo, 2, ENC_BIG_ENDIAN);
    ti = proto_tree_add_item(mt, hf_marker_ptr, tvb, offset + (int)mo + 2, 2, ENC_BIG_ENDIAN);
    if (ptr != (mo == 0 ? 0 : mo - s->lead) || tvb_get_ntohs(tvb, offset + (int)mo) != 0)
      expert_add_info_format(pinfo, ti, &ei_marker_bad,
                             "Marker FPDUPTR %u does not point at this FPDU's header (expected %u)",
                             ptr, mo == 0 ? 0 : mo - s->lead);
    ti = proto_tree_add_uint(mt, hf_marker_pos, tvb, offset + (int)mo, 4, pos + mo);
    proto_item_set_generated(ti);
  }
  proto_tree_add_item(t, hf_ulpdu_len, tvb, offset + (int)s->lead, 2, ENC_BIG_ENDIAN);
  if (pad) {
    int pad_off = offset + (int)s->total - 4 - (int)pad;
    if (s->nmarkers && d + (s->nmarkers - 1) * ESOCK_MARKER_INTERVAL == s->total - 8) pad_off -= 4;
    proto_tree_add_item(t, hf_pad, tvb, pad_off, (int)pad, ENC_NA);
  }
  if (f->crc) {
    guint32 calc = esock_crc32c(tvb_get_ptr(tvb, offset, (int)s->total - 4), s->total - 4, 0);
    proto_tree_add_checksum(t, tvb, offset + (int)s->total - 4, hf_crc, hf_crc_status, &ei_crc_bad,
                            pinfo, calc, ENC_LITTLE_ENDIAN, PROTO_CHECKSUM_VERIFY);
    if (!s->crc_good) col_append_str(pinfo->cinfo, COL_INFO, " [esock MPA: bad CRC]");
  } else {
    proto_tree_add_checksum(t, tvb, offset + (int)s->total - 4, hf_crc, hf_crc_status, NULL, pinfo,
                            0, ENC_LITTLE_ENDIAN, PROTO_CHECKSUM_NO_FLAGS);
  }

  if (marker_in_ulpdu) {
    ulpdu = tvb_new_child_real_data(tvb, s->unmarked + 2, s->ulen, (gint)s->ulen);
    add_new_data_source(pinfo, ulpdu, "ULPDU (Markers removed)");
  } else {
    ulpdu = tvb_new_subset_length(tvb, offset + (int)s->lead + 2, (gint)s->ulen);
  }
  esock_analyse_ulpdu(ulpdu, pinfo, t, c, dir, pos);
  if (ddp_rdmap_handle && s->ulen > 0) {
    call_dissector(ddp_rdmap_handle, ulpdu, pinfo, t);
    esock_rfc7306_info(ulpdu, pinfo); /* after it: iwarp_ddp_rdmap rewrites the Info column */
  }
}

int esock_dissect_fpdus(tvbuff_t* tvb, int offset, packet_info* pinfo, proto_tree* tree,
                        esock_conv_t* c, int dir, esock_flow_t* f, guint32 seq) {
  fpdu_shape_t s;
  while (tvb_reported_length_remaining(tvb, offset) > 0) {
    guint32 pos = seq + (guint32)offset - f->base_seq;
    if (!shape_fpdu(tvb, offset, pinfo, pos, f->markers, &s)) {
      int need =
          (s.total ? (int)s.total : (int)s.lead + 2) - tvb_captured_length_remaining(tvb, offset);
      if (pinfo->can_desegment) {
        pinfo->desegment_offset = offset;
        pinfo->desegment_len = (guint32)need;
        return offset;
      }
      expert_add_info(pinfo, proto_tree_add_item(tree, hf_incomplete, tvb, offset, -1, ENC_NA),
                      &ei_incomplete);
      return tvb_captured_length(tvb);
    }
    if (f->tentative && !(s.plausible && (s.crc_good || (!f->crc && s.crc_zero)))) {
      /* The "no Markers" guess failed: find the FPDUs again from here. */
      int n = esock_resync(tvb, offset, pinfo, f, seq);
      if (n < 0) {
        f->synced = FALSE;
        proto_tree_add_item(tree, hf_incomplete, tvb, offset, -1, ENC_NA);
        return tvb_captured_length(tvb);
      }
      offset = n;
      continue;
    }
    dissect_one(tvb, offset, pinfo, tree, c, dir, f, pos, &s);
    offset += (int)s.total;
  }
  return offset;
}

void esock_fpdu_handoff(void) {
  ddp_rdmap_handle = find_dissector("iwarp_ddp_rdmap");
}

void esock_fpdu_register(int proto) {
  static hf_register_info hf[] = {
      {&hf_fpdu, {"FPDU", "esock_mpa.fpdu", FT_NONE, BASE_NONE, NULL, 0x0, NULL, HFILL}},
      {&hf_stream_pos,
       {"Stream position", "esock_mpa.fpdu.stream_pos", FT_UINT32, BASE_DEC, NULL, 0x0,
        "Octets since the end of this direction's MPA frame (mod 2^32)", HFILL}},
      {&hf_fpdu_len,
       {"FPDU length on the wire", "esock_mpa.fpdu.length", FT_UINT32, BASE_DEC, NULL, 0x0,
        "Including Markers, pad and CRC", HFILL}},
      {&hf_marker, {"Marker", "esock_mpa.marker", FT_NONE, BASE_NONE, NULL, 0x0, NULL, HFILL}},
      {&hf_marker_res,
       {"Reserved", "esock_mpa.marker.reserved", FT_UINT16, BASE_HEX, NULL, 0x0, NULL, HFILL}},
      {&hf_marker_ptr,
       {"FPDUPTR", "esock_mpa.marker.fpduptr", FT_UINT16, BASE_DEC, NULL, 0x0,
        "Octets back from the Marker to the FPDU's ULPDU_Length", HFILL}},
      {&hf_marker_pos,
       {"Marker stream position", "esock_mpa.marker.stream_pos", FT_UINT32, BASE_DEC, NULL, 0x0,
        NULL, HFILL}},
      {&hf_ulpdu_len,
       {"ULPDU length", "esock_mpa.ulpdu_length", FT_UINT16, BASE_DEC, NULL, 0x0, NULL, HFILL}},
      {&hf_pad, {"Pad", "esock_mpa.pad", FT_BYTES, BASE_NONE, NULL, 0x0, NULL, HFILL}},
      {&hf_crc,
       {"CRC32c", "esock_mpa.crc", FT_UINT32, BASE_HEX, NULL, 0x0,
        "Shown as the CRC32c value (sent least significant octet first)", HFILL}},
      {&hf_crc_status,
       {"CRC status", "esock_mpa.crc.status", FT_UINT8, BASE_NONE, VALS(proto_checksum_vals), 0x0,
        NULL, HFILL}},
      {&hf_resynced,
       {"Synchronised mid-stream in frame", "esock_mpa.resync_frame", FT_FRAMENUM, BASE_NONE, NULL,
        0x0, "No MPA frame in the capture: FPDU boundaries found from a Marker or a CRC", HFILL}},
      {&hf_incomplete,
       {"Octets the capture does not complete", "esock_mpa.incomplete", FT_BYTES, BASE_NONE, NULL,
        0x0, NULL, HFILL}},
  };
  static gint* ett[] = {&ett_fpdu, &ett_marker};
  static ei_register_info ei[] = {
      {&ei_crc_bad, {"esock_mpa.crc.bad", PI_CHECKSUM, PI_ERROR, "Bad MPA CRC32c", EXPFILL}},
      {&ei_marker_bad, {"esock_mpa.marker.bad", PI_PROTOCOL, PI_WARN, "Bad Marker", EXPFILL}},
      {&ei_resynced,
       {"esock_mpa.resync", PI_SEQUENCE, PI_NOTE,
        "FPDU boundaries found mid-stream (no MPA Request/Reply in the capture)", EXPFILL}},
      {&ei_incomplete,
       {"esock_mpa.incomplete.expert", PI_MALFORMED, PI_WARN, "FPDU not complete in the capture",
        EXPFILL}},
  };
  expert_module_t* em;
  proto_register_field_array(proto, hf, array_length(hf));
  proto_register_subtree_array(ett, array_length(ett));
  em = expert_register_protocol(proto);
  expert_register_field_array(em, ei, array_length(ei));
}
