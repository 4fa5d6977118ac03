"""Tensors pushed between two tensorflux tasks: a tensorflux-only transport beside
TensorFlow's RecvTensor (paper §3.3's Send/Recv, made cheaper for grpcio).

TensorFlow's protocol pulls: a _Recv whose producer is on another task calls RecvTensor
there, one gRPC call per tensor, ~0.5 ms of Python each with grpcio. Between two
tensorflux tasks the producer pushes instead, on a persistent stream to the consumer's
task, and the consumer puts what arrives into the step's rendezvous, where its _Recv
finds it without asking. Two kinds of stream:
- a TCP connection (the default without TLS): the producer asks the consumer for a
  one-time ticket and the port of its push listener (`/tensorflux.WorkerPush/Connect`, a
  gRPC call, so the token is checked), connects, presents the ticket, then its _Send
  writes each tensor itself (length-prefixed, scatter-gather from the array: no copy in
  Python); one thread per connection on the consumer reads them. grpcio costs ~0.2 ms of
  CPU per message and ~1 ms per MB on loopback, a socket ~0.05 ms and ~0.3 ms;
- a gRPC client stream (`/tensorflux.WorkerPush/PushTensors`), with TLS, when the
  listener cannot be reached, or with `TENSORFLUX_RPC_PUSH=grpc`: a thread of grpcio's
  sends what is queued, small tensors queued together in one message.

Negotiation: the master marks both ends (`_Send` and `_Recv`) of each edge between two
tensorflux tasks (it knows them by their devices' `physical_device_desc`) with the attr
`PUSH_ATTR` in the graphs it registers; every other edge (a TensorFlow task at either end,
or a TensorFlow master, which marks nothing) stays a RecvTensor transfer.
`TENSORFLUX_RPC_PUSH=0` in the master's environment turns marking off.

Messages are protobuf-compatible bytes written by hand (wire.pushed_tensor_parts), never
pickle. A tensor larger than `RpcConfig.max_request_bytes` is not pushed: a notice is,
and the consumer fetches it with RecvTensor (a response is not bounded by that limit).

Failures (no step waits forever on a push that cannot come):
- the stream breaks or the consumer is gone: the producer aborts its running steps that
  pushed to that task (UnavailableError); the master sees the consumer's RunGraph fail;
- the producer is gone (its stream ends on the consumer's side): the consumer aborts its
  running steps that expect pushes from it (UnavailableError), and the master cancels the
  step everywhere when the producer's RunGraph fails;
- a push for a step that has already ended on the consumer's task is dropped.
"""

from __future__ import annotations

import os
import queue
import secrets
import socket
import struct
import threading
import time

import grpc

from tensorflux.distributed import rpc, wire
from tensorflux.framework import errors

PUSH_SERVICE = "tensorflux.WorkerPush"
PUSH_METHOD = f"/{PUSH_SERVICE}/PushTensors"
CONNECT_METHOD = f"/{PUSH_SERVICE}/Connect"
_MAGIC = b"TFXPUSH1"
_TICKET_BYTES = 32
_TICKET_SECONDS = 30.0
_HELLO_SECONDS = 10.0  # a connection must present its ticket within this
_CONNECT_SECONDS = 5.0
_MAX_MESSAGE_BYTES = 1 << 40  # a length beyond this is a broken or hostile peer
PUSH_ATTR = "_tfx_push"  # on a _Send/_Recv: the tensor is pushed, not pulled
FROM_METADATA = "tensorflux-push-from"  # the producer's task name
_SMALL = 64 << 10  # tensors below this queued together go in one message ...
_BATCH_BYTES = 1 << 20  # ... of at most this many bytes
_CLOSE = object()


def _mode() -> str:
    return os.environ.get("TENSORFLUX_RPC_PUSH", "1").strip().lower()


def enabled() -> bool:
    """Whether a master marks edges between tensorflux tasks for pushing."""
    return _mode() not in ("0", "false", "no", "off")


def key_prefix(key: str) -> str:
    """A rendezvous key without its frame/iteration part: what the push attr marks."""
    return key.rpartition(";")[0]


class _Stream:
    """One open PushTensors call to one task; `broken` once it has ended."""

    kind = "grpc"

    def __init__(self, stub: rpc.Stub, sender: str, on_end):
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.broken = False
        self._on_end = on_end
        self.future = stub.stream_future(PUSH_METHOD, self._messages(),
                                         ((FROM_METADATA, sender),))
        self.future.add_done_callback(self._ended)

    def _messages(self):
        q, pending = self.queue, None
        while True:
            item = q.get() if pending is None else pending
            pending = None
            if item is _CLOSE:
                return
            if len(item) >= _SMALL:
                yield item
                continue
            batch, size = [item], len(item)
            while size < _BATCH_BYTES:
                try:
                    more = q.get_nowait()
                except queue.Empty:
                    break
                if more is _CLOSE or len(more) >= _SMALL:
                    pending = more
                    break
                batch.append(more)
                size += len(more)
            yield item if len(batch) == 1 else b"".join(batch)

    def _ended(self, future) -> None:
        self.broken = True
        self.queue.put(_CLOSE)  # frees gRPC's thread waiting on the next message
        self._on_end(self, future)

    def send(self, parts: list) -> None:
        self.queue.put(b"".join(parts))

    def close(self) -> None:
        self.queue.put(_CLOSE)


def _send_all(sock: socket.socket, parts: list) -> None:
    """Writes `parts` (bytes or byte memoryviews) with as few system calls as it takes."""
    parts = list(parts)
    while parts:
        sent = sock.sendmsg(parts)
        while sent:
            if sent >= len(parts[0]):
                sent -= len(parts[0])
                parts.pop(0)
            else:
                parts[0] = memoryview(parts[0])[sent:]
                sent = 0


class _SocketStream:
    """A TCP connection to one task's push listener; `broken` once it has failed."""

    kind = "socket"

    def __init__(self, stub: rpc.Stub, sender: str, on_end):
        self.broken = False
        self._on_end = on_end
        self._lock = threading.Lock()
        port, ticket = _decode_connect(stub.raw_call(CONNECT_METHOD, b"",
                                                     _CONNECT_SECONDS))
        if not port:
            raise OSError("the task has no push listener")
        host = stub.address.rpartition(":")[0].strip("[]")
        self.sock = socket.create_connection((host, port), timeout=_CONNECT_SECONDS)
        try:
            _tune(self.sock)
            name = sender.encode()
            self.sock.sendall(_MAGIC + ticket + struct.pack("<I", len(name)) + name)
            self.sock.settimeout(None)
        except OSError:
            self.sock.close()
            raise
        # The consumer never writes: a read returns when it closes the connection.
        threading.Thread(target=self._watch, name="tfx-push-watch", daemon=True).start()

    def _watch(self) -> None:
        try:
            while self.sock.recv(1 << 12):
                pass
        except OSError:
            pass
        self._fail(OSError("the task closed the push connection"))

    def _fail(self, error: BaseException) -> None:
        with self._lock:
            if self.broken:
                return
            self.broken = True
        try:
            self.sock.close()
        except OSError:
            pass
        self._on_end(self, error)

    def send(self, parts: list) -> None:
        header = struct.pack("<Q", sum(len(p) for p in parts))
        try:
            with self._lock:
                if self.broken:
                    raise OSError("the push connection is closed")
                _send_all(self.sock, [header, *parts])
        except OSError as e:
            self._fail(e)
            raise errors.UnavailableError(
                None, None, f"Pushing a tensor failed: {e}") from None

    def close(self) -> None:
        with self._lock:
            self.broken = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def _tune(sock: socket.socket) -> None:
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in (("TCP_KEEPIDLE", 30), ("TCP_KEEPINTVL", 10), ("TCP_KEEPCNT", 3)):
        if hasattr(socket, name):  # a vanished peer is noticed in ~1 minute, as gRPC's
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)


def _encode_connect(port: int, ticket: bytes) -> bytes:
    """ConnectResponse {uint32 port = 1; bytes ticket = 2}."""
    return b"".join([wire._varint(1 << 3), wire._varint(port), *wire._field(2, ticket)])


def _decode_connect(data: bytes) -> tuple[int, bytes]:
    port, ticket, pos = 0, b"", 0
    try:
        while pos < len(data):
            key, pos = wire._read_varint(data, pos)
            if key == 1 << 3:
                port, pos = wire._read_varint(data, pos)
            elif key == (2 << 3 | 2):
                n, pos = wire._read_varint(data, pos)
                ticket, pos = bytes(data[pos:pos + n]), pos + n
            else:
                pos = wire._skip(data, pos, key & 7)
    except ValueError as e:
        raise OSError(f"malformed Connect response: {e}") from None
    if port and len(ticket) != _TICKET_BYTES:
        raise OSError("malformed Connect response")
    return port, ticket


class Pushers:
    """The push streams of one task to the others (thread-safe).

    Args:
      sender: this task's name (the consumer learns whom a stream comes from).
      stub_for_task: `stub_for_task(task) -> rpc.Stub` of another task's worker service.
      on_broken: `on_broken(task, error)`: a stream to `task` ended; what was queued on it
        may be lost.
      max_bytes: a tensor encoded larger than this is announced, not pushed (0: no limit).
    """

    def __init__(self, sender: str, stub_for_task, on_broken, max_bytes: int = 0):
        self._sender = sender
        self._stub_for_task = stub_for_task
        self._on_broken = on_broken
        self._max_bytes = max_bytes
        self._lock = threading.Lock()
        self._streams: dict[str, _Stream] = {}
        self._closed = False

    def push(self, task: str, step_id: int, key: str, value, is_dead: bool) -> bool:
        """Queues one tensor for `task`. Returns False when it is too large to push: the
        caller keeps it for RecvTensor (a notice has been pushed).

        Raises:
          CancelledError: this task is shutting down.
          InvalidArgumentError: `task` is not in the cluster.
        """
        parts = wire.pushed_tensor_parts(step_id, key, value, is_dead)
        pushed = not (self._max_bytes and sum(len(p) for p in parts) > self._max_bytes)
        if not pushed:
            parts = wire.pushed_tensor_parts(step_id, key, None, False, pull=True)
        self._stream(task).send(parts)
        return pushed

    def _stream(self, task: str) -> _Stream:
        stream = self._streams.get(task)
        if stream is not None and not stream.broken:
            return stream
        with self._lock:
            if self._closed:
                raise errors.CancelledError(None, None, f"Task {self._sender} is shutting "
                                            "down: no more pushes")
            stream = self._streams.get(task)
            if stream is None or stream.broken:
                stub = self._stub_for_task(task)
                stream = self._streams[task] = self._open(task, stub)
            return stream

    def _open(self, task: str, stub: rpc.Stub):
        """A socket stream when the task's listener takes one, else a gRPC stream."""
        if _mode() != "grpc" and not stub.config.tls:
            try:
                return _SocketStream(stub, self._sender,
                                     lambda s, e: self._ended(task, s, _lost(task, e)))
            except (OSError, errors.OpError):
                pass  # no listener, or not reachable: gRPC carries the pushes

        def ended(stream, future):
            if future.cancelled():
                error = errors.CancelledError(None, None, f"The push stream to {task} was "
                                              "cancelled")
            else:
                e = future.exception()
                error = stub.error(e, "PushTensors") if isinstance(e, grpc.RpcError) \
                    else _lost(task, None)
            self._ended(task, stream, error)

        return _Stream(stub, self._sender, ended)

    def _ended(self, task: str, stream, error: errors.OpError) -> None:
        with self._lock:
            if self._streams.get(task) is stream:
                del self._streams[task]
            closed = self._closed
        if not closed:
            self._on_broken(task, error)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            streams, self._streams = list(self._streams.values()), {}
        for s in streams:
            s.close()


def _lost(task: str, error) -> errors.OpError:
    return errors.UnavailableError(None, None, f"The push stream to {task} ended"
                                   + (f": {error}" if error else ""))


class PushService:
    """The consumer's side: the push listener (TCP) and the `/tensorflux.WorkerPush/*`
    methods (`handler()`): Connect (a ticket for the listener) and PushTensors.

    Args:
      deliver: `deliver(peer, items)` for each message's items ((step_id, key, value,
        is_dead, pull)); raises InvalidArgumentError for items it refuses.
      stream_ended: `stream_ended(peer)` when a stream from `peer` ends, whatever the
        reason.
      config: the server's RpcConfig (its token is checked; with TLS there is no
        listener: pushes come over gRPC).
      bind: the gRPC server's "host:port"; the listener binds the same host on a port of
        its own (None: no listener).
    """

    def __init__(self, deliver, stream_ended, config: rpc.RpcConfig, bind: str | None = None):
        self._deliver = deliver
        self._stream_ended = stream_ended
        self._config = config
        self._lock = threading.Lock()
        self._contexts: set = set()
        self._conns: set[socket.socket] = set()
        self._tickets: dict[bytes, float] = {}
        self._closed = False
        self._listener = None
        if bind is not None and not config.tls:
            host = bind.rpartition(":")[0]
            try:
                if host in ("[::]", "", "0.0.0.0"):
                    self._listener = socket.create_server(
                        ("", 0), family=socket.AF_INET6, dualstack_ipv6=True) \
                        if socket.has_dualstack_ipv6() else socket.create_server(("", 0))
                else:
                    self._listener = socket.create_server((host.strip("[]"), 0))
            except OSError:
                self._listener = None  # pushes come over gRPC
        if self._listener is not None:
            threading.Thread(target=self._accept, name="tfx-push-listen",
                             daemon=True).start()

    def _check_token(self, context) -> dict:
        metadata = dict(context.invocation_metadata())
        token = self._config.token
        if token is not None and metadata.get(rpc.TOKEN_METADATA) != token:
            context.abort(grpc.StatusCode.UNAUTHENTICATED,
                          f"/{PUSH_SERVICE}: missing or wrong {rpc.TOKEN_METADATA} metadata")
        return metadata

    # ---- gRPC --------------------------------------------------------------------------
    def _connect(self, request, context):
        self._check_token(context)
        if self._listener is None or self._closed:
            return _encode_connect(0, b"")
        ticket = secrets.token_bytes(_TICKET_BYTES)
        now = time.monotonic()
        with self._lock:
            for t in [t for t, expiry in self._tickets.items() if expiry < now]:
                del self._tickets[t]
            self._tickets[ticket] = now + _TICKET_SECONDS
        return _encode_connect(self._listener.getsockname()[1], ticket)

    def _push_tensors(self, request_iterator, context):
        peer = self._check_token(context).get(FROM_METADATA, "")
        with self._lock:
            self._contexts.add(context)
        try:
            for data in request_iterator:
                try:
                    self._deliver(peer, wire.decode_pushed_tensors(data))
                except errors.OpError as e:
                    context.abort(grpc.StatusCode(rpc.grpc_code(e.error_code)),
                                  f"{PUSH_METHOD}: {e.message}")
        finally:
            with self._lock:
                self._contexts.discard(context)
            self._stream_ended(peer)
        return b""

    def handler(self):
        return grpc.method_handlers_generic_handler(PUSH_SERVICE, {
            "PushTensors": grpc.stream_unary_rpc_method_handler(self._push_tensors),
            "Connect": grpc.unary_unary_rpc_method_handler(self._connect)})

    # ---- the listener ------------------------------------------------------------------
    def _accept(self) -> None:
        listener = self._listener
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._read, args=(conn,), name="tfx-push-read",
                             daemon=True).start()

    def _read(self, conn: socket.socket) -> None:
        peer = None
        try:
            conn.settimeout(_HELLO_SECONDS)
            hello = _read_exact(conn, len(_MAGIC) + _TICKET_BYTES + 4)
            magic, ticket = bytes(hello[:len(_MAGIC)]), bytes(hello[len(_MAGIC):-4])
            with self._lock:
                expiry = self._tickets.pop(ticket, None)
                if magic != _MAGIC or expiry is None or expiry < time.monotonic() or \
                        self._closed:
                    return
                self._conns.add(conn)
            (n,) = struct.unpack("<I", hello[-4:])
            peer = bytes(_read_exact(conn, min(n, 1024))).decode(errors="replace")
            conn.settimeout(None)
            _tune(conn)
            limit = self._config.max_request_bytes
            while True:
                (size,) = struct.unpack("<Q", _read_exact(conn, 8))
                if (limit and size > limit) or size > _MAX_MESSAGE_BYTES:
                    return  # refused: the stream ends, its steps are aborted
                self._deliver(peer, wire.decode_pushed_tensors(_read_exact(conn, size)))
        except (OSError, EOFError, errors.OpError, ValueError, MemoryError):
            pass
        finally:
            with self._lock:
                self._conns.discard(conn)
            conn.close()
            if peer is not None:
                self._stream_ended(peer)

    def cancel_all(self) -> None:
        """Ends the streams coming in and closes the listener (a stopping server does not
        wait for them)."""
        with self._lock:
            self._closed = True
            contexts, conns = list(self._contexts), list(self._conns)
        for c in contexts:
            c.cancel()
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._listener is not None:
            try:
                self._listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._listener.close()


def _read_exact(conn: socket.socket, n: int) -> bytearray:
    buf = bytearray(n)
    view, pos = memoryview(buf), 0
    while pos < n:
        got = conn.recv_into(view[pos:])
        if not got:
            raise EOFError("connection closed")
        pos += got
    return buf
