"""tensorflux-serve under load on loopback: the digits CNN behind `:predict`.

tensorflux only: TensorFlow Serving (the C++ model server) is not installed here, so under
`--backend tensorflow` every figure is reported as not measurable.

The CNN of examples/serving/export_digits.py (untrained weights: serving cost does not
depend on them) is exported with `tf.saved_model.simple_save` and served by two
`tensorflux-serve` processes per configuration (plain; `--enable_batching --max_batch_size
64 --batch_timeout_micros 1000`; that plus a batch-closing rule). The load generator is this
process, on one event loop, each simulated client sending 1-instance row-format requests back
to back over one keep-alive connection: by default (`--client process`) `_loadgen.py` in a
process of its own (one `selectors` loop over raw sockets, ~10-20 us of CPU per request,
never holding the server's GIL; its CPU share of the machine is reported as
serving_loadgen_cpu_share), with `--client raw` a minimal asyncio HTTP/1.1 client in this
process (about 60-100 us of CPU per request on the 2-core machine), with `--client
aiohttp` aiohttp's client (about 200-300 us: the generator of the earlier figures). The
generator shares the server's cores, so the cheaper it is, the more the figures measure the
server.

- latency: 8 concurrent clients, unbatched and batched servers (also batched with
  --batch_close_when_idle, and with --batch_when_model_idle; unbatched with
  --rest_api_processes 2, and with --no_fast_path: aiohttp reading every request), 1.0 s
  warm-up then
  --seconds timed; p50 and p99 of the request round trip in ms (issue 19's targets:
  p50 <= 2 ms, p99 <= 10 ms); and the unbatched servers' CPU time per request (all their
  processes).
- the floor: a bare aiohttp server answering every POST with a fixed prediction-sized JSON
  body (no model, no decoding), under the same load generator and 8 clients: the server
  cannot answer faster than aiohttp alone, so when this p50 is above 2 ms so is every
  figure above.
- throughput: 64 concurrent clients, unbatched and batched (TF Serving's rule, and with
  --batch_when_model_idle), requests per second; and batched / unbatched (target >= 3x).
  Also the server process's CPU time per request (/proc, all threads) over the same
  window, and its unbatched / batched ratio: where the load generator shares the server's
  cores, the requests per second are capped by the client too, and the CPU ratio is what a
  server with cores of its own would gain.

Client and servers share the machine's cores, so the figures bound what the server does
alone from below.

    python benchmarks/programs/serving_latency.py [--seconds 5] [--client process|raw|aiohttp]
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.parse

import numpy as np
from _bench import BACKEND, emit, emit_error, guarded

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LATENCY_NAMES = ("serving_p50_ms", "serving_p99_ms", "serving_batched_p50_ms",
                 "serving_batched_p99_ms", "serving_batched_idle_p50_ms",
                 "serving_batched_idle_p99_ms", "serving_batched_model_idle_p50_ms",
                 "serving_batched_model_idle_p99_ms", "serving_cpu_us_per_req_8",
                 "serving_2proc_p50_ms", "serving_2proc_p99_ms", "serving_2proc_cpu_us_per_req_8",
                 "serving_aiohttp_p50_ms", "serving_aiohttp_p99_ms",
                 "serving_aiohttp_cpu_us_per_req_8",
                 "serving_http_floor_p50_ms", "serving_http_floor_p99_ms")
THROUGHPUT_NAMES = ("serving_unbatched_rps_64", "serving_batched_rps_64",
                    "serving_batching_speedup_64", "serving_unbatched_cpu_us_per_req",
                    "serving_batched_cpu_us_per_req", "serving_batching_cpu_saving_64",
                    "serving_batched_model_idle_rps_64", "serving_batching_model_idle_speedup_64",
                    "serving_batched_model_idle_cpu_us_per_req")
NAMES = LATENCY_NAMES + THROUGHPUT_NAMES + ("serving_loadgen_cpu_share",)
BATCHING = ("--enable_batching", "--max_batch_size", "64", "--batch_timeout_micros", "1000")
MODEL_IDLE = BATCHING + ("--batch_when_model_idle",)
# The floor: aiohttp alone, answering a fixed body of the size of a digits prediction.
ECHO_SERVER = """
import asyncio
from aiohttp import web

ANSWER = (b'{"predictions":[{"classes":3,"probabilities":['
          + b','.join([b'0.10000000149011612'] * 10) + b']}]}')

async def answer(request):
    await request.read()
    return web.Response(body=ANSWER, content_type="application/json")

async def main():
    app = web.Application()
    app.router.add_post("/v1/models/digits:predict", answer)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    port = runner.addresses[0][1]
    print(f"echo: model digits at http://127.0.0.1:{port}/v1/models/digits", flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""
SECONDS = float(next((sys.argv[i + 1] for i, a in enumerate(sys.argv[:-1])
                      if a == "--seconds"), 5.0))
CLIENT = next((sys.argv[i + 1] for i, a in enumerate(sys.argv[:-1]) if a == "--client"),
              "process")
if CLIENT not in ("process", "raw", "aiohttp"):
    raise SystemExit(f"--client must be process, raw or aiohttp, not {CLIENT!r}")
LOADGEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_loadgen.py")
GENERATOR_SHARES: list[float] = []  # the load generator's CPU / (wall * cores), per window
_CONTENT_LENGTH = re.compile(rb"\r\ncontent-length:[ \t]*(\d+)", re.IGNORECASE)


class _RawClient(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection sending a prepared request and waiting for each
    answer (Content-Length framed, as aiohttp's server sends them): tens of microseconds of
    CPU per request, where aiohttp's client takes about 200, on the cores the server
    shares."""

    def __init__(self, request: bytes):
        self._request, self._buf, self._fut, self._transport = request, bytearray(), None, None

    def connection_made(self, transport):
        self._transport = transport

    def data_received(self, data):
        self._buf += data
        end = self._buf.find(b"\r\n\r\n")
        if end < 0:
            return
        m = _CONTENT_LENGTH.search(self._buf, 0, end + 2)
        if m is None:
            self._fail(RuntimeError(f"answer without Content-Length: {bytes(self._buf[:200])}"))
            return
        size = end + 4 + int(m.group(1))
        if len(self._buf) >= size and self._fut is not None and not self._fut.done():
            status = int(self._buf[9:12])
            del self._buf[:size]
            self._fut.set_result(status)

    def connection_lost(self, exc):
        self._fail(exc or ConnectionResetError("connection closed by the server"))

    def _fail(self, exc):
        if self._fut is not None and not self._fut.done():
            self._fut.set_exception(exc)

    def post(self):
        self._fut = asyncio.get_running_loop().create_future()
        self._transport.write(self._request)
        return self._fut

    def close(self):
        self._transport.close()


def export(base: str) -> None:
    sys.path.insert(0, os.path.join(ROOT, "examples", "serving"))
    from export_digits import build_model

    import tensorflux as tf
    with tf.Graph().as_default(), tf.Session() as sess:
        images, _, probabilities, classes, _, _ = build_model()
        sess.run(tf.global_variables_initializer())
        tf.saved_model.simple_save(sess, os.path.join(base, "1"), inputs={"images": images},
                                   outputs={"probabilities": probabilities,
                                            "classes": classes})


def start_server(base: str, *flags: str):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = ([sys.executable, "-c", ECHO_SERVER] if flags == ("--echo",) else
           [sys.executable, "-m", "tensorflux.serving.server", "--model_name", "digits",
            "--model_base_path", base, "--rest_api_port", "0", *flags])
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env=env)
    line = proc.stdout.readline()
    if " at " not in line:
        proc.kill()
        raise RuntimeError(f"tensorflux-serve did not start: {line!r}")
    return proc, line.split(" at ")[1].strip() + ":predict"


def _body() -> bytes:
    return ('{"instances": [' + str(np.random.default_rng(0).random((8, 8, 1)).round(3)
                                    .tolist()) + ']}').encode()


async def load_in_process(url: str, clients: int, warmup: float, seconds: float):
    """(latencies, requests, generator CPU seconds) from `_loadgen.py` in a process of its
    own (`--client process`, the default)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        f.write(_body())
        f.flush()
        proc = await asyncio.create_subprocess_exec(
            sys.executable, LOADGEN, url, f.name, str(clients), str(warmup), str(seconds),
            stdout=asyncio.subprocess.PIPE)
        out, _ = await proc.communicate()
    if proc.returncode:
        raise RuntimeError(f"the load generator failed (exit {proc.returncode})")
    doc = json.loads(out)
    if doc["errors"]:
        raise RuntimeError(f"{doc['errors']} answers were not HTTP 200")
    return np.array(doc["latencies_s"]), doc["requests"], doc["cpu_s"]


async def load(url: str, clients: int, warmup: float, seconds: float):
    """(latencies in seconds of the timed window, requests completed in it, the generator's
    CPU seconds over the window or None when it is this process)."""
    if CLIENT == "process":
        return await load_in_process(url, clients, warmup, seconds)
    body = _body()
    latencies: list[float] = []
    t_start = time.perf_counter()
    t_begin, t_end = t_start + warmup, t_start + warmup + seconds

    async def timed(post):
        while True:
            t0 = time.perf_counter()
            if t0 >= t_end:
                return
            status = await post()
            if status != 200:
                raise RuntimeError(f"HTTP {status}")
            t1 = time.perf_counter()
            if t0 >= t_begin and t1 <= t_end:
                latencies.append(t1 - t0)

    if CLIENT == "raw":
        parts = urllib.parse.urlsplit(url)
        request = (f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
                   f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                   ).encode() + body

        async def client():
            _, conn = await asyncio.get_running_loop().create_connection(
                lambda: _RawClient(request), parts.hostname, parts.port)
            try:
                await timed(conn.post)
            finally:
                conn.close()
        await asyncio.gather(*[client() for _ in range(clients)])
        return np.array(latencies), len(latencies), None

    import aiohttp
    conn = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=conn) as session:
        async def post():
            async with session.post(url, data=body,
                                    headers={"Content-Type": "application/json"}) as r:
                await r.read()
                return r.status
        await asyncio.gather(*[timed(post) for _ in range(clients)])
    return np.array(latencies), len(latencies), None


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and its child processes (--rest_api_processes)
    so far (Linux /proc), all their threads."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    total = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            total += sum(cpu_seconds(int(child)) for child in f.read().split())
    return total


def measure(base: str, clients: int, *flags: str):
    """(latencies, requests completed, server CPU seconds per request) of one window; the
    generator's share of the machine's cores goes to GENERATOR_SHARES."""
    proc, url = start_server(base, *flags)
    try:
        async def timed():
            async def cpu_at(t):
                await asyncio.sleep(t)
                return cpu_seconds(proc.pid)
            window = asyncio.gather(cpu_at(1.0), cpu_at(1.0 + SECONDS))
            lat, n, gen_cpu = await load(url, clients, 1.0, SECONDS)
            c0, c1 = await window
            if gen_cpu is not None:
                GENERATOR_SHARES.append(gen_cpu / SECONDS / (os.cpu_count() or 1))
            return lat, n, (c1 - c0) / max(n, 1)
        return asyncio.run(timed())
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def main() -> None:
    if BACKEND == "tensorflow":
        for name in NAMES:
            emit_error(name, RuntimeError("TensorFlow Serving is not installed: "
                                          "tensorflux-serve only"))
        return
    with tempfile.TemporaryDirectory() as base:
        export(base)
        for prefix, flags, what in (
                ("serving", (), "unbatched"), ("serving_batched", BATCHING, "batched"),
                ("serving_batched_idle", BATCHING + ("--batch_close_when_idle",),
                 "batched, close when idle"),
                ("serving_batched_model_idle", MODEL_IDLE, "batched, run when model idle"),
                ("serving_2proc", ("--rest_api_processes", "2"),
                 "unbatched, 2 processes on the port (--rest_api_processes 2)"),
                ("serving_aiohttp", ("--no_fast_path",),
                 "unbatched, every request through aiohttp's handler (--no_fast_path)"),
                ("serving_http_floor", ("--echo",), "bare aiohttp fixed answer, no model")):
            with guarded(f"{prefix}_p50_ms", f"{prefix}_p99_ms"):
                lat, _, cpu = measure(base, 8, *flags)
                for q, target in ((50, 2), (99, 10)):
                    emit(f"{prefix}_p{q}_ms", np.percentile(lat, q) * 1e3, "ms", "lower",
                         label=f"digits CNN :predict, 1 instance, 8 clients, {what}, p{q}",
                         note=f"target <= {target} ms")
                if prefix in ("serving", "serving_2proc", "serving_aiohttp"):
                    emit(f"{prefix}_cpu_us_per_req_8", cpu * 1e6, "us", "lower",
                         label=f"server CPU time per request, 8 clients, {what}")
        with guarded(*THROUGHPUT_NAMES):
            _, n_plain, cpu_plain = measure(base, 64)
            _, n_batched, cpu_batched = measure(base, 64, *BATCHING)
            _, n_idle, cpu_idle = measure(base, 64, *MODEL_IDLE)
            emit("serving_unbatched_cpu_us_per_req", cpu_plain * 1e6, "us", "lower",
                 label="server CPU time per request, 64 clients, unbatched")
            emit("serving_batched_cpu_us_per_req", cpu_batched * 1e6, "us", "lower",
                 label="server CPU time per request, 64 clients, batched")
            emit("serving_batched_model_idle_cpu_us_per_req", cpu_idle * 1e6, "us", "lower",
                 label="server CPU time per request, 64 clients, batched, run when model idle")
            emit("serving_batching_cpu_saving_64", cpu_plain / max(cpu_batched, 1e-9), "x",
                 "higher", label="unbatched / batched server CPU per request at 64 clients",
                 note="the throughput ratio a server with its own cores would see")
            emit("serving_unbatched_rps_64", n_plain / SECONDS, "req/s", "higher",
                 label="digits CNN :predict, 64 clients, unbatched")
            emit("serving_batched_rps_64", n_batched / SECONDS, "req/s", "higher",
                 label="digits CNN :predict, 64 clients, batched (max 64, 1 ms)")
            emit("serving_batched_model_idle_rps_64", n_idle / SECONDS, "req/s", "higher",
                 label="digits CNN :predict, 64 clients, batched, run when model idle")
            emit("serving_batching_speedup_64", n_batched / max(n_plain, 1), "x", "higher",
                 label="batched / unbatched throughput at 64 clients", note="target >= 3x")
            emit("serving_batching_model_idle_speedup_64", n_idle / max(n_plain, 1), "x",
                 "higher", label="batched (run when model idle) / unbatched throughput at 64 "
                 "clients", note="target >= 3x")
        if GENERATOR_SHARES:
            emit("serving_loadgen_cpu_share", float(np.median(GENERATOR_SHARES)) * 100, "%",
                 "lower", label="the load generator's CPU, % of the machine's cores (median "
                 "over the windows)", note=f"max {max(GENERATOR_SHARES) * 100:.0f}%")


main()
