#!/usr/bin/env python3
"""Host-side MPA responder: listen on 10.77.0.1:PORT, accept one connection
from a guest's siw initiator (e.g. `rping -c -a 10.77.0.1 -C 1`), print the
MPA Request it sends (raw + decoded). By default it then answers with an MPA
v2 Reply (IRD/ORD = the Request's, C as requested) and prints the first FPDU
siw sends (decoded: DDP/RDMAP header, CRC check), then closes; rping itself
then fails, which is expected.

  siw.sh host probes/mpa_responder.py [7174] [--no-reply] [--reject] [--timeout S]
Exit status: 0 Request (and FPDU if replying) received, 2 error/timeout.
"""
import argparse
import socket
import sys

import mpa


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("port", nargs="?", type=int, default=7174)
    ap.add_argument("--no-reply", action="store_true", help="print the Request, then close")
    ap.add_argument("--reject", action="store_true", help="answer with R=1 (reject)")
    ap.add_argument("--echo-send", action="store_true",
                    help="answer a first Send with a Send carrying the same payload (acts as rdma_server)")
    ap.add_argument("--timeout", type=float, default=60.0)
    a = ap.parse_args()

    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        ls.bind((mpa.HOST_IP, a.port))
    except OSError as e:
        raise SystemExit(f"cannot bind {mpa.HOST_IP}:{a.port} ({e}): run through 'siw.sh host'")
    ls.listen(1)
    ls.settimeout(a.timeout)
    print(f"listening on {mpa.HOST_IP}:{a.port}", flush=True)
    try:
        s, peer = ls.accept()
    except socket.timeout:
        print(f"!! no connection within {a.timeout}s")
        return 2
    ls.close()
    mpa.lab_addr(peer[0])
    s.settimeout(a.timeout)
    print(f"accepted {peer[0]}:{peer[1]}")
    raw, d = mpa.recv_frame(s)
    print(f"got  {mpa.fmt_frame(d)}\n{mpa.hexdump(raw)}", flush=True)
    if d["key"] != "Req":
        print("!! not an MPA Request")
        return 2
    if a.no_reply:
        s.close()
        return 0
    rep = mpa.build_frame(mpa.KEY_REP, rev=d["rev"], crc=bool(d["C"]), reject=a.reject,
                          ird=d.get("ORD", 0), ord_=d.get("IRD", 0))
    s.sendall(rep)
    print(f"sent {mpa.fmt_frame(mpa.decode_frame(rep))}", flush=True)
    if a.reject:
        s.close()
        return 0
    try:
        f = mpa.recv_fpdu(s)
    except (socket.timeout, EOFError) as e:
        print(f"!! no FPDU after the Reply: {e}")
        return 2
    print(f"got  {mpa.decode_fpdu(f, bool(d['C']))}\n{mpa.hexdump(f)}", flush=True)
    if a.echo_send:
        ulpdu_len = int.from_bytes(f[:2], "big")
        if f[3] & 0x0F != 3:
            print("!! first FPDU is not a Send; not echoing")
            return 2
        e = mpa.build_send_fpdu(f[20:2 + ulpdu_len], msn=1, crc_used=bool(d["C"]))
        s.sendall(e)
        print(f"sent {mpa.decode_fpdu(e, bool(d['C']))}", flush=True)
        try:   # the peer disconnects when done; just drain until then
            while s.recv(4096):
                pass
        except (socket.timeout, ConnectionResetError):
            pass
    s.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
