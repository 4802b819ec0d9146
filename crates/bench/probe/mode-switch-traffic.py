#!/usr/bin/env python3
"""Traffic for mode-switch-gap.sh (run inside network namespaces by it).

  mode-switch-traffic.py server PORT
      TCP echo server (one byte back per byte in) on 0.0.0.0:PORT.
  mode-switch-traffic.py client IP PORT RATE LONG STOPFILE OUT
      LONG long-lived connections, each sending one byte every 100 ms and expecting it back within 2 s
      (a broken one is not reopened), and RATE new connections per second, each connect (1 s timeout),
      one byte there and back (1 s timeout), close. Runs until STOPFILE exists, then writes to OUT one line
      per event: "new <unix time> ok|<error>" and "long <unix time> <index> broken <error>".
"""
import asyncio
import os
import sys
import time

events = []


async def echo(reader, writer):
    try:
        while True:
            data = await reader.read(4096)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except Exception:
        pass
    finally:
        writer.close()


async def server(port):
    srv = await asyncio.start_server(echo, "0.0.0.0", port, backlog=1024)
    async with srv:
        await srv.serve_forever()


async def one_new(ip, port):
    t = time.time()
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(ip, port), 1.0)
        try:
            writer.write(b"x")
            data = await asyncio.wait_for(reader.read(1), 1.0)
            result = "ok" if data == b"x" else "eof"
        finally:
            writer.close()
    except Exception as e:  # the failure's kind is the figure
        result = type(e).__name__ or "error"
    events.append(f"new {t:.3f} {result}")


async def long_lived(ip, port, index, stop):
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(ip, port), 2.0)
    except Exception as e:
        events.append(f"long {time.time():.3f} {index} broken open-{type(e).__name__}")
        return
    while not stop.is_set():
        try:
            writer.write(b"y")
            data = await asyncio.wait_for(reader.read(1), 2.0)
            if data != b"y":
                raise ConnectionError("eof")
        except Exception as e:
            events.append(f"long {time.time():.3f} {index} broken {type(e).__name__}")
            return
        await asyncio.sleep(0.1)
    writer.close()
    events.append(f"long {time.time():.3f} {index} alive")


async def client(ip, port, rate, nlong, stopfile, out):
    stop = asyncio.Event()
    longs = [asyncio.create_task(long_lived(ip, port, i, stop)) for i in range(nlong)]
    pending = set()
    interval = 1.0 / rate
    next_at = time.monotonic()
    while not os.path.exists(stopfile):
        task = asyncio.create_task(one_new(ip, port))
        pending.add(task)
        task.add_done_callback(pending.discard)
        next_at += interval
        await asyncio.sleep(max(0.0, next_at - time.monotonic()))
    stop.set()
    await asyncio.gather(*longs, *pending, return_exceptions=True)
    with open(out, "w") as f:
        f.write("\n".join(events) + "\n")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "server":
        asyncio.run(server(int(sys.argv[2])))
    elif len(sys.argv) == 8 and sys.argv[1] == "client":
        _, _, ip, port, rate, nlong, stopfile, out = sys.argv
        asyncio.run(client(ip, int(port), float(rate), int(nlong), stopfile, out))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
