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
  CPU per message and ~1 ms per MB on loopback, a socket ~0.05 ms and ~0.3 ms. On the
  same host the connection is a Unix socket instead, and tensors of 64 KiB and more cross
  in a shared-memory segment of the producer's, only a descriptor on the socket (shm.py);
- a gRPC client stream (`/tensorflux.WorkerPush/PushTensors`), with TLS, when the
  listener cannot be reached, or with `TENSORFLUX_RPC_PUSH=grpc`: a thread of grpcio's
  sends what is queued, small tensors queued together in one message.

Negotiation: the master marks both ends (`_Send` and `_Recv`) of each edge between two
tensorflux tasks (it knows them by their devices' `physical_device_desc`) with the attr
`PUSH_ATTR` in the graphs it registers; every other edge (a TensorFlow task at either end,
or a TensorFlow master, which marks nothing) stays a RecvTensor transfer.
`TENSORFLUX_RPC_PUSH=0` in the master's environment turns marking off.

RunGraph between tensorflux tasks (the master's task and another) rides the same TCP
connection when the consumer's Connect answer says it takes calls: the master's task writes
the RunGraphRequest (with its timeout) as a frame of its own, the consumer runs it on a
thread of its pool and writes the RunGraphResponse back on that connection, which the
producer's reading thread hands to the waiting `PushedCall` (a Future, as gRPC's). A cancel
frame cancels the step there; a connection that ends fails every call waiting on it
(UnavailableError naming the task) and cancels the steps it started on the consumer. gRPC
carries RunGraph for TensorFlow tasks, under TLS, for partial runs and with
`TENSORFLUX_RPC_PUSH=grpc`.

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
from concurrent import futures

import grpc
import numpy as np

from tensorflux.distributed import rpc, shm, wire
from tensorflux.distributed.push_conn import RUN_GRAPH, RUN_STEP
from tensorflux.distributed.push_conn import Calls as _Calls
from tensorflux.distributed.push_conn import FrameReader as _FrameReader
from tensorflux.distributed.push_conn import Readers as _Readers
from tensorflux.distributed.push_conn import decode_call as _decode_call
from tensorflux.distributed.push_conn import decode_reply as _decode_reply
from tensorflux.distributed.push_conn import send_all as _send_all
from tensorflux.distributed.push_held import held as _held
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
SHARED_TENSORS = 4  # (a bit of `calls`) a call frame's tensors may be in shared memory
_CALL_TAG = 0x12  # the first byte of a call frame (field 2) ...
_CANCEL_TAG = 0x18  # ... and of a cancel frame (field 3, the step id); tensors: field 1
_SMALL = 64 << 10  # tensors below this queued together go in one message ...
_BATCH_BYTES = 1 << 20  # ... of at most this many bytes
_CLOSE = object()
_RELEASE = bytes((shm.RELEASE_TAG,))  # a frame of shared-memory slots handed back
_SHARED = bytes((shm.TENSOR_TAG,))  # a tensor in shared memory
_FOREIGN_RELEASE = bytes((shm.FOREIGN_RELEASE_TAG,))  # slots of our segment, handed back


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
    shm = None

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


class _SocketStream:
    """A connection to one task's push listener; `broken` once it has failed. TCP, or on
    the same host a Unix socket with a shared-memory segment for large tensors (`shm`, a
    shm.Segment; see shm.py)."""

    kind = "socket"

    def __init__(self, stub: rpc.Stub, sender: str, on_end, task: str = ""):
        self.broken = False
        self._on_end = on_end
        self._lock = threading.Lock()
        self._task = f"{task or stub.task} ({stub.address})"
        self._peer = task or stub.task  # (shm.piggyback: releases for its segment here)
        self._calls: dict[int, PushedCall] = {}  # call id -> call waiting for its reply
        self._calls_lock = threading.Lock()  # (a reply is not held up by a large send)
        self.method_name = "RunGraph"  # for errors: what the calls on this connection are
        port, ticket, self.calls, self._limit, unix, boot = _decode_connect(
            stub.raw_call(CONNECT_METHOD, b"", _CONNECT_SECONDS))
        if not port:
            raise OSError("the task has no push listener")
        name = sender.encode()
        self.shm: shm.Segment | None = None
        if unix and boot and boot == shm.boot_id() and shm.enabled():
            self.sock, self.shm = _open_shared(unix, ticket, name)
            if self.sock is not None:
                threading.Thread(target=self._watch, name="tfx-push-watch",
                                 daemon=True).start()
                return
            port, ticket = _decode_connect(  # a fresh ticket: TCP after all
                stub.raw_call(CONNECT_METHOD, b"", _CONNECT_SECONDS))[:2]
            if not port:
                raise OSError("the task has no push listener")
        host = stub.address.rpartition(":")[0].strip("[]")
        self.sock = socket.create_connection((host, port), timeout=_CONNECT_SECONDS)
        try:
            _tune(self.sock)
            self.sock.sendall(_MAGIC + ticket + struct.pack("<I", len(name)) + name)
            self.sock.settimeout(None)
        except OSError:
            self.sock.close()
            raise
        # The consumer writes only the replies of RunGraph calls; a read that ends means
        # it closed the connection.
        threading.Thread(target=self._watch, name="tfx-push-watch", daemon=True).start()

    def _watch(self) -> None:
        error = "the task closed the push connection"
        frames = _FrameReader(self.sock, _MAX_MESSAGE_BYTES)
        try:
            while True:
                try:
                    data = frames.next()
                except ValueError:
                    error = "the task sent a malformed reply"
                    break
                if data[:1] == _RELEASE and self.shm is not None:
                    self.shm.release(shm.decode_release(data))
                else:
                    self._reply(data)
        except (OSError, EOFError, ValueError, IndexError, MemoryError):
            pass
        self._fail(OSError(error))

    def _reply(self, data) -> None:
        """A call's reply: {uint64 step_id = 1 (the call's id); bytes response = 2}."""
        step_id, response = _decode_reply(data)
        with self._calls_lock:
            call = self._calls.pop(step_id, None)
        if call is not None:
            call.deliver(response)

    def send_shared(self, step_id: int, key: str, arr: np.ndarray) -> bool:
        """Pushes `arr` (shm.shareable) through the shared segment: False when there is
        none or it has no room (the caller sends it inline).

        Raises:
          UnavailableError: the connection failed.
        """
        segment = self.shm
        placed = None if segment is None else segment.put(arr)
        if placed is None:
            return False
        self.send([shm.encode_tensor(step_id, key, arr, *placed)])
        return True

    def takes(self, method: int, request: bytes, shared_bytes: int = 0) -> bool:
        """Whether the task takes a call of `method` with this request (and this many
        bytes of its tensors in shared memory) here."""
        return bool(self.calls & method) and not (
            self._limit and len(request) + shared_bytes + 64 > self._limit)

    def share(self, call_id: int, pairs: list) -> tuple[list, list, list]:
        """(descriptors, slots, the rest): of `pairs` ((name, array)), those this
        connection's shared segment takes, as call-frame descriptors (`call(shared=)`)
        and their slots; the rest go in the request."""
        if self.shm is None or not self.calls & SHARED_TENSORS:
            return [], [], pairs
        shared, slots, rest = [], [], []
        for name, value in pairs:
            arr = shm.shareable(value)
            placed = None if arr is None else self.shm.put(arr)
            if placed is None:
                rest.append((name, value))
                continue
            slots.append(placed[0])
            shared.append(shm.encode_tensor(call_id, name, arr, *placed)[1:])
        return shared, slots, rest

    def call(self, step_id: int, request: bytes, timeout: float, decode,
             method: int = RUN_GRAPH, shared: list = ()) -> PushedCall:
        """Sends a call of `method` (`request`: its request bytes; `step_id`: a key unique
        among this connection's calls in flight; `shared`: descriptors from `share`, the
        request's tensors in shared memory) on this connection; the reply, read by
        `decode(bytes)`, completes the returned Future."""
        call = PushedCall(self, step_id, decode)
        with self._calls_lock:
            broken = self.broken
            if not broken:
                self._calls[step_id] = call
        if broken:
            call.set_exception(self._lost("the push connection is closed"))
            return call
        inner = b"".join((b"\x08", wire._varint(max(1, int(timeout * 1000))), b"\x18",
                          wire._varint(step_id), b"\x20", wire._varint(method),
                          *(b"\x2a" + d for d in shared), b"\x12",
                          wire._varint(len(request))))
        try:
            self.send([bytes((_CALL_TAG,)) + wire._varint(len(inner) + len(request)) + inner,
                       request])
        except errors.OpError:
            pass  # _fail failed the call
        return call

    def cancel(self, step_id: int) -> None:
        """Forgets the call of `step_id` and asks the task to cancel that step."""
        with self._calls_lock:
            self._calls.pop(step_id, None)
        try:
            self.send([bytes((_CANCEL_TAG,)) + wire._varint(step_id)])
        except errors.OpError:
            pass

    def _lost(self, error) -> errors.OpError:
        return errors.UnavailableError(None, None, f"Task {self._task} is unavailable: "
                                       f"{self.method_name} failed: {error}")

    def _fail(self, error: BaseException) -> None:
        with self._lock:
            if self.broken:
                return
            self.broken = True
        with self._calls_lock:
            calls, self._calls = list(self._calls.values()), {}
        try:
            self.sock.close()
        except OSError:
            pass
        if self.shm is not None:
            self.shm.close()
        for call in calls:
            call.fail(self._lost(error))
        self._on_end(self, error)

    def send(self, parts: list) -> None:
        """Writes one frame (`parts`: its body), or holds it (push_held: this thread's held
        frames for this connection go first). UnavailableError: the connection failed."""
        frame = [struct.pack("<Q", sum(map(len, parts))), *parts]
        held = _held.frames
        if held is not None and self in held:
            if _held.on:
                held[self].extend(frame)
                return
            frame = held.pop(self) + frame
        elif _held.on:
            held[self] = frame
            return
        self._write(frame)

    def _write(self, frame: list) -> None:
        extra = None
        try:
            with self._lock:
                if self.broken:
                    raise OSError("the push connection is closed")
                extra = shm.piggyback(self._peer)
                if extra is not None:  # handed-back slots of the peer's segment, first
                    frame = [struct.pack("<Q", len(extra[0])), extra[0], *frame]
                _send_all(self.sock, frame)
        except OSError as e:
            if extra is not None:
                extra[1].restore(extra[2])
            self._fail(e)
            raise errors.UnavailableError(
                None, None, f"Pushing a tensor failed: {e}") from None

    def close(self) -> None:
        with self._lock:
            self.broken = True
        with self._calls_lock:
            calls, self._calls = list(self._calls.values()), {}
        for call in calls:
            call.fail(errors.CancelledError(None, None, "This task is shutting down"))
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        if self.shm is not None:
            self.shm.close()


def _open_shared(name: bytes, ticket: bytes, sender: bytes):
    """(Unix socket, shm.Segment) of a push connection whose consumer mapped a segment
    of this task (shm.py's hello), or (None, None) when it cannot be had."""
    try:
        segment = shm.Segment()
    except OSError:
        return None, None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(_CONNECT_SECONDS)
        sock.connect(name)
        hello = shm.encode_hello(ticket, segment, sender)
        if socket.send_fds(sock, [hello], [segment.fd]) != len(hello):
            raise OSError("short hello")
        segment.close_fd()
        if bytes(_read_exact(sock, 1)) != b"\x01":
            raise OSError("refused")
        sock.settimeout(None)
        return sock, segment
    except (OSError, EOFError):
        sock.close()
        segment.close()
        return None, None


class CallConnection:
    """A client's connection to a master's push listener for RunStep calls (a tensorflux
    client of a tensorflux master, without TLS): `call` returns the decoded reply, or None
    when the connection cannot carry it (the caller uses gRPC). A connection that breaks
    is opened again on the next call; a master that takes no such calls is not asked
    again."""

    def __init__(self, stub: rpc.Stub):
        self._stub = stub
        self._lock = threading.Lock()
        self._stream: _SocketStream | None = None
        self._ids = iter(range(1, 1 << 62))
        self._never = _mode() in ("0", "false", "no", "off", "grpc") or stub.config.tls

    def call(self, request, timeout: float, decode, tensors: tuple = ()):
        """`request`: RunStepRequest bytes, or with `tensors` ((name, array) pairs, its
        feeds) the message without them: those of 64 KiB and more cross in the connection's
        shared memory when it has some (a same-host master), the rest in the request."""
        stream = self._open()
        if stream is None:
            return None
        with self._lock:
            call_id = next(self._ids)
        shared, slots, shared_bytes = [], [], 0
        if not isinstance(request, bytes):
            shared, slots, rest = stream.share(call_id, list(tensors))
            shared_bytes = sum(getattr(v, "nbytes", 0) for _, v in tensors) - sum(
                getattr(v, "nbytes", 0) for _, v in rest)
            message, request = request, wire.encode_with_named_tensors(request, 2, rest)
            message.ClearField("feed")  # (small feeds are added to the message itself)
        if not stream.takes(RUN_STEP, request, shared_bytes):
            if slots:
                stream.shm.release(slots)
            return None
        future = stream.call(call_id, request, timeout, decode, RUN_STEP, shared)
        try:
            return future.result(timeout + 5.0)
        except futures.TimeoutError:
            future.cancel()
            raise errors.DeadlineExceededError(
                None, None, f"RunStep on {self._stub.task} did not answer before its "
                "deadline") from None

    def _open(self) -> _SocketStream | None:
        stream = self._stream
        if stream is not None and not stream.broken or self._never:
            return None if self._never else stream
        with self._lock:
            if self._stream is not None and not self._stream.broken:
                return self._stream
            try:
                stream = _SocketStream(self._stub, "", lambda s, e: None,
                                       self._stub.task)
            except errors.UnimplementedError:
                self._never = True  # not a tensorflux master
                return None
            except (OSError, errors.OpError):
                return None  # gRPC this time (it retries a master that is restarting)
            if not stream.calls & RUN_STEP:
                stream.close()
                self._never = True
                return None
            stream.method_name = "RunStep"
            self._stream = stream
            return stream

    def close(self) -> None:
        with self._lock:
            stream, self._stream = self._stream, None
        if stream is not None:
            stream.close()


class PushedCall(futures.Future):
    """A RunGraph or RunStep call on a push connection (`_SocketStream.call`): a Future
    of the decoded reply, as gRPC's; `cancel()` also cancels the step on the task."""

    def __init__(self, stream: _SocketStream, step_id: int, decode):
        super().__init__()
        self._stream, self._step_id, self._decode = stream, step_id, decode

    def deliver(self, response) -> None:
        try:
            value = self._decode(response)
        except errors.OpError as e:
            self.fail(e)
            return
        try:
            self.set_result(value)
        except futures.InvalidStateError:
            pass  # cancelled meanwhile

    def fail(self, error: errors.OpError) -> None:
        try:
            self.set_exception(error)
        except futures.InvalidStateError:
            pass

    def cancel(self) -> bool:
        if not super().cancel():
            return False
        self._stream.cancel(self._step_id)
        return True


def _tune(sock: socket.socket) -> None:
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in (("TCP_KEEPIDLE", 30), ("TCP_KEEPINTVL", 10), ("TCP_KEEPCNT", 3)):
        if hasattr(socket, name):  # a vanished peer is noticed in ~1 minute, as gRPC's
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)


def _encode_connect(port: int, ticket: bytes, calls: int = 0, limit: int = 0,
                    unix: bytes = b"") -> bytes:
    """ConnectResponse {uint32 port = 1; bytes ticket = 2; uint32 calls = 3 (the methods
    the listener takes: RUN_GRAPH | RUN_STEP bits); uint64 max_request_bytes = 4 (0: no
    limit; a larger call goes over gRPC, which refuses it as such); bytes unix = 5 (the
    listener's abstract Unix socket, for a shared-memory connection, shm.py); bytes
    boot_id = 6 (with unix: this kernel's boot id)}."""
    return b"".join([wire._varint(1 << 3), wire._varint(port), *wire._field(2, ticket),
                     b"\x18" + wire._varint(calls) if calls else b"",
                     b"\x20" + wire._varint(limit) if limit else b"",
                     *(wire._field(5, unix) + wire._field(6, shm.boot_id()) if unix else [])])


_CONNECT_FIELDS = {1 << 3: "port", 2 << 3 | 2: "ticket", 3 << 3: "calls", 4 << 3: "limit",
                   5 << 3 | 2: "unix", 6 << 3 | 2: "boot"}


def _decode_connect(data: bytes) -> tuple[int, bytes, int, int, bytes, bytes]:
    try:
        got = wire.pick_fields(data, _CONNECT_FIELDS)
    except ValueError as e:
        raise OSError(f"malformed Connect response: {e}") from None
    port, ticket = got.get("port", 0), bytes(got.get("ticket", b""))
    if port and len(ticket) != _TICKET_BYTES:
        raise OSError("malformed Connect response")
    return (port, ticket, got.get("calls", 0), got.get("limit", 0),
            bytes(got.get("unix", b"")), bytes(got.get("boot", b"")))


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
        self._lock = threading.RLock()  # a gRPC stream that is already done
        # ends (`_ended`) inside `_open`, on the thread holding it
        self._streams: dict[str, _Stream] = {}
        self._closed = False

    def push(self, task: str, step_id: int, key: str, value, is_dead: bool) -> bool:
        """Queues one tensor for `task`. Returns False when it is too large to push: the
        caller keeps it for RecvTensor (a notice has been pushed).

        Raises:
          CancelledError: this task is shutting down.
          InvalidArgumentError: `task` is not in the cluster.
        """
        stream = self._stream(task)
        if stream.shm is not None and not is_dead:
            arr = shm.shareable(value)
            if arr is not None and not (self._max_bytes and arr.nbytes > self._max_bytes) \
                    and stream.send_shared(step_id, key, arr):
                return True
        parts = wire.pushed_tensor_parts(step_id, key, value, is_dead)
        pushed = not (self._max_bytes and sum(len(p) for p in parts) > self._max_bytes)
        if not pushed:
            parts = wire.pushed_tensor_parts(step_id, key, None, False, pull=True)
        stream.send(parts)
        return pushed

    def allocator(self, task: str):
        """The open connection to `task`'s shared segment's `alloc`, or None (no connection
        yet, a broken one, or not shared memory)."""
        stream = self._streams.get(task)
        segment = None if stream is None or stream.broken else getattr(stream, "shm", None)
        return None if segment is None else segment.alloc

    def transports(self) -> dict[str, str]:
        """{task: "shm", "socket" or "grpc"}: how the open streams carry large tensors."""
        return {task: "shm" if s.shm is not None else s.kind
                for task, s in list(self._streams.items())}

    def call(self, task: str, step_id: int, request: bytes, timeout: float, decode
             ) -> PushedCall | None:
        """RunGraph on `task` over its push connection (see the module docstring): a
        Future of `decode(response bytes)`, or None when that connection cannot carry it
        (a gRPC stream, a listener that takes no calls, or none): the caller uses gRPC."""
        try:
            stream = self._stream(task)
        except errors.OpError:
            return None
        if stream.kind != "socket" or not stream.takes(RUN_GRAPH, request):
            return None
        return stream.call(step_id, request, timeout, decode)

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
                                     lambda s, e: self._ended(task, s, _lost(task, e)), task)
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
      calls: {method: fn(request bytes, deadline, cancellation) -> response bytes}: the
        calls (RUN_GRAPH, RUN_STEP) taken on the listener's connections (None: none).
    """

    def __init__(self, deliver, stream_ended, config: rpc.RpcConfig, bind: str | None = None,
                 calls: dict | None = None):
        self._deliver = deliver
        self._calls = dict(calls or {})
        self._pool = None if not self._calls else futures.ThreadPoolExecutor(
            max_workers=256, thread_name_prefix="tfx-push-call")
        self._stream_ended = stream_ended
        self._config = config
        self._lock = threading.Lock()
        self._contexts: set = set()
        self._conns: set[socket.socket] = set()
        self._tickets: dict[bytes, float] = {}
        self._closed = False
        self._listener = self._unix = None
        self._unix_name = b""
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
            threading.Thread(target=self._accept, args=(self._listener, False),
                             name="tfx-push-listen", daemon=True).start()
            if shm.enabled():  # same-host producers: a Unix socket and shared memory
                self._unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    self._unix_name = shm.abstract_name()
                    self._unix.bind(self._unix_name)
                    self._unix.listen()
                except OSError:
                    self._unix.close()
                    self._unix, self._unix_name = None, b""
        if self._unix is not None:
            threading.Thread(target=self._accept, args=(self._unix, True),
                             name="tfx-push-listen-shm", daemon=True).start()

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
        calls = sum(self._calls) | (SHARED_TENSORS if self._calls and self._unix_name else 0)
        return _encode_connect(self._listener.getsockname()[1], ticket, calls,
                               self._config.max_request_bytes, self._unix_name)

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
    def _accept(self, listener: socket.socket, shared: bool) -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._read, args=(conn, shared), name="tfx-push-read",
                             daemon=True).start()

    def _admit(self, conn: socket.socket, magic: bytes, ticket: bytes, n: int) -> str | None:
        """The peer's name, if its hello holds a live ticket (then `conn` is served)."""
        with self._lock:
            expiry = self._tickets.pop(ticket, None)
            if magic != _MAGIC or expiry is None or expiry < time.monotonic() or \
                    self._closed:
                return None
            self._conns.add(conn)
        return bytes(_read_exact(conn, min(n, 1024))).decode(errors="replace")

    def _admit_shared(self, conn: socket.socket, calls: _Calls):
        """(peer, shm.Mapping) of a Unix connection's hello, or None (refused: closed)."""
        ticket, size, nonce, n, fd = shm.read_hello(conn)
        try:
            peer = self._admit(conn, _MAGIC, ticket, n)
            if peer is None:
                return None
            fd, mine = -1, fd
            mapping = shm.Mapping(mine, size, nonce, calls.releases)
        finally:
            if fd >= 0:
                os.close(fd)
        conn.sendall(b"\x01")
        return peer, mapping

    def _read(self, conn: socket.socket, shared: bool = False) -> None:
        peer = calls = mapping = readers = None
        try:
            conn.settimeout(_HELLO_SECONDS)
            calls = _Calls(conn)
            if shared:
                admitted = self._admit_shared(conn, calls)
                if admitted is None:
                    return
                peer, mapping = admitted
            else:
                hello = _read_exact(conn, len(_MAGIC) + _TICKET_BYTES + 4)
                (n,) = struct.unpack("<I", hello[-4:])
                peer = self._admit(conn, bytes(hello[:len(_MAGIC)]),
                                   bytes(hello[len(_MAGIC):-4]), n)
                if peer is None:
                    return
                _tune(conn)
            conn.settimeout(None)
            readers = _Readers(self, conn, peer, calls, mapping)
            if mapping is not None:
                shm.incoming(peer, calls.releases, mapping.nonce)
        except (OSError, EOFError, errors.OpError, ValueError, IndexError, MemoryError):
            pass
        finally:
            if readers is None:
                self._ended(conn, peer, calls)
        if readers is not None:
            readers.lead()

    def _ended(self, conn: socket.socket, peer: str | None, calls: _Calls | None) -> None:
        """A connection is over: its running calls are cancelled, its producer's steps
        aborted (`stream_ended`)."""
        with self._lock:
            self._conns.discard(conn)
        if calls is not None:
            shm.forget_incoming(peer or "", calls.releases)
            calls.close()
        conn.close()
        if peer is not None:
            self._stream_ended(peer)

    def max_frame(self) -> int:
        """The longest frame a connection to this listener may send."""
        limit = self._config.max_request_bytes
        return min(limit, _MAX_MESSAGE_BYTES) if limit else _MAX_MESSAGE_BYTES

    def _serve(self, conn: socket.socket, peer: str, calls: _Calls, mapping,
               readers: _Readers) -> tuple | None:
        """Reads a connection's frames until it ends or sends one it refuses (None), or
        until a call frame comes that this thread is to run (`readers.inline()`): then the
        call's arguments for `_serve_call`."""
        frames = readers.frames
        pushed: list = []  # tensors read, delivered together before the reader would wait
        while True:
            try:
                data = memoryview(frames.next())
            except ValueError:
                return None  # refused (too long): the stream ends, its steps are aborted
            if data[:1] == b"\x12" and self._pool is not None:
                if pushed:
                    self._deliver(peer, pushed)
                    pushed = []
                call = self._start_call(calls, data, mapping)
                if readers.inline():
                    return call
                self._pool.submit(self._serve_call, *call)
                continue
            if data[:1] == b"\x18":
                calls.cancel(wire._read_varint(data, 1)[0])
            elif data[:1] == _FOREIGN_RELEASE:
                shm.release_foreign(data)
            elif data[:1] == _SHARED:
                if mapping is None:
                    raise errors.InvalidArgumentError(
                        None, None, "A shared-memory tensor on a connection without a "
                        "segment")
                step_id, key, dtype, dims, offset, nbytes, slot = shm.decode_tensor(data)
                pushed.append((step_id, key, mapping.array(dtype, dims, offset, nbytes, slot),
                               False, False))
            else:
                pushed.extend(wire.decode_pushed_tensors(data))
            if pushed and not frames.buffered():
                self._deliver(peer, pushed)
                pushed = []

    def _start_call(self, calls: _Calls, data: bytearray, mapping) -> tuple:
        """A call frame: the arguments of `_serve_call`, which runs it and writes its
        reply back on the connection.

        Raises:
          InvalidArgumentError: a tensor in shared memory on a connection without a
            segment, or a descriptor out of the segment (the connection is dropped).
        """
        buf = memoryview(data)
        n, pos = wire._read_varint(buf, 1)
        if pos + n != len(buf):
            raise ValueError("malformed RunGraph call")
        timeout, step_id, method, request, descriptors = _decode_call(buf[pos:])
        fn = self._calls.get(method)
        if fn is None:
            raise ValueError(f"a call of unknown method {method}")
        tensors, limit = [], self._config.max_request_bytes
        for d in descriptors:
            if mapping is None:
                raise errors.InvalidArgumentError(
                    None, None, "A call's tensor in shared memory on a connection without "
                    "a segment")
            _, name, dtype, dims, offset, nbytes, slot = shm.decode_tensor(
                bytes((shm.TENSOR_TAG,)) + wire._varint(len(d)) + bytes(d))
            tensors.append((name, mapping.array(dtype, dims, offset, nbytes, slot)))
        if limit and len(request) + sum(t.nbytes for _, t in tensors) > limit:
            raise errors.ResourceExhaustedError(  # refused as an oversized frame is
                None, None, "A call's tensors exceed the listener's max_request_bytes")
        deadline = time.monotonic() + timeout
        key, cm = calls.start(step_id)
        return fn, calls, key, step_id, request, deadline, cm, tensors

    def _serve_call(self, fn, calls: _Calls, key: int, step_id: int, request,
                    deadline: float, cm, tensors: list) -> None:
        try:
            response = fn(request, deadline, cm, tensors)
        except Exception as e:  # noqa: BLE001 - the caller gets it as the call's status
            response = _error_response(e)
        calls.finish(key, step_id, response)

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
        for listener in (self._listener, self._unix):
            if listener is None:
                continue
            try:
                listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            listener.close()


def _error_response(e: BaseException) -> bytes:
    """RunGraphResponse {status_code = 5 (int32); status_error_message = 6}: the error
    of a call that failed outside the step."""
    code, message = wire.status_of(e)
    return b"".join([b"\x28", wire._varint(code), *wire._field(6, message.encode())])


def _read_exact(conn: socket.socket, n: int):
    """`n` bytes from `conn`: a bytearray, or above 64 KiB a NumPy buffer left
    uninitialized (the tensors received view it; zeroing megabytes first would cost as
    much as the copy out of the socket)."""
    buf = bytearray(n) if n < _SMALL else np.empty(n, np.uint8)
    view, pos = memoryview(buf), 0
    while pos < n:  # one system call (and one wait for the GIL after it) per message
        got = conn.recv_into(view[pos:], n - pos, socket.MSG_WAITALL)
        if not got:
            raise EOFError("connection closed")
        pos += got
    return buf
