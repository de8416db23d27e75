"""A TCP proxy that goes dead in the middle, as a frozen middlebox or a lost path does: it forwards
to TARGET_PORT on 127.0.0.1, and STALL_AFTER seconds into its first connection it stops reading
from the client (a small receive buffer, so the client's writes soon block) and closes the
upstream side (so the server lets the stream go). Later connections are forwarded whole.
Prints "stalled" when it has.

usage: stalling_proxy.py PORT TARGET_PORT STALL_AFTER
"""
import asyncio
import socket
import sys

port, target, stall_after = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
connections = 0


async def pipe(reader, writer, stop):
    try:
        while not stop.is_set():
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass


async def serve(client_reader, client_writer):
    global connections
    connections += 1
    first = connections == 1
    try:
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", target)
    except OSError:
        client_writer.close()  # the server has gone: refused, as it would be directly
        return
    stop = asyncio.Event()
    up = asyncio.create_task(pipe(client_reader, upstream_writer, stop))
    down = asyncio.create_task(pipe(upstream_reader, client_writer, stop))
    if not first:
        await asyncio.wait([up, down], return_when=asyncio.FIRST_COMPLETED)
        client_writer.close()
        upstream_writer.close()
        return
    await asyncio.sleep(stall_after)
    stop.set()
    up.cancel()
    down.cancel()
    upstream_writer.close()
    print("stalled", flush=True)
    await asyncio.sleep(3600)  # the client's side stays open, never read again


async def main():
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)  # inherited by accepted sockets
    listener.bind(("127.0.0.1", port))
    server = await asyncio.start_server(serve, sock=listener)
    async with server:
        await server.serve_forever()

asyncio.run(main())
