#!/usr/bin/python3
"""A python asyncio echo server and a client that checks every octet (tests/apps).

  asyncio_echo.py server PORT [HOST]    serves until a client sends b"quit\n" on its own
                                        connection
  asyncio_echo.py client PORT N [HOST]  N connections at once, each sends 1 MiB in pieces and
                                        reads it back; exits 0 only if every octet came back
  asyncio_echo.py line PORT [HOST]      one connection (127.0.0.1): sends standard input, prints
                                        each line it gets until one starts with "ok " (the
                                        plain-peer matrix, against plain_recorder.py)
"""
import asyncio
import hashlib
import sys


async def serve(port, host):
    stop = asyncio.Event()

    async def handle(reader, writer):
        while data := await reader.read(65536):
            if data == b"quit\n":
                stop.set()
                break
            writer.write(data)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, host, port)
    async with server:
        await stop.wait()


async def one(host, port, seed):
    reader, writer = await asyncio.open_connection(host, port)
    payload = hashlib.shake_256(str(seed).encode()).digest(1 << 20)

    async def send():
        for i in range(0, len(payload), 7000):
            writer.write(payload[i:i + 7000])
            await writer.drain()

    sender = asyncio.create_task(send())
    got = await reader.readexactly(len(payload))
    await sender
    writer.close()
    return got == payload


async def client(host, port, n):
    results = await asyncio.gather(*(one(host, port, s) for s in range(n)))
    _, writer = await asyncio.open_connection(host, port)
    writer.write(b"quit\n")
    await writer.drain()
    writer.close()
    print(f"{sum(results)}/{n} connections echoed 1 MiB intact")
    return all(results)


async def line(port, host):
    # open_connection: a non-blocking connect, then the socket in the loop's epoll set while
    # it completes (under esockrun --ddp, while esock finds out the peer has no esock).
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(sys.stdin.buffer.read())
    await writer.drain()
    while got := await asyncio.wait_for(reader.readline(), 10):
        print(got.decode().rstrip("\n"), flush=True)
        if got.startswith(b"ok "):
            break
    writer.close()


if __name__ == "__main__":
    if sys.argv[1] == "line":
        asyncio.run(line(int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else "127.0.0.1"))
    elif sys.argv[1] == "server":
        asyncio.run(serve(int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else "127.0.0.1"))
    else:
        host = sys.argv[4] if len(sys.argv) > 4 else "127.0.0.1"
        sys.exit(0 if asyncio.run(client(host, int(sys.argv[2]), int(sys.argv[3]))) else 1)
