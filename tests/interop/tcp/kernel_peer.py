#!/usr/bin/env python3
"""The Linux kernel's end of the lib/tcp interop tests: a plain TCP socket that sends a
seeded stream and/or receives until EOF, and prints SHA-256 digests in esock_tcp's format
(SHA256 sent=... / SHA256 recv=...) so the test compares the two ends' digests.

  kernel_peer.py listen PORT | connect IP PORT  [--send N] [--recv] [--abort-after N]
                 [--expect-reset] [--seed S] [--ss-file F] [--timeout S]

--abort-after closes with SO_LINGER {1, 0}, which makes Linux send RST. --ss-file runs
`ss -tino` on this connection once 1 MiB has moved (mid-transfer) and stores its output.
Exit 0 only when the transfer completed as asked (EOF seen, or the expected reset)."""
import argparse
import hashlib
import random
import socket
import struct
import subprocess
import sys
import threading
import time

CHUNK = 256 * 1024


def size(text):
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(text[-1:].lower(), 1)
    return int(text[:-1] if mult > 1 else text, 0) * mult


def tcp_info_options(sock):
    # struct tcp_info: state, ca_state, retransmits, probes, backoff, options, wscale byte
    raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    opts, wscale = raw[5], raw[6]
    total_retrans = struct.unpack_from("I", raw, 100)[0] if len(raw) >= 104 else -1
    return ("TCPINFO ts=%d sack=%d wscale=%d,%d total_retrans=%d" %
            (opts & 1, (opts >> 1) & 1, wscale & 15, wscale >> 4, total_retrans))


class Peer:
    def __init__(self, args, sock):
        self.a, self.s = args, sock
        self.sent, self.recv = hashlib.sha256(), hashlib.sha256()
        self.nsent = self.nrecv = 0
        self.reset = False
        self.errors = []
        self.ss_done = args.ss_file is None
        self.lock = threading.Lock()

    def moved(self):
        if self.ss_done or self.nsent + self.nrecv < (1 << 20):
            return
        with self.lock:
            if self.ss_done:
                return
            self.ss_done = True
            local = self.s.getsockname()
            out = subprocess.run(["ss", "-tino", "src", "%s:%d" % local],
                                 capture_output=True, text=True).stdout
            with open(self.a.ss_file, "w") as f:
                f.write(out)

    def abort(self):
        self.s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.s.close()

    def do_send(self):
        rng = random.Random(self.a.seed)
        left = self.a.send
        try:
            while left > 0:
                block = rng.randbytes(min(CHUNK, left))
                self.s.sendall(block)
                self.sent.update(block)
                self.nsent += len(block)
                left -= len(block)
                self.moved()
                if self.a.abort_after is not None and self.nsent >= self.a.abort_after:
                    return
            self.s.shutdown(socket.SHUT_WR)
        except (ConnectionResetError, BrokenPipeError):
            self.reset = True
        except OSError as e:
            self.errors.append("send: %s" % e)

    def do_recv(self):
        try:
            while True:
                b = self.s.recv(CHUNK)
                if not b:
                    return
                self.recv.update(b)
                self.nrecv += len(b)
                self.moved()
                if (self.a.abort_after is not None and self.a.send is None
                        and self.nrecv >= self.a.abort_after):
                    return
        except ConnectionResetError:
            self.reset = True
        except OSError as e:
            self.errors.append("recv: %s" % e)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["listen", "connect"])
    p.add_argument("addr", nargs="+")
    p.add_argument("--send", type=size)
    p.add_argument("--recv", action="store_true")
    p.add_argument("--abort-after", type=size)
    p.add_argument("--expect-reset", action="store_true")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--ss-file")
    p.add_argument("--timeout", type=float, default=120)
    a = p.parse_args()

    if a.mode == "listen":
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("0.0.0.0", int(a.addr[0])))
        ls.listen(1)
        print("kernel_peer: listening on %s" % a.addr[0], flush=True)
        ls.settimeout(a.timeout)
        s, _ = ls.accept()
        ls.close()
    else:
        s = socket.create_connection((a.addr[0], int(a.addr[1])), timeout=a.timeout)
    s.settimeout(a.timeout)
    print("kernel_peer: connected %s:%d <-> %s:%d" % (s.getsockname() + s.getpeername()),
          flush=True)
    peer = Peer(a, s)
    t0 = time.monotonic()
    sender = receiver = None
    if a.send is not None:
        sender = threading.Thread(target=peer.do_send)
        sender.start()
    # Always read until EOF: that is how the peer's FIN (or RST) is seen.
    receiver = threading.Thread(target=peer.do_recv)
    receiver.start()
    if sender:
        sender.join()
        if a.abort_after is not None and peer.nsent >= a.abort_after:
            s.shutdown(socket.SHUT_RD)  # wakes the reader; nothing goes on the wire
    receiver.join()
    secs = time.monotonic() - t0
    info = ""
    try:
        info = tcp_info_options(s)
    except OSError:
        pass
    aborted = a.abort_after is not None and (peer.nsent >= a.abort_after or
                                              peer.nrecv >= a.abort_after)
    if aborted:
        peer.abort()
    else:
        s.close()
    end = "aborted" if aborted else "reset" if peer.reset else "fin"
    print("RESULT end=%s sent=%d recv=%d secs=%.3f tx_MBps=%.1f rx_MBps=%.1f" %
          (end, peer.nsent, peer.nrecv, secs, peer.nsent / secs / 1e6, peer.nrecv / secs / 1e6))
    print("SHA256 sent=%s" % peer.sent.hexdigest())
    print("SHA256 recv=%s" % peer.recv.hexdigest())
    if info:
        print(info)
    for e in peer.errors:
        print("kernel_peer: %s" % e, file=sys.stderr)
    if a.expect_reset:
        return 0 if peer.reset else 1
    if a.abort_after is not None:
        return 0 if aborted else 1
    return 0 if end == "fin" and not peer.errors else 1


if __name__ == "__main__":
    sys.exit(main())
