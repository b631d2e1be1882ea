"""MPA (RFC 5044) / MPA v2 (RFC 6581) helpers for the harness's host-side probes.

Only the connection-setup frames and a minimal FPDU decode: enough to show
what Linux siw puts on the wire. esock's own C++ code replaces these probes.
"""
import ipaddress
import socket
import struct

KEY_REQ = b"MPA ID Req Frame"   # RFC 5044 7.1: 16-byte key of the MPA Request
KEY_REP = b"MPA ID Rep Frame"
LAB_NET = ipaddress.ip_network("10.77.0.0/24")
HOST_IP = "10.77.0.1"

# RFC 5044 7.1 flag octet; 0x10 is the RFC 6581 "enhanced connection setup" bit
F_MARKERS, F_CRC, F_REJECT, F_ENHANCED = 0x80, 0x40, 0x20, 0x10
# RFC 6581 5: IRD word carries P2P (0x8000) and zero-length-Send RTR (0x4000);
# ORD word carries zero-length-Write RTR (0x8000) and zero-length-Read RTR (0x4000)
IRD_P2P, IRD_SEND_RTR, ORD_WRITE_RTR, ORD_READ_RTR = 0x8000, 0x4000, 0x8000, 0x4000
RDMAP_OPS = {0: "RDMA Write", 1: "RDMA Read Request", 2: "RDMA Read Response", 3: "Send",
             4: "Send with Invalidate", 5: "Send with SE", 6: "Send with SE and Invalidate",
             7: "Terminate"}


def lab_addr(a):
    """Refuse anything outside the harness bridge network."""
    if ipaddress.ip_address(a) not in LAB_NET:
        raise SystemExit(f"refusing {a}: the probes only talk to 10.77.0.0/24 (the harness bridge)")
    return a


def build_frame(key, rev=2, crc=False, markers=False, reject=False, ird=1, ord_=1,
                ird_flags=0, ord_flags=0, extra=b""):
    flags = (F_MARKERS if markers else 0) | (F_CRC if crc else 0) | (F_REJECT if reject else 0)
    pdata = extra
    if rev == 2:
        flags |= F_ENHANCED
        pdata = struct.pack(">HH", (ird & 0x3FFF) | ird_flags, (ord_ & 0x3FFF) | ord_flags) + extra
    return key + bytes([flags, rev]) + struct.pack(">H", len(pdata)) + pdata


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise EOFError(f"peer closed after {len(buf)} of {n} bytes")
        buf += chunk
    return buf


def recv_frame(s):
    """Read one MPA Request/Reply: returns (raw bytes, decoded dict)."""
    hdr = recv_exact(s, 20)
    plen = struct.unpack(">H", hdr[18:20])[0]
    raw = hdr + (recv_exact(s, plen) if plen else b"")
    return raw, decode_frame(raw)


def decode_frame(raw):
    key, fl, rev = raw[:16], raw[16], raw[17]
    plen = struct.unpack(">H", raw[18:20])[0]
    pd = raw[20:20 + plen]
    d = {"key": {KEY_REQ: "Req", KEY_REP: "Rep"}.get(key, f"?{key!r}"), "rev": rev,
         "M": fl >> 7 & 1, "C": fl >> 6 & 1, "R": fl >> 5 & 1, "enhanced": fl >> 4 & 1,
         "res": fl & 0x0F, "pd_length": plen, "pdata": pd.hex()}
    if d["enhanced"] and plen >= 4:
        ird, ord_ = struct.unpack(">HH", pd[:4])
        d.update(IRD=ird & 0x3FFF, ORD=ord_ & 0x3FFF, P2P=ird >> 15 & 1, send_rtr=ird >> 14 & 1,
                 write_rtr=ord_ >> 15 & 1, read_rtr=ord_ >> 14 & 1)
    return d


def fmt_frame(d):
    s = (f"MPA {d['key']} rev={d['rev']} M={d['M']} C={d['C']} R={d['R']} "
         f"enhanced={d['enhanced']} res=0x{d['res']:x} pd_length={d['pd_length']} pdata={d['pdata'] or '-'}")
    if "IRD" in d:
        s += (f"\n    v2: IRD={d['IRD']} ORD={d['ORD']} P2P={d['P2P']} send_rtr={d['send_rtr']} "
              f"write_rtr={d['write_rtr']} read_rtr={d['read_rtr']}")
    return s


def hexdump(b, indent="    "):
    return "\n".join(f"{indent}{i:04x}  {b[i:i + 16].hex(' ')}" for i in range(0, len(b), 16))


def crc32c(data):
    """CRC32c (Castagnoli, reflected 0x82F63B78), bitwise: probes only."""
    c = 0xFFFFFFFF
    for byte in data:
        c ^= byte
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 & -(c & 1))
    return c ^ 0xFFFFFFFF


def recv_fpdu(s):
    """Read one FPDU (no markers): ULPDU_Length, ULPDU, pad to 4, CRC (RFC 5044 4.1)."""
    ln = recv_exact(s, 2)
    ulpdu_len = struct.unpack(">H", ln)[0]
    pad = (-(2 + ulpdu_len)) % 4
    rest = recv_exact(s, ulpdu_len + pad + 4)
    return ln + rest


def decode_fpdu(raw, crc_used):
    ulpdu_len = struct.unpack(">H", raw[:2])[0]
    u = raw[2:2 + ulpdu_len]
    crc_field = struct.unpack(">I", raw[-4:])[0]
    out = [f"FPDU: {len(raw)} bytes, ULPDU_Length={ulpdu_len}, CRC field=0x{crc_field:08x}"]
    if crc_used:
        # RFC 5044 4.1/B.4: CRC over the FPDU up to the CRC, sent in network order
        # after the usual bit reflection, i.e. as the little-endian value's bytes
        want = struct.unpack(">I", struct.pack("<I", crc32c(raw[:-4])))[0]
        out[0] += f" ({'good' if want == crc_field else 'BAD, expected 0x%08x' % want})"
    ctrl, rctrl = u[0], u[1]
    tagged, last, dv = ctrl >> 7 & 1, ctrl >> 6 & 1, ctrl & 3
    rv, op = rctrl >> 6, rctrl & 0x0F
    out.append(f"  DDP (RFC 5041): T={tagged} L={last} DV={dv}; RDMAP (RFC 5040): RV={rv} "
               f"opcode={op} ({RDMAP_OPS.get(op, '?')})")
    if tagged:
        stag, to = struct.unpack(">IQ", u[2:14])
        out.append(f"  tagged: STag=0x{stag:08x} TO=0x{to:x}; payload {ulpdu_len - 14} bytes: {u[14:].hex() or '-'}")
    else:
        inv, qn, msn, mo = struct.unpack(">IIII", u[2:18])
        out.append(f"  untagged: inv-STag=0x{inv:08x} QN={qn} MSN={msn} MO={mo}; "
                   f"payload {ulpdu_len - 18} bytes: {u[18:].hex() or '-'}")
    return "\n".join(out)


def build_send_fpdu(payload, msn=1, crc_used=False):
    """One untagged RDMAP Send as a single FPDU: DDP L=1 DV=1, QN 0 (RFC 5040
    5.1 Send queue), MSN counting from 1 (RFC 5041 5.1), MO 0; no markers."""
    ulpdu = bytes([0x41, 0x43]) + struct.pack(">IIII", 0, 0, msn, 0) + payload
    body = struct.pack(">H", len(ulpdu)) + ulpdu
    body += b"\0" * ((-len(body)) % 4)
    crc = struct.pack("<I", crc32c(body)) if crc_used else b"\0\0\0\0"
    return body + crc


def lab_socket():
    """A TCP socket bound to the host side of the bridge: fails outside the
    harness netns, so a probe can never send to 10.77.0.x over a real route."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        s.bind((HOST_IP, 0))
    except OSError as e:
        raise SystemExit(f"cannot bind {HOST_IP} ({e}): run through 'siw.sh host' (netns esock-siw)")
    return s
