#!/usr/bin/env python3
# Writes a small, fully synthetic capture (classic pcap, Ethernet/IPv4/TCP) of one MPA v2
# connection with CRC32c whose FPDUs commit the protocol violations the dissector must flag,
# plus what it must pair and reassemble. Deterministic: fixed addresses, sequence numbers
# and timestamps. Frame by frame (the expected values are in run_tests.sh):
#   4 Request (rev 2, C, IRD 4 ORD 4)          5 Reply (rev 2, C, IRD 4 ORD 4)
#   6 Send MSN 1 "hello"                       7 Send MSN 3: MSN out of order (expected 2)
#   8 Send MSN 4 MO 0, not last                9 Send MSN 4 MO 100, last: 150 octets in 2
#  10 Read Request MSN 1 (sink 0x1000/0x2000, 64 octets)
#  11 Read Response 0x1000/0x2000, 64 octets, 500 us after frame 10
#  12 Read Request MSN 2 (sink 0x1100/0, 16 octets)
#  13 Read Response 0x1100/0, 32 octets: outside the 16 octets frame 12 advertised
#  14 Terminate: DDP, untagged buffer error, invalid MSN range (layer 1, type 2, code 3)
# With "estp" as second argument it writes an ESTP connection instead (docs/stream-protocol.md):
#   4/5 Request/Reply with a Hello (R 4, B 4096)   6 DATA "hello"
#   7 SINKAVAIL 64 octets at STag 0x2000 TO 0x10000 (server)   8 RDMA Write 48 octets into it
#   9 WRITEDONE 48   10 RDMA Write 32 octets at TO 0x10030: outside the sink
#  11 SRCAVAIL 100000 octets   12 CREDIT 2   13 FIN   14 DATA whose length field is wrong
# With "short-tail" it writes three Sends (MSN 1-3, 3000, 3000 and 100 octets) cut so that
# frame 7 finishes the FPDU frame 6 began and carries only the first 6 octets of the next:
#   6 FPDU 1 [0, 1400)   7 FPDU 1 [1400, end) + FPDU 2 [0, 6)   8 FPDU 2 [6, end) + FPDU 3
# (kernel TCP cuts segments like this; Wireshark 4.0's own iwarp_mpa drops such a tail and
# then loses FPDU alignment, see tests/integration/mpa_capture_oracle.py).
# With "rfc7306" it writes RFC 7306 messages (Atomic Requests on QN 1, Responses on QN 3,
# Immediate Data on QN 0):
#   6 FetchAdd id 0x11, STag 0x4000 TO 0x1000, add 5   7 its Response, 250 us later
#   8 CmpSwap id 0x12 TO 0x1008 (swap 0xaaaa, compare 0x5555, masks all ones)   9 its Response
#  10 Immediate Data 0x1122334455667788   11 Immediate Data with SE 0x8877665544332211
#  12 FetchAdd id 0x13 at TO 0x1004: not 8-octet aligned (RFC 7306 section 5.2.1)
#  13 Terminate: RDMAP Remote Operation Error 0x07 (section 8.2), carrying frame 12's DDP header
# "rfc7306-midstream" writes the same from frame 6 on (no handshake, no MPA frames); and
# "rfc7306-errors" what the dissector must flag:
#   6 Atomic Request with reserved operation 5   7 Response with the wrong request id
#   8 Response with no request outstanding   9 Immediate Data of 4 octets
#  10 Atomic Request 4 octets too long   11 Atomic Response of 4 octets (answers 10)
#  12 Immediate Data with SE on QN 2
# A third argument moves the server to that TCP port (27017: one Wireshark gives to tls, which
# would take the connection from a heuristic dissector that does not claim it at the Request).
# Usage: craft_violations.py OUT.pcap [estp|short-tail|rfc7306|rfc7306-midstream|rfc7306-errors]
#        [SERVER_PORT]
import struct
import sys

def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF

def fpdu(ulpdu):
    body = struct.pack(">H", len(ulpdu)) + ulpdu
    body += b"\0" * (-len(body) % 4)
    return body + struct.pack("<I", crc32c(body))  # CRC sent least significant octet first

def untagged(op, qn, msn, mo, payload, last=True):
    return bytes([(0x40 if last else 0) | 0x01, 0x40 | op]) + struct.pack(">IIII", 0, qn, msn, mo) + payload

def tagged(op, stag, to, payload, last=True):
    return bytes([0x80 | (0x40 if last else 0) | 0x01, 0x40 | op]) + struct.pack(">IQ", stag, to) + payload

def mpa_frame(key, flags, ird, ord_, pd=b""):
    return key + bytes([flags, 2]) + struct.pack(">HHH", 4 + len(pd), ird, ord_) + pd

def estp(type_, credits, length, body=b"", flags=0):
    return struct.pack(">IBBHII", 0x45535450, 1, type_, flags, credits, length) + body

server_port = int(sys.argv[3]) if len(sys.argv) > 3 else 5000
C, S = (b"\x0a\x00\x00\x01", 40000), (b"\x0a\x00\x00\x02", server_port)
seq = {C: 1000, S: 5000}
frames = []
t = [1_700_000_000, 0]  # seconds, microseconds

def packet(src, dst, payload, flags=0x18, advance_us=100):
    t[1] += advance_us
    ack = 0 if flags == 0x02 else seq[dst]
    tcp = struct.pack(">HHIIBBHHH", src[1], dst[1], seq[src], ack, 5 << 4, flags, 65535, 0, 0)
    if flags & 0x02:
        seq[src] += 1
    seq[src] += len(payload)
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + len(payload), 0, 0x4000, 64, 6, 0,
                     src[0], dst[0])
    eth = b"\x02\0\0\0\0\x02" + b"\x02\0\0\0\0\x01" + b"\x08\x00"
    frames.append((t[0], t[1], eth + ip + tcp + payload))

packet(C, S, b"", 0x02)
packet(S, C, b"", 0x12)
packet(C, S, b"", 0x10)
if len(sys.argv) > 2 and sys.argv[2] == "estp":
    hello = struct.pack(">IBBHII", 0x45535450, 1, 0, 0, 4, 4096)
    packet(C, S, mpa_frame(b"MPA ID Req Frame", 0x40 | 0x10, 4, 4, hello))
    packet(S, C, mpa_frame(b"MPA ID Rep Frame", 0x40 | 0x10, 4, 4, hello))
    packet(C, S, fpdu(untagged(3, 0, 1, 0, estp(1, 0, 5, b"hello"))))
    packet(S, C, fpdu(untagged(3, 0, 1, 0, estp(5, 1, 64, struct.pack(">IQI", 0x2000, 0x10000, 1)))))
    packet(C, S, fpdu(tagged(0, 0x2000, 0x10000, bytes(48))))
    packet(C, S, fpdu(untagged(3, 0, 2, 0, estp(6, 0, 48, struct.pack(">I", 1)))))
    packet(C, S, fpdu(tagged(0, 0x2000, 0x10030, bytes(32))))
    packet(C, S, fpdu(untagged(3, 0, 3, 0, estp(3, 0, 100000, struct.pack(">IQI", 0x3000, 0, 1)))))
    packet(S, C, fpdu(untagged(3, 0, 2, 0, estp(2, 2, 0))))
    packet(C, S, fpdu(untagged(3, 0, 4, 0, estp(8, 0, 0))))
    packet(S, C, fpdu(untagged(3, 0, 3, 0, estp(1, 0, 99, b"abc"))))
elif len(sys.argv) > 2 and sys.argv[2] in ("rfc7306", "rfc7306-midstream", "rfc7306-errors"):
    # RFC 7306: Atomic Request (untagged QN 1, section 5.2.1), Atomic Response (QN 3, its own
    # MSN sequence, section 5.2.2), Immediate Data (QN 0, 8 octets, section 6.2).
    def atomic_req(msn, op, req_id, stag, to, data, mask=0, cmp=0, cmp_mask=0, extra=b""):
        return untagged(10, 1, msn, 0, struct.pack(">IIIQQQQQ", op, req_id, stag, to, data, mask,
                                                   cmp, cmp_mask) + extra)
    def atomic_resp(msn, req_id, value):
        return untagged(11, 3, msn, 0, struct.pack(">IQ", req_id, value))
    packet(C, S, mpa_frame(b"MPA ID Req Frame", 0x40 | 0x10, 4, 4))
    packet(S, C, mpa_frame(b"MPA ID Rep Frame", 0x40 | 0x10, 4, 4))
    if sys.argv[2] == "rfc7306-errors":
        packet(C, S, fpdu(atomic_req(1, 5, 0x21, 0x4000, 0x1000, 1)))
        packet(S, C, fpdu(atomic_resp(1, 0x22, 7)))
        packet(S, C, fpdu(atomic_resp(2, 0x23, 8)))
        packet(C, S, fpdu(untagged(8, 0, 1, 0, bytes(4))))
        packet(C, S, fpdu(atomic_req(2, 0, 0x24, 0x4000, 0x1010, 1, extra=bytes(4))))
        packet(S, C, fpdu(untagged(11, 3, 3, 0, struct.pack(">I", 0x24))))
        packet(C, S, fpdu(untagged(9, 2, 1, 0, bytes(8))))
    else:
        packet(C, S, fpdu(atomic_req(1, 0, 0x11, 0x4000, 0x1000, 5)))
        packet(S, C, fpdu(atomic_resp(1, 0x11, 0x0123456789ABCDEF)), advance_us=250)
        packet(C, S, fpdu(atomic_req(2, 2, 0x12, 0x4000, 0x1008, 0xAAAA, 0xFFFFFFFFFFFFFFFF,
                                     0x5555, 0xFFFFFFFFFFFFFFFF)))
        packet(S, C, fpdu(atomic_resp(2, 0x12, 0x5555)))
        packet(C, S, fpdu(untagged(8, 0, 1, 0, struct.pack(">Q", 0x1122334455667788))))
        packet(C, S, fpdu(untagged(9, 0, 2, 0, struct.pack(">Q", 0x8877665544332211))))
        bad = atomic_req(3, 0, 0x13, 0x4000, 0x1004, 1)
        packet(C, S, fpdu(bad))
        # Section 8.2: misaligned target -> Terminate, RDMAP Remote Operation Error (type 2),
        # code 0x07; Hdrct D: the DDP Segment Length and the terminated DDP header follow.
        packet(S, C, fpdu(untagged(7, 2, 1, 0, bytes([0x02, 0x07, 0x40, 0x00]) +
                                   struct.pack(">H", len(bad)) + bad[:18])))
elif len(sys.argv) > 2 and sys.argv[2] == "short-tail":
    packet(C, S, mpa_frame(b"MPA ID Req Frame", 0x40 | 0x10, 4, 4))
    packet(S, C, mpa_frame(b"MPA ID Rep Frame", 0x40 | 0x10, 4, 4))
    first = fpdu(untagged(3, 0, 1, 0, bytes(3000)))
    second = fpdu(untagged(3, 0, 2, 0, bytes(range(256)) * 11 + bytes(184)))
    third = fpdu(untagged(3, 0, 3, 0, bytes(100)))
    packet(C, S, first[:1400])
    packet(C, S, first[1400:] + second[:6])
    packet(C, S, second[6:] + third)
else:
    packet(C, S, mpa_frame(b"MPA ID Req Frame", 0x40 | 0x10, 4, 4))
    packet(S, C, mpa_frame(b"MPA ID Rep Frame", 0x40 | 0x10, 4, 4))
    packet(C, S, fpdu(untagged(3, 0, 1, 0, b"hello")))
    packet(C, S, fpdu(untagged(3, 0, 3, 0, b"skipped two")))
    packet(C, S, fpdu(untagged(3, 0, 4, 0, bytes(range(100)), last=False)))
    packet(C, S, fpdu(untagged(3, 0, 4, 100, bytes(50))))
    packet(C, S, fpdu(untagged(1, 1, 1, 0, struct.pack(">IQIIQ", 0x1000, 0x2000, 64, 0x3000, 0))))
    packet(S, C, fpdu(tagged(2, 0x1000, 0x2000, bytes(64))), advance_us=500)
    packet(C, S, fpdu(untagged(1, 1, 2, 0, struct.pack(">IQIIQ", 0x1100, 0, 16, 0x3100, 0))))
    packet(S, C, fpdu(tagged(2, 0x1100, 0, bytes(32))))
    packet(S, C, fpdu(untagged(7, 2, 1, 0, bytes([0x12, 0x03, 0x00, 0x00]))))

if len(sys.argv) > 2 and sys.argv[2] == "rfc7306-midstream":
    del frames[:5]  # no handshake, no MPA frames: found again from the first Atomic FPDUs

with open(sys.argv[1], "wb") as out:
    out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    for sec, usec, data in frames:
        out.write(struct.pack("<IIII", sec, usec, len(data), len(data)) + data)
