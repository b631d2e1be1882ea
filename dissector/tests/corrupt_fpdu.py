#!/usr/bin/env python3
# Flips one octet inside the ULPDU payload of one FPDU of an esock capture, so that the
# dissector tests can check the CRC32c mismatch is reported on exactly that frame.
# Deterministic: the first TCP segment with at least 200 octets of payload after the 10th
# packet, the octet 40 before its end (inside the ULPDU payload, past the DDP/RDMAP header,
# before pad and CRC). The TCP checksum is left as it is (tshark does not check it by
# default). Writes the frame number to OUT with ".frame" appended.
# Usage: corrupt_fpdu.py IN.pcapng OUT.pcap
import os
import struct
import subprocess
import sys
import tempfile

src, dst = sys.argv[1], sys.argv[2]
with tempfile.TemporaryDirectory() as tmp:
    classic = os.path.join(tmp, "in.pcap")
    subprocess.run(["editcap", "-F", "pcap", src, classic], check=True)
    data = bytearray(open(classic, "rb").read())

magic = struct.unpack_from("<I", data, 0)[0]
assert magic in (0xA1B2C3D4, 0xA1B23C4D), "little-endian classic pcap expected"
linktype = struct.unpack_from("<I", data, 20)[0]
link_len = {1: 14, 113: 16, 228: 0}[linktype]  # Ethernet (lo), Linux SLL, raw IPv4
off, frame, done = 24, 0, None
while off + 16 <= len(data):
    incl = struct.unpack_from("<I", data, off + 8)[0]
    pkt = off + 16
    frame += 1
    ip = pkt + link_len
    if done is None and frame > 10 and (data[ip] >> 4) == 4 and data[ip + 9] == 6:
        ihl = (data[ip] & 0x0F) * 4
        tcp = ip + ihl
        total = struct.unpack_from(">H", data, ip + 2)[0]
        payload = total - ihl - (data[tcp + 12] >> 4) * 4
        if payload >= 200:
            data[ip + total - 40] ^= 0x5A
            done = frame
    off = pkt + incl

assert done is not None, "no FPDU large enough to corrupt"
open(dst, "wb").write(data)
open(dst + ".frame", "w").write(f"{done}\n")
print(f"corrupted frame {done}")
