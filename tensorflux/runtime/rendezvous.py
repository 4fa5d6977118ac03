"""Rendezvous: where a Send leaves a tensor and the matching Recv picks it up (paper §3.3).

A key names one transfer of one step (tensorflux/framework/rendezvous_key.py makes and
parses keys; the Send/Recv kernels need them too, and kernels sit below the runtime).

Invariants of LocalRendezvous, the in-process implementation every step uses:
- For each key, the table holds either sent items waiting for a Recv, or Recv callbacks
  waiting for a Send, never both; each Send is matched to exactly one Recv, in order.
- After `start_abort(error)`, every pending and future Recv completes with that error and
  every Send raises it; nothing blocks forever.
- Callbacks run outside the lock.

The gRPC runtime implements the same interface: a remote Recv asks the producer's worker
(RecvTensor), whose LocalRendezvous answers it.
"""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from collections.abc import Callable

from tensorflux.framework import errors

DoneCallback = Callable[[errors.OpError | None, object, bool], None]


class Rendezvous:
    """The interface: Send, asynchronous Recv, and abort."""

    def send(self, key: str, value, is_dead: bool = False) -> None:
        raise NotImplementedError

    def recv_async(self, key: str, done: DoneCallback) -> None:
        raise NotImplementedError

    def start_abort(self, error: errors.OpError) -> None:
        raise NotImplementedError

    def hold_sends(self):
        """A context within which this thread's sends to other processes may be held
        back until `flush_sends` (a step's schedule holds consecutive pushed _Sends, so
        they cross together). Here nothing is held."""
        return contextlib.nullcontext()

    def flush_sends(self) -> None:
        """Sends what this thread's held sends left (see `hold_sends`)."""

    def _waiting(self) -> None:
        """Called by `recv` before it blocks (the tensor has not come yet)."""

    def recv(self, key: str, timeout: float | None = None):
        """Blocks until the tensor for `key` arrives; returns (value, is_dead).

        Raises:
          DeadlineExceededError: nothing arrived within `timeout` seconds.
          OpError: the rendezvous was aborted with this error.
        """
        # A lock held until the value comes: a quarter of an Event's cost (no Condition in
        # Python), which counts twice per transfer between tasks (sender and receiver).
        arrived = threading.Lock()
        arrived.acquire()
        box: list = []

        def done(err, value, is_dead):
            if not box:  # each waiter is called once; a second call is ignored
                box.append((err, value, is_dead))
                arrived.release()

        self.recv_async(key, done)
        if not box:
            self._waiting()
        if not arrived.acquire(True, -1 if timeout is None else max(0.0, timeout)):
            raise errors.DeadlineExceededError(None, None, f"Timed out waiting for {key}")
        err, value, is_dead = box[0]
        if err is not None:
            raise err
        return value, is_dead


class LocalRendezvous(Rendezvous):
    __slots__ = ("_lock", "_table", "_status")

    def __init__(self):
        self._lock = threading.Lock()
        self._table: dict[str, deque] = {}
        self._status: errors.OpError | None = None

    def send(self, key: str, value, is_dead: bool = False) -> None:
        with self._lock:
            if self._status is not None:
                raise self._status
            q = self._table.get(key)
            if q and callable(q[0]):
                waiter = q.popleft()
                if not q:
                    del self._table[key]
            else:
                self._table.setdefault(key, deque()).append((value, is_dead))
                return
        waiter(None, value, is_dead)

    def recv_async(self, key: str, done: DoneCallback) -> None:
        with self._lock:
            status = self._status
            if status is None:
                q = self._table.get(key)
                if q and not callable(q[0]):
                    value, is_dead = q.popleft()
                    if not q:
                        del self._table[key]
                else:
                    self._table.setdefault(key, deque()).append(done)
                    return
        if status is not None:
            done(status, None, False)
        else:
            done(None, value, is_dead)

    def start_abort(self, error: errors.OpError) -> None:
        with self._lock:
            if self._status is not None:
                return
            self._status = error
            table, self._table = self._table, {}
        for q in table.values():
            for item in q:
                if callable(item):
                    item(error, None, False)

    def pending_keys(self) -> list[str]:
        with self._lock:
            return list(self._table)
