#!/usr/bin/python3
"""A pre-forking echo server, as apache prefork or nginx's workers are shaped (tests/apps):
the parent listens, forks WORKERS children that each accept on the listener they inherited
and echo every connection until its client closes; the parent only waits.

  prefork_echo.py HOST PORT WORKERS
"""
import os
import signal
import socket
import sys

host, port, workers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind((host, port))
ls.listen(16)
children = []
for _ in range(workers):
    pid = os.fork()
    if pid == 0:
        while True:
            c, _ = ls.accept()
            with c:
                while data := c.recv(65536):
                    c.sendall(data)
    children.append(pid)
signal.signal(signal.SIGTERM, lambda *_: [os.kill(p, signal.SIGKILL) for p in children] and sys.exit(0))
for p in children:
    os.waitpid(p, 0)
