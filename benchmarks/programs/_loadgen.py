"""A cheap HTTP/1.1 load generator for the serving benchmarks, run as a process of its own.

    python benchmarks/programs/_loadgen.py URL BODY_FILE CLIENTS WARMUP_S SECONDS

Each of CLIENTS simulated clients holds one keep-alive connection and sends the same
prepared POST (Content-Type: application/json, the body read from BODY_FILE) again as
soon as its answer is complete (Content-Length framed, as aiohttp's server answers). One
thread, one `selectors` loop over non-blocking sockets: no asyncio, no HTTP library, so a
request costs the generator a few syscalls and a header search (~10-20 us of CPU), and it
runs in its own process so that it never holds the server's GIL. The server shares the
machine's cores with it all the same: the generator's own CPU time is reported so that the
figures can say how much of the machine it took.

Prints one JSON line: {"latencies_s": [round trips of the timed window], "requests": n,
"cpu_s": the generator's CPU time over the timed window, "wall_s": its length,
"errors": non-200 answers}. Requests that straddle the window's edges are not counted.
"""

from __future__ import annotations

import json
import re
import selectors
import socket
import sys
import time
import urllib.parse

_CONTENT_LENGTH = re.compile(rb"\r\ncontent-length:[ \t]*(\d+)", re.IGNORECASE)


class _Client:
    __slots__ = ("sock", "buf", "t0")

    def __init__(self, sock):
        self.sock, self.buf, self.t0 = sock, bytearray(), 0.0


def _answer_size(buf: bytearray) -> int:
    """The byte length of the first complete answer in `buf`, or 0 while incomplete."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return 0
    m = _CONTENT_LENGTH.search(buf, 0, end + 2)
    if m is None:
        raise RuntimeError(f"answer without Content-Length: {bytes(buf[:200])!r}")
    size = end + 4 + int(m.group(1))
    return size if len(buf) >= size else 0


def run(url: str, body: bytes, clients: int, warmup: float, seconds: float) -> dict:
    parts = urllib.parse.urlsplit(url)
    request = (f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
               f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
               ).encode() + body
    sel = selectors.DefaultSelector()
    conns = []
    for _ in range(clients):
        s = socket.create_connection((parts.hostname, parts.port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setblocking(False)
        c = _Client(s)
        conns.append(c)
        sel.register(s, selectors.EVENT_READ, c)
    clock = time.perf_counter
    t_start = clock()
    t_begin, t_end = t_start + warmup, t_start + warmup + seconds
    latencies: list[float] = []
    errors = 0
    for c in conns:
        c.t0 = clock()
        c.sock.sendall(request)
    cpu0 = cpu1 = None
    live = len(conns)
    while live:
        for key, _ in sel.select(timeout=1.0):
            c = key.data
            data = c.sock.recv(65536)
            if not data:
                raise RuntimeError("connection closed by the server")
            c.buf += data
            size = _answer_size(c.buf)
            if not size:
                continue
            t1 = clock()
            if c.buf[9:12] != b"200":
                errors += 1
            del c.buf[:size]
            if c.t0 >= t_begin and t1 <= t_end:
                latencies.append(t1 - c.t0)
            if cpu0 is None and t1 >= t_begin:
                cpu0 = time.process_time()
            if t1 >= t_end:
                if cpu1 is None:
                    cpu1 = time.process_time()
                sel.unregister(c.sock)
                live -= 1
                continue
            c.t0 = t1
            c.sock.sendall(request)
    for c in conns:
        c.sock.close()
    return {"latencies_s": latencies, "requests": len(latencies),
            "cpu_s": (cpu1 - cpu0) if cpu0 is not None and cpu1 is not None else 0.0,
            "wall_s": seconds,
            "errors": errors}


def main(argv) -> None:
    url, body_file, clients, warmup, seconds = argv
    with open(body_file, "rb") as f:
        body = f.read()
    print(json.dumps(run(url, body, int(clients), float(warmup), float(seconds))), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
