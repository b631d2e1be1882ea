/* esock Wireshark plugin: esock's DDPMODE sockets protocol (credits, data, rendezvous
 * advertisements and completions) carried in RDMAP Send payloads.
 *
 * It hooks into Wireshark's "iwarp_ddp_rdmap" heuristic list, which hands over each
 * (reassembled) Send payload with an rdmap_info_t. The message layout is specified in
 * docs/stream-protocol.md; until this file decodes it, the heuristic claims nothing.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "esock_mpa.h"

#include <epan/dissectors/packet-iwarp-ddp-rdmap.h>

static int proto_esock_stream = -1;

static gboolean heur_esock_stream(tvbuff_t* tvb, packet_info* pinfo, proto_tree* tree, void* data) {
  (void)tvb;
  (void)pinfo;
  (void)tree;
  (void)data;
  return FALSE;
}

void esock_stream_register(void) {
  proto_esock_stream =
      proto_register_protocol("esock DDPMODE stream protocol", "esock stream", "esock_stream");
}

void esock_stream_handoff(void) {
  heur_dissector_add("iwarp_ddp_rdmap", heur_esock_stream, "esock DDPMODE stream protocol",
                     "esock_stream_rdmap", proto_esock_stream, HEURISTIC_ENABLE);
}
