#!/usr/bin/python3
"""A python asyncio echo server and a client that checks every octet (tests/apps).

  asyncio_echo.py server PORT     serves until a client sends b"quit\n" on its own connection
  asyncio_echo.py client PORT N   N connections at once, each sends 1 MiB in pieces and reads
                                  it back; exits 0 only if every octet came back in order
"""
import asyncio
import hashlib
import sys


async def serve(port):
    stop = asyncio.Event()

    async def handle(reader, writer):
        while data := await reader.read(65536):
            if data == b"quit\n":
                stop.set()
                break
            writer.write(data)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port)
    async with server:
        await stop.wait()


async def one(port, seed):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
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


async def client(port, n):
    results = await asyncio.gather(*(one(port, s) for s in range(n)))
    _, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"quit\n")
    await writer.drain()
    writer.close()
    print(f"{sum(results)}/{n} connections echoed 1 MiB intact")
    return all(results)


if __name__ == "__main__":
    if sys.argv[1] == "server":
        asyncio.run(serve(int(sys.argv[2])))
    else:
        sys.exit(0 if asyncio.run(client(int(sys.argv[2]), int(sys.argv[3]))) else 1)
