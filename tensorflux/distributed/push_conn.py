"""The consumer's side of one incoming push connection (push.py): the threads that read
it (`Readers`: the thread that reads a call frame runs the call) and the calls running for
it (`Calls`: their cancellation and their replies)."""

from __future__ import annotations

import socket
import struct
import threading

import numpy as np

from tensorflux.distributed import shm, wire
from tensorflux.framework import errors
from tensorflux.runtime.cancellation import CancellationManager


def send_all(sock: socket.socket, parts: list) -> None:
    """Writes `parts` (bytes or byte memoryviews) with as few system calls as it takes."""
    parts = [p for p in parts if len(p)]
    while parts:
        sent = sock.sendmsg(parts)
        while sent:
            if sent >= len(parts[0]):
                sent -= len(parts[0])
                parts.pop(0)
            else:
                parts[0] = memoryview(parts[0])[sent:]
                sent = 0


RUN_GRAPH, RUN_STEP = 1, 2  # the methods a call frame may carry (bits of Connect's `calls`)
_FRAME_BUFFER = 256 << 10  # bytes a FrameReader takes from its socket per system call
_BIG_FRAME = 64 << 10  # a frame this large is read into a buffer of its own


class FrameReader:
    """Reads one connection's length-prefixed frames (an 8-byte little-endian length, then
    the frame) with as few system calls as it takes: each read takes whatever the socket
    holds (the frames a producer wrote in one `sendmsg` come in one read), and `buffered()`
    tells whether a whole frame is already here, so its reader can hand on what it has
    before it would block (the pushes of one flush reach their step in one hand-off).

    A frame is returned in a buffer of its own (the tensors decoded from it view it): below
    `_BIG_FRAME` a bytearray copied out of the read buffer, above it a NumPy buffer left
    uninitialized into which the socket reads the rest directly. `max_frame` bounds a
    frame's length (ValueError beyond it: a broken or hostile peer). EOFError when the
    connection ends (mid-frame too). One thread at a time reads (the caller's own lock or
    leadership)."""

    def __init__(self, conn: socket.socket, max_frame: int):
        self._conn = conn
        self._max = max_frame
        self._buf = bytearray(_FRAME_BUFFER)
        self._view = memoryview(self._buf)
        self._start = self._end = 0

    def buffered(self) -> bool:
        """Whether a whole frame can be returned without reading the socket."""
        have = self._end - self._start
        if have < 8:
            return False
        (size,) = struct.unpack_from("<Q", self._buf, self._start)
        return have - 8 >= size

    def _fill(self, need: int) -> None:
        """Reads until `need` bytes past `_start` are buffered (need <= the buffer)."""
        if self._start + need > len(self._buf):  # move the partial frame to the front
            have = self._end - self._start
            self._buf[:have] = self._view[self._start:self._end]
            self._start, self._end = 0, have
        while self._end - self._start < need:
            got = self._conn.recv_into(self._view[self._end:], len(self._buf) - self._end)
            if not got:
                raise EOFError("connection closed")
            self._end += got

    def next(self):
        """The next frame (see the class docstring)."""
        if self._end - self._start < 8:
            if self._start == self._end:
                self._start = self._end = 0
            self._fill(8)
        (size,) = struct.unpack_from("<Q", self._buf, self._start)
        if size > self._max:
            raise ValueError(f"a frame of {size} bytes (the limit is {self._max})")
        start = self._start + 8
        if size < _BIG_FRAME:
            if self._end - start < size:
                self._fill(8 + size)
                start = self._start + 8
            frame = self._buf[start:start + size]
            self._start = start + size
            return frame
        frame = np.empty(size, np.uint8)
        have = min(self._end - start, size)
        view = memoryview(frame)
        view[:have] = self._view[start:start + have]
        self._start = start + have
        pos = have
        while pos < size:
            got = self._conn.recv_into(view[pos:], size - pos, socket.MSG_WAITALL)
            if not got:
                raise EOFError("connection closed")
            pos += got
        return frame


# Threads reading one connection that may run calls themselves; past this many, calls go
# to the service's pool.
_MAX_INLINE_THREADS = 64


class Readers:
    """The threads that read one incoming connection (leader and followers).

    One thread reads the connection's frames at a time (the leader). A call frame is run
    by the thread that read it, with no hand-off to another thread before the call starts:
    first it passes the reading on to an idle thread of this connection (a new one when
    none is idle), so the connection is never left unread while calls run (the tensors a
    running step waits for come on it). Once its call is answered, a thread waits to lead
    again. Past `_MAX_INLINE_THREADS` threads the leader hands calls to the service's pool
    (as all calls went before). When the connection ends, idle threads exit and the
    running calls are cancelled (`Calls.close`). `service`: the push.PushService."""

    def __init__(self, service, conn: socket.socket, peer: str, calls: Calls,
                 mapping):
        self._service, self._conn, self._peer = service, conn, peer
        self._calls, self._mapping = calls, mapping
        self.frames = FrameReader(conn, service.max_frame())
        self._lock = threading.Lock()
        self._threads = 1  # alive for this connection
        self._idle: list[threading.Lock] = []  # the gates of threads waiting to lead
        self._ended = False

    def inline(self) -> bool:
        """Whether the leader may run the call it just read."""
        return self._threads < _MAX_INLINE_THREADS

    def lead(self) -> None:
        """Reads frames until the connection ends (then ends it), running the calls this
        thread reads (see the class docstring)."""
        while True:
            try:
                call = self._service._serve(self._conn, self._peer, self._calls,
                                            self._mapping, self)
            except (OSError, EOFError, errors.OpError, ValueError, IndexError, MemoryError):
                call = None
            if call is None:
                self._end()
                return
            self._hand_off()
            self._service._serve_call(*call)
            if not self._wait_turn():
                return

    def _hand_off(self) -> None:
        with self._lock:
            if self._idle:
                self._idle.pop().release()  # (a Lock: a Condition costs 4x as much)
                return
            self._threads += 1
        threading.Thread(target=self.lead, name="tfx-push-read", daemon=True).start()

    def _wait_turn(self) -> bool:
        """Waits until this thread is to lead again; False when the connection ended."""
        gate = threading.Lock()
        gate.acquire()
        with self._lock:
            ended = self._ended
            if not ended:
                self._idle.append(gate)
        if not ended:
            gate.acquire()  # released by _hand_off or _end
        with self._lock:
            if self._ended:
                self._threads -= 1
                return False
        return True

    def _end(self) -> None:
        with self._lock:
            self._ended = True
            self._threads -= 1
            idle, self._idle = self._idle, []
        for gate in idle:
            gate.release()
        self._service._ended(self._conn, self._peer, self._calls)


class Calls:
    """The RunGraph calls running for one incoming connection: their cancellation (a
    cancel frame, or the connection's end) and their replies (written under one lock)."""

    def __init__(self, conn: socket.socket):
        self._conn = conn
        self._lock = threading.Lock()
        self._write = threading.Lock()
        self._keys = iter(range(1 << 62))
        self._running: dict[int, tuple] = {}  # key -> (step id, CancellationManager)
        self.releases = shm.Releases(self._write_release)  # shared-memory slots

    def start(self, step_id: int) -> tuple[int, CancellationManager]:
        cm = CancellationManager()
        with self._lock:
            key = next(self._keys)
            self._running[key] = (step_id, cm)
        return key, cm

    def cancel(self, step_id: int) -> None:
        with self._lock:
            cms = [cm for s, cm in self._running.values() if s == step_id]
        for cm in cms:
            cm.start_cancel()

    def finish(self, key: int, step_id: int, response: bytes) -> None:
        with self._lock:
            self._running.pop(key, None)
        body = [b"\x08" + wire._varint(step_id) + b"\x12" + wire._varint(len(response)),
                response]
        try:
            with self._write:
                send_all(self._conn, [struct.pack("<Q", len(body[0]) + len(response)),
                                       *body])
        except OSError:
            pass  # the caller is gone: it failed the call itself
        self.releases.flush()

    def _write_release(self, frame: bytes) -> bool:
        """A frame of released slots; False at once when a reply is being written (its
        writer flushes after it)."""
        if not self._write.acquire(blocking=False):
            return False
        try:
            self._conn.sendall(struct.pack("<Q", len(frame)) + frame)
        except OSError:
            pass  # the producer is gone
        finally:
            self._write.release()
        return True

    def close(self) -> None:
        """The connection ended: the calls still running are cancelled (as gRPC does when
        a client goes away)."""
        with self._lock:
            cms = [cm for _, cm in self._running.values()]
        for cm in cms:
            cm.start_cancel()


def decode_reply(data) -> tuple[int, memoryview]:
    """(step id, RunGraphResponse bytes) of a reply frame."""
    got = wire.pick_fields(data, {1 << 3: "step_id", 2 << 3 | 2: "response"})
    if "response" not in got:
        raise ValueError("malformed RunGraph reply")
    return got.get("step_id", 0), got["response"]


_CALL_FIELDS = {1 << 3: "timeout_ms", 2 << 3 | 2: "request", 3 << 3: "step_id", 4 << 3: "method"}


def decode_call(buf: memoryview) -> tuple[float, int, int, memoryview, list]:
    """(timeout in seconds, step id, method, request bytes, shared tensors) of a call
    frame's field: {uint64 timeout_ms = 1; bytes request = 2; uint64 step_id = 3; uint32
    method = 4 (RUN_GRAPH when absent); repeated bytes shared = 5 (each the body of a
    shared-memory tensor frame, shm.encode_tensor: a tensor of the request that crossed
    in the connection's segment, named by its key)}."""
    got = wire.pick_fields(buf, _CALL_FIELDS, {5 << 3 | 2: "shared"})
    if "request" not in got:
        raise ValueError("malformed RunGraph call")
    return (got.get("timeout_ms", 0) / 1000.0, got.get("step_id", 0),
            got.get("method", RUN_GRAPH), got["request"], got["shared"])
