"""The consumer's side of one incoming push connection (push.py): the threads that read
it (`Readers`: the thread that reads a call frame runs the call) and the calls running for
it (`Calls`: their cancellation and their replies)."""

from __future__ import annotations

import socket
import struct
import threading

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
