#!/usr/bin/python3
"""A plain TCP server (never under esock) that records what each connection sent (tests/apps).

  plain_recorder.py PORT DIR MODE [HOST]   MODE talkative: sends "banner\n" first; silent: says
                                           nothing; HOST: the address it listens on (127.0.0.1)
Each connection's octets go to DIR/conn.N; the server answers each line with "ok <sha256>\n" of
all it has received on that connection and stops after DIR/stop exists.
"""
import hashlib
import os
import socket
import sys
import threading

port, out, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
host = sys.argv[4] if len(sys.argv) > 4 else "127.0.0.1"
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind((host, port))
ls.listen(16)
ls.settimeout(0.2)
n = 0


def serve(c, i):
    got = b""
    with c, open(os.path.join(out, f"conn.{i}"), "wb") as f:
        if mode == "talkative":
            c.sendall(b"banner\n")
        while data := c.recv(65536):
            f.write(data)
            f.flush()
            got += data
            if data.endswith(b"\n"):
                c.sendall(b"ok " + hashlib.sha256(got).hexdigest().encode() + b"\n")


while not os.path.exists(os.path.join(out, "stop")):
    try:
        c, _ = ls.accept()
    except socket.timeout:
        continue
    n += 1
    threading.Thread(target=serve, args=(c, n), daemon=True).start()
