"""The REST server's fast path (serving/fastpath.py): which requests it reads itself, the
hand-over of a connection to aiohttp, answers equal to aiohttp's, idle connections and
graceful shutdown."""

from __future__ import annotations

import json
import random
import socket
import threading
import time

import numpy as np
import pytest

from tensorflux.serving.fastpath import parse
from tensorflux.serving.manager import ModelManager
from tensorflux.serving.server import BackgroundServer
from tests.fuzz.fuzz_util import mutate_bytes
from tests.serving import models
from tests.serving.conftest import write_version

X = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
BODY = json.dumps({"instances": X}).encode()
PREDICT = (b"POST /v1/models/m:predict HTTP/1.1\r\nHost: x\r\n"
           b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(BODY) + BODY)
CHUNKED = (b"POST /v1/models/m:predict HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
           + b"%x\r\n" % len(BODY) + BODY + b"\r\n0\r\n\r\n")
# aiohttp's answers name it; the fast path's do not.
AIOHTTP = b"aiohttp"


def _req(head: bytes, body: bytes = b"", host: bytes = b"\r\nHost: x") -> bytes:
    """A request: the request line, `host`, the other header lines of `head`, `body`."""
    line, _, rest = head.partition(b"\r\n")
    return line + host + (b"\r\n" + rest if rest else b"") + b"\r\n\r\n" + body


@pytest.mark.parametrize("data,want", [
    (PREDICT, ("POST", "/v1/models/m:predict", BODY)),
    (PREDICT + b"GET /next", ("POST", "/v1/models/m:predict", BODY)),  # the next one waits
    (_req(b"GET /v1/models/m HTTP/1.1"), ("GET", "/v1/models/m", b"")),
    (_req(b"GET /v1/models/m/versions/1/metadata HTTP/1.1"),
     ("GET", "/v1/models/m/versions/1/metadata", b"")),
    (_req(b"POST /v1/models/m:predict HTTP/1.1\r\nContent-Length:  2 \r\n"
          b"Connection: Keep-Alive", b"{}"), ("POST", "/v1/models/m:predict", b"{}")),
    # Everything below goes to aiohttp: None.
    (PREDICT[:-1], None),                                        # body not whole yet
    (PREDICT[:40], None),                                        # headers not whole yet
    (CHUNKED, None),
    (_req(b"POST /v1/models/m:predict HTTP/1.1\r\nContent-Length: 2\r\n"
          b"Content-Encoding: gzip", b"{}"), None),
    (_req(b"POST /v1/models/m:predict HTTP/1.1\r\nContent-Length: 2\r\nExpect: 100-continue",
          b"{}"), None),
    (_req(b"POST /v1/models/m:predict HTTP/1.1\r\nContent-Length: 2\r\nConnection: close",
          b"{}"), None),
    (_req(b"POST /v1/models/m:predict HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 2",
          b"{}"), None),                                         # two lengths
    (_req(b"POST /v1/models/m:predict HTTP/1.1\r\nContent-Length: +2", b"{}"), None),
    (_req(b"POST /v1/models/m:predict HTTP/1.1\r\nContent-Length: 99999", b"{}"), None),
    (_req(b"POST /v1/models/m:predict HTTP/1.1"), None),         # no length
    (_req(b"GET /v1/models/m HTTP/1.1\r\nContent-Length: 2", b"{}"), None),
    (_req(b"POST /v1/models/m:predict HTTP/1.0\r\nContent-Length: 2", b"{}"), None),
    (_req(b"PUT /v1/models/m:predict HTTP/1.1\r\nContent-Length: 2", b"{}"), None),
    (_req(b"GET /healthz HTTP/1.1"), None),                      # other routes
    (_req(b"GET /v1/models/m%2F HTTP/1.1"), None),               # escapes, queries
    (_req(b"GET /v1/models/m?x=1 HTTP/1.1"), None),
    (_req(b"GET /v1/models/../m HTTP/1.1"), None),               # dot and empty segments
    (_req(b"GET /v1/models//m HTTP/1.1"), None),
    (_req(b"GET  /v1/models/m HTTP/1.1"), None),                 # two spaces
    (_req(b"GET /v1/models/m HTTP/1.1\r\n X: x"), None),         # obs-fold
    (_req(b"GET /v1/models/m HTTP/1.1\r\nX : x"), None),         # space before the colon
    (_req(b"GET /v1/models/m HTTP/1.1\r\nX: x\ny: z"), None),     # bare LF
    (_req(b"GET /v1/models/m HTTP/1.1\r\nX: \xe9"), None),       # non-ASCII
    (_req(b"GET /v1/models/m HTTP/1.1\r\nX: \x00"), None),       # control byte
    (_req(b"GET /v1/models/m HTTP/1.1", host=b""), None),        # no Host
    (_req(b"GET /v1/models/m HTTP/1.1\r\nHost: y"), None),       # two
    (_req(b"GET /v1/models/m HTTP/1.1\r\nX-" + b"a" * 9000), None),  # huge headers
])
def test_parse_reads_only_the_simple_form(data, want):
    got = parse(data, 4096)
    if want is None:
        assert got is None
    else:
        method, path, body = want
        assert got is not None and got[:3] == (method, path, body)
        assert data[:got[3]].endswith(body) and got[3] <= len(data)


def _answers(sock: socket.socket, n: int, timeout: float = 30.0) -> list[tuple[bytes, bytes]]:
    """`n` answers (head, body) read off `sock` (Content-Length framed)."""
    sock.settimeout(timeout)
    buf, out = b"", []
    while len(out) < n:
        end = buf.find(b"\r\n\r\n")
        if end >= 0:
            head = buf[:end]
            length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length:"))
            if len(buf) >= end + 4 + length:
                out.append((head, buf[end + 4:end + 4 + length]))
                buf = buf[end + 4 + length:]
                continue
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed after {len(out)} answers")
        buf += chunk
    return out


@pytest.fixture(scope="module")
def manager(tmp_path_factory, export_root):
    base = str(tmp_path_factory.mktemp("models"))
    write_version(base, 1, 1.0, export_root)
    m = ModelManager("m", base, poll_wait_seconds=0)
    m.start()
    yield m
    m.stop()


def _check_prediction(head: bytes, body: bytes) -> None:
    assert head.startswith(b"HTTP/1.1 200 OK"), head
    np.testing.assert_allclose(json.loads(body)["predictions"], models.expected_y(X, 1.0))


def test_a_connection_moves_to_aiohttp_at_its_first_other_request(manager):
    with BackgroundServer(manager) as srv, \
            socket.create_connection(("127.0.0.1", srv.port), timeout=30) as s:
        s.sendall(PREDICT)
        [(head, body)] = _answers(s, 1)
        _check_prediction(head, body)
        assert AIOHTTP not in head
        # Pipelined: a simple request, a chunked one, a simple one: answered in order; the
        # chunked one and everything after it by aiohttp.
        s.sendall(PREDICT + CHUNKED + PREDICT)
        answers = _answers(s, 3)
        for head, body in answers:
            _check_prediction(head, body)
        assert [AIOHTTP in head for head, _ in answers] == [False, True, True]


@pytest.mark.parametrize("batching", [False, True])
def test_pipelined_requests_answered_at_once_keep_their_order(manager, batching):
    status = _req(b"GET /v1/models/m HTTP/1.1")
    with BackgroundServer(manager, enable_batching=batching, max_batch_size=4,
                          batch_timeout_micros=0) as srv, \
            socket.create_connection(("127.0.0.1", srv.port), timeout=30) as s:
        for _ in range(3):  # measured on a worker first, then answered on the loop
            s.sendall(PREDICT)
            _check_prediction(*_answers(s, 1)[0])
        s.sendall(PREDICT * 2 + status + PREDICT * 3)
        answers = _answers(s, 6)
    assert not any(AIOHTTP in head for head, _ in answers)
    for k, (head, body) in enumerate(answers):
        if k == 2:
            assert json.loads(body)["model_version_status"][0]["state"] == "AVAILABLE"
        else:
            _check_prediction(head, body)


def _exchange(port: int, data: bytes) -> tuple[int, dict]:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(data)
        [(head, body)] = _answers(s, 1)
    assert b"Content-Type: application/json" in head
    return int(head.split(b" ")[1]), json.loads(body)


@pytest.mark.parametrize("request_bytes", [
    PREDICT,
    _req(b"POST /v1/models/m:predict HTTP/1.1\r\nContent-Length: 4", b"{not"),
    _req(b"POST /v1/models/m:predict HTTP/1.1\r\nContent-Length: 14", b'{"instances":1'),
    _req(b"POST /v1/models/m/versions/7:predict HTTP/1.1\r\nContent-Length: 2", b"{}"),
    _req(b"POST /v1/models/m:explain HTTP/1.1\r\nContent-Length: 2", b"{}"),
    _req(b"POST /v1/models/other:predict HTTP/1.1\r\nContent-Length: 2", b"{}"),
    _req(b"GET /v1/models/m HTTP/1.1"),
    _req(b"GET /v1/models/m/metadata HTTP/1.1"),
    _req(b"GET /v1/models/m/labels/x HTTP/1.1"),
    _req(b"GET /v1/models/m:predict HTTP/1.1"),
])
def test_answers_equal_aiohttps(manager, request_bytes):
    assert parse(request_bytes, 1 << 20) is not None  # a request of the fast path
    with BackgroundServer(manager) as fast, BackgroundServer(manager, fast_path=False) as slow:
        assert _exchange(fast.port, request_bytes) == _exchange(slow.port, request_bytes)


def test_idle_connections_close_after_the_request_timeout(manager):
    with BackgroundServer(manager, request_timeout_seconds=0.2) as srv, \
            socket.create_connection(("127.0.0.1", srv.port), timeout=30) as s:
        s.sendall(PREDICT)
        _check_prediction(*_answers(s, 1)[0])
        start = time.monotonic()
        assert s.recv(1) == b""
        assert time.monotonic() - start < 10


def test_shutdown_finishes_the_request_in_flight_and_closes_idle_connections(manager):
    with manager.acquire() as servable:
        started, gate = threading.Event(), threading.Event()
        run = servable.run

        def gated(*args):
            started.set()
            gate.wait(30)
            return run(*args)
        servable.run = gated
    try:
        srv = BackgroundServer(manager, inline_run_micros=0)  # runs on a worker thread
        busy = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
        idle = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
        busy.sendall(PREDICT)
        assert started.wait(30)
        stopper = threading.Thread(target=srv.stop)
        stopper.start()
        assert idle.recv(1) == b""  # an idle connection closes at once
        with pytest.raises(OSError):  # no new connections
            for _ in range(50):
                socket.create_connection(("127.0.0.1", srv.port), timeout=5).close()
                time.sleep(0.1)
        assert stopper.is_alive()  # waiting for the request in flight
        gate.set()
        [(head, body)] = _answers(busy, 1)
        _check_prediction(head, body)
        assert b"Connection: close" in head
        stopper.join(30)
        assert not stopper.is_alive()
        busy.close()
        idle.close()
    finally:
        gate.set()
        del servable.run


def _exchange_any(port: int, data: bytes) -> tuple[int | None, bytes]:
    """(status, body) of the first answer to `data` on a fresh connection (None: none)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(data)
        try:
            [(head, body)] = _answers(s, 1, timeout=10)
        except (ConnectionError, OSError):
            return None, b""
    return int(head.split(b" ")[1]), body


def test_mutated_requests_it_reads_get_aiohttps_answers(manager):
    """Seeded byte mutations of two requests: each that the fast path reads whole (nothing
    after it) gets the status and body aiohttp gives it."""
    rng = random.Random(19)
    bases = [PREDICT, _req(b"GET /v1/models/m/metadata HTTP/1.1\r\nAccept: */*")]
    cases = []
    while len(cases) < 150:
        data = mutate_bytes(rng.choice(bases), [
            (rng.choice(["flip", "set", "insert", "delete", "duplicate", "zero"]),
             rng.random(), rng.randrange(256), rng.randint(1, 4))
            for _ in range(rng.randint(1, 2))])
        got = parse(data, 1 << 20)
        if got is not None and got[3] == len(data):
            cases.append(data)
    with BackgroundServer(manager, request_timeout_seconds=1.0) as fast, \
            BackgroundServer(manager, fast_path=False, request_timeout_seconds=1.0) as slow:
        for data in cases:
            assert _exchange_any(fast.port, data) == _exchange_any(slow.port, data), data
