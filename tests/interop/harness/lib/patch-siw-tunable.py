#!/usr/bin/env python3
"""Turn a copy of Linux siw (drivers/infiniband/sw/siw, 6.1) into the harness's
"tunable" variant, in place:

* the compile-time knobs in siw_main.c / siw.h become read-only module
  parameters with unchanged defaults (stock siw has no parameters at all);
* a new parameter fix_accept_race (default off = stock behaviour) makes
  siw_accept() attach the socket upcalls (QP data path, or the RTR handler in
  peer-to-peer mode) *before* it transmits the MPA Reply instead of after. Stock
  6.1 leaves a window in which an initiator's first FPDU is queued but never
  read until more bytes arrive (README.md, "accept race").

Works with anchors (identifiers and statement starts), fails loudly if the
source does not look as expected.
  patch-siw-tunable.py DIR
"""
import re
import sys

KNOBS = ["zcopy_tx", "try_gso", "loopback_enabled", "mpa_crc_required",
         "mpa_crc_strict", "siw_tcp_nagle", "peer_to_peer"]
DESCR = {
    "zcopy_tx": "transmit from user buffers when possible",
    "try_gso": "try GSO (announced with MPA reserved bit 0x0800)",
    "loopback_enabled": "allow siw on loopback devices",
    "mpa_crc_required": "request the MPA CRC (C flag)",
    "mpa_crc_strict": "enforce mpa_crc_required in both directions",
    "siw_tcp_nagle": "leave Nagle on (N: TCP_NODELAY)",
    "peer_to_peer": "request MPA v2 peer-to-peer mode with an RTR",
}


def die(msg):
    sys.exit(f"patch-siw-tunable: {msg}")


def sub_once(pattern, repl, text, what):
    new, n = re.subn(pattern, repl, text, count=1, flags=re.M)
    if n != 1:
        die(f"anchor not found: {what}")
    return new


def main(d):
    main_c, hdr, cm_c = f"{d}/siw_main.c", f"{d}/siw.h", f"{d}/siw_cm.c"
    m, h, c = (open(p).read() for p in (main_c, hdr, cm_c))

    for k in KNOBS:
        m = sub_once(rf"^const bool {k}\b", f"bool {k}", m, f"definition of {k}")
        h = sub_once(rf"^extern const bool {k}\b", f"extern bool {k}", h, f"declaration of {k}")
    # mpa_version (a u_char) is already writable in 6.1; drop a const if present
    m = re.sub(r"^const (\w+\s+mpa_version\b)", r"\1", m, count=1, flags=re.M)
    h = re.sub(r"^extern const (\w+\s+mpa_version\b)", r"extern \1", h, count=1, flags=re.M)
    if not re.search(r"^\w+\s+mpa_version\b", m, flags=re.M):
        die("definition of mpa_version not found")

    params = ["", "/* esock siw harness: compile-time knobs exposed as load-time parameters */"]
    for k in KNOBS:
        params += [f"module_param({k}, bool, 0444);", f'MODULE_PARM_DESC({k}, "{DESCR[k]}");']
    params += ["module_param(mpa_version, byte, 0444);",
               'MODULE_PARM_DESC(mpa_version, "MPA revision used to connect: 1 or 2");',
               "bool fix_accept_race;",
               "module_param(fix_accept_race, bool, 0444);",
               'MODULE_PARM_DESC(fix_accept_race, "harness: attach socket upcalls before sending the MPA Reply");',
               ""]
    m += "\n".join(params)

    # --- fix_accept_race, inside siw_accept() only
    start = c.find("\nint siw_accept(")
    if start < 0:
        die("siw_accept() not found")
    end = c.find("\n}\n", start)
    body = c[start:end]
    send = re.search(r"^(\t+)rv = siw_send_mpareqrep\(cep,", body, flags=re.M)
    if not send:
        die("MPA Reply transmission not found in siw_accept()")
    ind = send.group(1)
    early = (f"{ind}if (fix_accept_race) {{\n"
             f"{ind}\tif (wait_for_peer_rts)\n{ind}\t\tsiw_sk_assign_rtr_upcalls(cep);\n"
             f"{ind}\telse\n{ind}\t\tsiw_qp_socket_assoc(cep, qp);\n{ind}}}\n")
    head, tail = body[:send.start()], body[send.start():]
    for call in ("siw_sk_assign_rtr_upcalls(cep);", "siw_qp_socket_assoc(cep, qp);"):
        tail = sub_once(rf"^(\t+){re.escape(call)}",
                        lambda mo, call=call: f"{mo.group(1)}if (!fix_accept_race)\n{mo.group(1)}\t{call}",
                        tail, f"{call} after the MPA Reply")
    c = c[:start] + head + early + tail + c[end:]
    c = sub_once(r'^(#include "siw_cm.h"\n)', r"\1\nextern bool fix_accept_race;\n", c, "include of siw_cm.h")

    for p, t in ((main_c, m), (hdr, h), (cm_c, c)):
        open(p, "w").write(t)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        die("usage: patch-siw-tunable.py DIR")
    main(sys.argv[1])
