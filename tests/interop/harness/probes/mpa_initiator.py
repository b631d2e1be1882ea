#!/usr/bin/env python3
"""Host-side MPA initiator: connect from 10.77.0.1 to a guest's siw listener
(e.g. `rping -s -a 10.77.0.2 -P`, port 7174), send an MPA Request, print the
MPA Reply siw returns (raw + decoded), close. Does not go on to RDMA traffic.

  siw.sh host probes/mpa_initiator.py 10.77.0.2 [7174] [--v1] [--crc] [--markers]
                                      [--p2p] [--ird N] [--ord N] [--pdata HEX]
Exit status: 0 Reply accepted (R=0), 3 rejected (R=1), 2 protocol error.
"""
import argparse
import sys

import mpa


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("addr")
    ap.add_argument("port", nargs="?", type=int, default=7174)
    ap.add_argument("--v1", action="store_true", help="MPA revision 1 (no IRD/ORD)")
    ap.add_argument("--crc", action="store_true", help="set C (ask for CRC32c)")
    ap.add_argument("--markers", action="store_true", help="set M (siw rejects markers)")
    ap.add_argument("--p2p", action="store_true", help="request peer-to-peer with write or read RTR")
    ap.add_argument("--ird", type=int, default=1)
    ap.add_argument("--ord", type=int, default=1)
    ap.add_argument("--pdata", default="", help="extra private data after IRD/ORD (hex)")
    ap.add_argument("--send", metavar="HEX", help="after the Reply, send one RDMAP Send with this payload "
                    "and print the first FPDU that comes back (e.g. against rdma_server, port 7471)")
    ap.add_argument("--timeout", type=float, default=10.0)
    a = ap.parse_args()

    req = mpa.build_frame(mpa.KEY_REQ, rev=1 if a.v1 else 2, crc=a.crc, markers=a.markers,
                          ird=a.ird, ord_=a.ord,
                          ird_flags=mpa.IRD_P2P if a.p2p else 0,
                          ord_flags=(mpa.ORD_WRITE_RTR | mpa.ORD_READ_RTR) if a.p2p else 0,
                          extra=bytes.fromhex(a.pdata))
    s = mpa.lab_socket()
    s.settimeout(a.timeout)
    s.connect((mpa.lab_addr(a.addr), a.port))
    print(f"connected {s.getsockname()[0]}:{s.getsockname()[1]} -> {a.addr}:{a.port}")
    s.sendall(req)
    print(f"sent {mpa.fmt_frame(mpa.decode_frame(req))}")
    raw, d = mpa.recv_frame(s)
    print(f"got  {mpa.fmt_frame(d)}\n{mpa.hexdump(raw)}")
    if d["key"] != "Rep":
        print("!! not an MPA Reply")
        return 2
    if d["R"]:
        return 3
    if a.send is not None:
        f = mpa.build_send_fpdu(bytes.fromhex(a.send), msn=1, crc_used=bool(d["C"]))
        s.sendall(f)
        print(f"sent {mpa.decode_fpdu(f, bool(d['C']))}", flush=True)
        r = mpa.recv_fpdu(s)
        print(f"got  {mpa.decode_fpdu(r, bool(d['C']))}\n{mpa.hexdump(r)}")
    s.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
