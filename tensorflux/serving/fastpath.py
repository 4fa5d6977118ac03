"""The REST server's connections: the common request answered past aiohttp's machinery.

aiohttp costs ~75-85 us of CPU per keep-alive request on this machine (its protocol, the
request and response objects, the handler task's steps); an asyncio.Protocol that reads a
small request and writes the answer's bytes itself costs ~30 (measured under the same load
generator, `benchmarks/programs/_loadgen.py`). A predict request of a small model is a few
hundred microseconds in all, so the difference shows in the latency at 8 clients and in the
batched server's cost per request.

Every connection starts here (`_Connection`). A request of the simple form -- `GET` or
`POST` to a `/v1/models/...` target of plain characters, HTTP/1.1, headers of visible ASCII
with token names, one Host, at most one Content-Length (digits) and none of Transfer-Encoding,
Content-Encoding, Expect, Upgrade or a Connection other than keep-alive, the body within the
size limit and already received whole -- is answered by `ModelServer.handle` and written
here; the common `:predict` by `ModelServer.handle_now`, without a task, when its answer
can be computed at once (or, batched, when its batch's future is set). A header block is
checked once: a client sends the same one with every request, so what it says is kept
(`_HEADS`, bounded).

At the first bytes that are anything else (a partial request, a chunked or compressed body,
another route, a malformed line: `parse` returns None) the connection is handed, with
those bytes, to aiohttp's request handler for the rest of its life, so every other case
(413 before a body is read, 408 and idle timeouts on a half-sent request, framing errors,
lingering close) keeps aiohttp's behaviour. Only one of the two ever reads a given byte, and
a request is handed over only when no answer of this path is still being computed, so
answers keep their order.

Idle connections here close after the request timeout (a sweep, as aiohttp's keep-alive
timer does); `RestSite.stop` stops accepting, lets in-flight requests finish (up to the
grace time), closes the connections and then shuts aiohttp's side down.
"""

from __future__ import annotations

import asyncio
import email.utils
import http
import re
import socket
import time

__all__ = ["RestSite", "parse"]

# A request target of plain characters under /v1/models/ (no %-escapes, query or fragment:
# those go to aiohttp, which decodes them).
_TARGET = re.compile(rb"/v1/models/[A-Za-z0-9_.~!$&'()*+,;=:@/-]*")
_TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_HEAD_CHARS = re.compile(rb"[\t\r\n\x20-\x7e]*")  # visible ASCII, space, tab, CR, LF
_MAX_HEAD = 8190  # aiohttp's own line and header-block bound
# Headers that change how a body is framed or read: their requests go to aiohttp.
_HAND_OVER = frozenset((b"transfer-encoding", b"content-encoding", b"expect", b"upgrade"))
_MAX_PENDING = 1 << 20  # bytes buffered behind a request in progress before reading pauses


def parse(buf: bytes, max_body: int):
    """(method, path, body, length) of the request at the start of `buf` when it is of the
    simple form (module docstring) and whole, `length` the bytes it takes; else None."""
    end = buf.find(b"\r\n\r\n", 0, _MAX_HEAD + 4)
    if end < 0:
        return None
    head = buf[:end]
    known = _HEADS.get(head)
    if known is None:
        known = _parse_head(head)
        if len(_HEADS) >= _MAX_HEADS:
            _HEADS.clear()
        _HEADS[head] = known
    if not known:
        return None
    method, target, length = known
    if method == "POST":
        if length is None or length > max_body:
            return None
    elif length:
        return None
    start = end + 4
    stop = start + (length or 0)
    if len(buf) < stop:
        return None
    return method, target, buf[start:stop], stop


# Header blocks already read, and what they say: a client sends the same block with every
# request of a kind, so each is checked once (`_parse_head` depends on nothing else).
_HEADS: dict[bytes, tuple | bool] = {}
_MAX_HEADS = 256


def _parse_head(head: bytes) -> tuple[str, str, int | None] | bool:
    """(method, target, Content-Length or None) of a request's header block of the simple
    form; False for any other."""
    if head.count(b"\r") != head.count(b"\n") or head.count(b"\r\n") != head.count(b"\n") \
            or _HEAD_CHARS.fullmatch(head) is None:
        return False  # a bare CR or LF, a control or non-ASCII byte
    lines = head.split(b"\r\n")
    request_line = lines[0].split(b" ")
    if len(request_line) != 3:
        return False
    method, target, version = request_line
    if version != b"HTTP/1.1" or method not in (b"POST", b"GET") or \
            _TARGET.fullmatch(target) is None or b"/." in target or b"//" in target:
        return False  # (dot segments and empty ones: aiohttp normalizes those)
    length, hosts = None, 0
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if not sep or _TOKEN.fullmatch(name) is None:
            return False
        name = name.lower()
        if name == b"content-length":
            value = value.strip(b" \t")
            if length is not None or not value.isdigit() or len(value) > 18:
                return False
            length = int(value)
        elif name == b"host":
            hosts += 1
        elif name in _HAND_OVER:
            return False
        elif name == b"connection" and value.strip(b" \t").lower() != b"keep-alive":
            return False
    if hosts != 1:
        return False  # (aiohttp answers 400: HTTP/1.1 asks for one Host header)
    return method.decode(), target.decode(), length


_REASONS = {s.value: s.phrase.encode() for s in http.HTTPStatus}


class _Date:
    """The Date header's value, formatted once a second."""

    second, value = -1, b""

    @classmethod
    def now(cls) -> bytes:
        t = int(time.time())
        if t != cls.second:
            cls.value = email.utils.formatdate(t, usegmt=True).encode()
            cls.second = t
        return cls.value


def _answer_bytes(status: int, body: bytes, close: bool) -> bytes:
    return b"".join((b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\nDate: %s\r\n" % (
                         status, _REASONS.get(status, b"Unknown"), len(body), _Date.now()),
                     b"Connection: close\r\n\r\n" if close else b"\r\n", body))


_READ_BYTES = 1 << 16  # one read's buffer (a larger request takes several reads)


class _Connection(asyncio.BufferedProtocol):
    """One client connection while its requests are of the simple form (module docstring).

    It reads into its site's buffer (`get_buffer`, `buffer_updated`): a plain Protocol's
    transport receives into a fresh 256 KiB bytes object every read, ~12 us of CPU for a
    request of a few hundred bytes, where `recv_into` a reused buffer takes ~3."""

    __slots__ = ("site", "transport", "buf", "busy", "closing", "paused", "idle_since", "task")

    def __init__(self, site: RestSite):
        self.site = site
        self.transport = None
        self.buf = b""
        self.busy = self.closing = self.paused = False
        self.idle_since = 0.0
        self.task = None  # the request in progress (the loop holds tasks weakly)

    def connection_made(self, transport):
        self.transport = transport
        self.idle_since = self.site.loop.time()
        self.site.connections.add(self)
        if self.site.closing:
            self.closing = True
            transport.close()

    def connection_lost(self, exc):
        self.transport = None
        self.site.connections.discard(self)
        self.site.changed()

    def get_buffer(self, sizehint: int):
        return self.site.read_buffer

    def buffer_updated(self, nbytes: int) -> None:
        self.data_received(bytes(self.site.read_buffer[:nbytes]))

    def data_received(self, data):
        if self.closing:
            return
        self.buf = self.buf + data if self.buf else data
        if not self.busy:
            self._next()
        elif len(self.buf) > _MAX_PENDING and not self.paused:
            self.paused = True
            self.transport.pause_reading()

    def eof_received(self):
        return None  # close (aiohttp's handler does the same)

    def _next(self) -> None:
        """Answers the request at the start of the buffer: here when its answer is ready at
        once (ModelServer.handle_now), else in a task of its own (ModelServer.handle). Once
        it is answered, the next request buffered behind it is taken in a later turn of the
        loop, so that a client pipelining requests does not hold the loop."""
        request = parse(self.buf, self.site.max_body)
        if request is None:
            self._hand_over()
            return
        method, path, body, used = request
        self.buf = self.buf[used:]
        self.busy = True
        try:
            answer = self.site.handle_now(method, path, body)
        except BaseException:
            self._failed()
            raise
        if isinstance(answer, asyncio.Future):  # (a batched request, decoded and queued)
            self.task = answer
            answer.add_done_callback(self._answered)
        elif type(answer) is not tuple:
            self.task = self.site.loop.create_task(self._answer(
                self.site.handle(method, path, body) if answer is None else answer))
        elif self._write(*answer) and self.buf:
            self.busy = True
            self.site.loop.call_soon(self._resume)

    def _resume(self) -> None:
        self.busy = False
        if self.transport is not None and self.buf:
            self._next()

    async def _answer(self, answer) -> None:
        try:
            status, payload, close = await answer
        except BaseException:
            self._failed()
            raise
        if self._write(status, payload, close) and self.buf:
            self._next()

    def _answered(self, answer: asyncio.Future) -> None:
        try:
            status, payload, close = answer.result()
        except BaseException:
            self._failed()
            raise
        if self._write(status, payload, close) and self.buf:
            self._next()

    def _failed(self) -> None:
        if self.transport is not None:
            self.transport.abort()
        self.busy, self.task = False, None
        self.site.changed()

    def _write(self, status: int, payload: bytes, close: bool) -> bool:
        """Writes an answer; True when the connection goes on reading requests."""
        transport = self.transport
        self.busy, self.task = False, None
        self.idle_since = self.site.loop.time()
        if transport is None or transport.is_closing():
            self.site.changed()
            return False
        close = close or self.closing
        transport.write(_answer_bytes(status, payload, close))
        if close:
            self.closing = True
            transport.close()
            self.site.changed()
            return False
        if self.paused:
            self.paused = False
            transport.resume_reading()
        return True

    def _hand_over(self) -> None:
        """The rest of this connection to aiohttp's request handler, the unread bytes
        first."""
        self.site.connections.discard(self)
        handler = self.site.aiohttp_server()
        transport, data = self.transport, self.buf
        self.transport, self.buf = None, b""
        transport.set_protocol(handler)
        handler.connection_made(transport)
        if self.paused:
            transport.resume_reading()
        handler.data_received(data)


class RestSite:
    """The REST API's listening socket: connections start on the path above and go to
    `runner`'s aiohttp server when a request is not of the simple form.

    Args:
      server: the ModelServer (its `handle`, `max_request_bytes` and
        `request_timeout_seconds`).
      runner: a set-up web.AppRunner of `server.app()` (its `server` makes the handlers).
      reuse_port: set SO_REUSEPORT on the listening socket (several processes on a port).
      sock: a bound socket to listen on instead of host:port.
    """

    def __init__(self, server, runner, host: str, port: int, reuse_port: bool = False,
                 sock=None):
        self.handle = server.handle
        self.handle_now = server.handle_now
        self.max_body = server.max_request_bytes
        self.idle_timeout = server.request_timeout_seconds
        self.runner = runner
        self.aiohttp_server = runner.server
        self.host, self.requested_port, self.reuse_port = host, port, reuse_port
        self.sock = sock
        # Every connection of this site reads into this buffer and copies what it got out
        # at once (the loop runs one read at a time).
        self.read_buffer = memoryview(bytearray(_READ_BYTES))
        self.connections: set[_Connection] = set()
        self.closing = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self._listener = None
        self._sweeper = None
        self._changed: asyncio.Event | None = None

    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        self._changed = asyncio.Event()
        if self.sock is not None:
            self._listener = await self.loop.create_server(lambda: _Connection(self),
                                                           sock=self.sock)
        else:
            self._listener = await self.loop.create_server(
                lambda: _Connection(self), self.host, self.requested_port,
                reuse_port=self.reuse_port or None)
        self._sweeper = self.loop.call_later(self._sweep_every(), self._sweep)

    @property
    def port(self) -> int:
        return self._listener.sockets[0].getsockname()[1]

    @property
    def sockets(self) -> list[socket.socket]:
        return list(self._listener.sockets) if self._listener is not None else []

    def _sweep_every(self) -> float:
        return min(1.0, max(self.idle_timeout / 4, 0.05))

    def _sweep(self) -> None:
        """Closes connections idle for longer than the request timeout."""
        deadline = self.loop.time() - self.idle_timeout
        for conn in list(self.connections):
            if not conn.busy and conn.idle_since < deadline and conn.transport is not None:
                conn.closing = True
                conn.transport.close()
        self._sweeper = self.loop.call_later(self._sweep_every(), self._sweep)

    def changed(self) -> None:
        if self._changed is not None:
            self._changed.set()

    async def stop(self, timeout: float) -> None:
        """Stops accepting; idle connections close now, busy ones after their answer (at
        most `timeout` seconds); then aiohttp's handlers shut down the same way."""
        self.closing = True
        if self._sweeper is not None:
            self._sweeper.cancel()
        if self._listener is not None:
            self._listener.close()
        for conn in list(self.connections):
            conn.closing = True
            if not conn.busy and conn.transport is not None:
                conn.transport.close()
        deadline = self.loop.time() + timeout
        while any(c.busy for c in self.connections):
            self._changed.clear()
            left = deadline - self.loop.time()
            if left <= 0:
                break
            try:
                async with asyncio.timeout(left):
                    await self._changed.wait()
            except TimeoutError:
                break
        for conn in list(self.connections):
            if conn.transport is not None:
                conn.transport.abort()
        if self._listener is not None:
            await self._listener.wait_closed()
        await self.runner.cleanup()
