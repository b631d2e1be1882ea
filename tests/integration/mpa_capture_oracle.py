#!/usr/bin/env python3
"""Ground truth for tshark_capture_test.sh, independent of esock's and Wireshark's code.

Reads the one TCP connection in a capture (reassembled by `tshark -z follow,tcp,raw`),
skips each direction's MPA Request/Reply (RFC 5044 section 7.1: 20 octets plus Private
Data) and walks the FPDUs (section 4.1: ULPDU_LENGTH, ULPDU, pad to 4, CRC32c), so the
test can tell a stack that sent something wrong from a dissector that read it wrongly.
Captures with Markers are not supported (the test checks those through tshark alone).

It also lists the segments that hit a Wireshark 4.0 reassembly limit seen on this
machine's captures: a segment that only finishes an FPDU begun in earlier segments and
then carries fewer than 8 octets (the MPA dissector's smallest FPDU) of the next FPDU.
Wireshark drops that short tail and decodes the following segment as if an FPDU began
at its first octet, so every FPDU until alignment happens to return reads as garbage.

Usage: mpa_capture_oracle.py CAPTURE     prints "key value" lines:
  fpdus N            FPDUs in both directions
  crc_good N         of those, how many carry a correct CRC32c
  short_tail N       segments of the pattern above (frame numbers on the next line)
  short_tail_frames  F1 F2 ...
"""
import bisect
import subprocess
import sys

SMALLEST_FPDU = 8  # what Wireshark's MPA dissector needs before it asks for more data


def crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


TABLE = crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for octet in data:
        c = TABLE[(c ^ octet) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def tshark(*args):
    return subprocess.run(["tshark", *args], capture_output=True, text=True, check=True).stdout


def streams(capture):
    """Returns {source port: payload octets} for both directions of TCP stream 0."""
    out = tshark("-o", "tcp.reassemble_out_of_order:TRUE", "-r", capture, "-q",
                 "-z", "follow,tcp,raw,0")
    nodes, data = [], [bytearray(), bytearray()]
    for line in out.splitlines():
        if line.startswith("Node "):
            nodes.append(int(line.rsplit(":", 1)[1]))
        elif line and not line.startswith(("=", "Follow:", "Filter:")):
            data[1 if line.startswith("\t") else 0] += bytes.fromhex(line.strip())
    if len(nodes) != 2:
        sys.exit(f"{capture}: no TCP connection to follow")
    return {nodes[0]: data[0], nodes[1]: data[1]}


def fpdu_starts(stream):
    """Stream offsets of every FPDU; counts CRCs that check."""
    if len(stream) < 20:
        return [], 0
    offset = 20 + int.from_bytes(stream[18:20], "big")  # after the MPA Request/Reply
    starts, good = [], 0
    while offset + 2 <= len(stream):
        ulpdu = int.from_bytes(stream[offset:offset + 2], "big")
        body = 2 + ulpdu + (-(2 + ulpdu)) % 4
        end = offset + body + 4
        if end > len(stream):
            sys.exit(f"FPDU at stream offset {offset} runs past the end of the capture")
        # RFC 5044 section 4.3 takes iSCSI's CRC32c (RFC 3385), whose reflected value goes
        # on the wire least significant octet first.
        crc = int.from_bytes(stream[offset + body:end], "little")
        if crc32c(stream[offset:offset + body]) == crc:
            good += 1
        starts.append(offset)
        offset = end
    return starts, good


def main():
    capture = sys.argv[1]
    per_port = {port: fpdu_starts(stream) for port, stream in streams(capture).items()}
    segments = tshark("-o", "tcp.relative_sequence_numbers:TRUE", "-r", capture,
                      "-Y", "tcp.len > 0", "-T", "fields", "-e", "frame.number",
                      "-e", "tcp.srcport", "-e", "tcp.seq", "-e", "tcp.len")
    short_tail = []
    for line in segments.splitlines():
        frame, port, seq, length = (int(x) for x in line.split("\t"))
        starts = per_port[port][0]
        begin = seq - 1  # relative sequence numbers: the SYN takes 1
        end = begin + length
        i = bisect.bisect_left(starts, begin)  # first FPDU starting in the segment
        only_start = i < len(starts) and i == bisect.bisect_left(starts, end) - 1
        if only_start and begin < starts[i] and end - starts[i] < SMALLEST_FPDU:
            short_tail.append(frame)
    print("fpdus", sum(len(s) for s, _ in per_port.values()))
    print("crc_good", sum(g for _, g in per_port.values()))
    print("short_tail", len(short_tail))
    print("short_tail_frames", *short_tail)


if __name__ == "__main__":
    main()
