"""Staging areas: the buffers behind Stage/Unstage and the MapStage family.

A staging area lives in a device's ResourceMgr under (container, shared_name) and is found
by every staging op of a session that names it, from any step. `StagingArea` is a bounded
FIFO of tuples with random-access peeks; `MapStagingArea` holds tuples by int64 key, keeps
the tuples whose components came in several puts apart (the incomplete set) until the last
component arrives, and, when ordered, hands out the smallest key first.

Like the queues (kernels/queues.py), the blocking operations are asynchronous: a put that
finds no room (`capacity` tuples, or `memory_limit` bytes), and a get or peek that finds
nothing to take, leave a waiter behind and return; no thread sleeps. Whoever changes the
area runs the waiters that can now finish.

Invariants (all under the lock of `DeferringLock`):
  - Puts wait in one FIFO deque; only its head may go in (a later small put never
    overtakes an earlier large one). Gets and peeks wait in arrival order; each finishes as
    soon as what it asks for is there (a get by key does not wait behind a get of another
    key).
  - A waiter finishes exactly once: taken by `_flush_locked`, cancelled through the step's
    CancellationManager (CancelledError; a RunOptions deadline turns the step's error into
    DeadlineExceededError), or dropped with the resource. `finished` is set under the lock,
    so a late cancellation does nothing.
  - `_bytes` is the sum of `nbytes` of the components held (the complete tuples of a map);
    `capacity` counts the tuples held (complete ones of a map). A tuple larger than the
    memory limit on its own fails with ResourceExhaustedError instead of waiting forever.
  - `done` callbacks run after the lock is released.

Stored arrays are private copies (a fed array may be changed by its owner after the step)
and are never written again, so gets and peeks hand them out without copying.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels.queues import DeferringLock


class Waiter:
    """A pending put, get or peek (the fields `_finish` of kernels/queues.py reads, and
    what the operation needs to resume)."""

    __slots__ = ("done", "cm", "token", "finished", "result", "error", "assemble", "values",
                 "nbytes", "key", "indices", "index", "remove")

    def __init__(self, done, values=None, nbytes: int = 0, key=None, indices=None,
                 index: int = 0, remove: bool = True):
        self.done = done
        self.cm = None
        self.token = None
        self.finished = False
        self.result = None
        self.error = None
        self.assemble = None
        self.values = values
        self.nbytes = nbytes
        self.key = key
        self.indices = indices
        self.index = index
        self.remove = remove


def own(values) -> list[np.ndarray]:
    """Private copies of a tuple's components."""
    return [np.array(v) for v in values]


def tuple_bytes(values) -> int:
    return int(sum(v.nbytes for v in values if v is not None))


def _too_big(nbytes: int, limit: int) -> errors.ResourceExhaustedError:
    return errors.ResourceExhaustedError(
        None, None, f"Attempted to insert tensors with combined size of '{nbytes}' bytes into "
        f"Staging Area with a memory limit of '{limit}'.")


class _Area(DeferringLock):
    """What both areas share: room (capacity and memory), waiting puts in FIFO order,
    waiting gets/peeks, cancellation and dropping. Subclasses store the tuples:
    `_count()`, `_store_locked(w)`, `_serve_locked(w) -> bool`, `_clear_storage()`."""

    kind = ""
    dropped = False  # set when the ResourceMgr drops the area

    def __init__(self, name: str, capacity: int, memory_limit: int):
        super().__init__()
        self.name = name
        self.capacity = capacity
        self.memory_limit = memory_limit
        self._bytes = 0
        self._puts: deque[Waiter] = deque()
        self._takers: list[Waiter] = []  # gets and peeks, in arrival order

    def __repr__(self) -> str:
        return f"<{self.kind} '{self.name}' size={self.size()}>"

    def _has_room(self, nbytes: int) -> bool:
        if self.capacity > 0 and self._count() >= self.capacity:
            return False
        return self.memory_limit <= 0 or self._bytes + nbytes <= self.memory_limit

    def check_fits(self, nbytes: int) -> None:
        """ResourceExhaustedError if a tuple of `nbytes` could never go in."""
        if 0 < self.memory_limit < nbytes:
            raise _too_big(nbytes, self.memory_limit)

    # ---- synchronous facts and changes ---------------------------------------------------
    def _locked(self, fn):
        """fn() under the lock (a short wait at most), waiters it unblocks called back."""
        self._lock.acquire()
        finished: list = []
        try:
            value = fn()
            finished = self._flush_locked()
        except BaseException:
            self._release(finished)
            raise
        self._release(finished)
        return value

    def size(self) -> int:
        return self._locked(self._count)

    def clear(self) -> None:
        def clear():
            self._clear_storage()
            self._bytes = 0

        self._locked(clear)

    # ---- waiting -------------------------------------------------------------------------
    def _put(self, cm, w: Waiter) -> None:
        self._call(self._put_locked, cm, w)

    def _put_locked(self, cm, w: Waiter) -> list:
        if not self._puts and self._has_room(w.nbytes):
            self._store_locked(w)
            return [(w.done, None)] + self._flush_locked()
        return self._wait_locked(w, self._puts, cm, "Stage")

    def _take(self, cm, w: Waiter, what: str) -> None:
        self._call(self._wait_locked, w, self._takers, cm, what)

    def _wait_locked(self, w: Waiter, waiters, cm, what: str) -> list:
        if cm is not None:
            token = cm.get_token()
            if not cm.register(token, lambda: self._call(self._cancel_locked, w, waiters,
                                                           what)):
                w.finished = True
                w.error = errors.CancelledError(None, None, f"{what} operation was cancelled")
                return [w]
            w.cm, w.token = cm, token
        waiters.append(w)
        return self._flush_locked()

    def _cancel_locked(self, w: Waiter, waiters, what: str) -> list:
        if w.finished:
            return []
        waiters.remove(w)
        w.finished = True
        w.cm = None  # being cancelled: nothing to deregister
        w.error = errors.CancelledError(None, None, f"{what} operation was cancelled")
        return [w] + self._flush_locked()

    def _flush_locked(self) -> list:
        """Runs every waiter that can finish now, until none can."""
        finished: list[Waiter] = []
        progress = True
        while progress:
            progress = False
            while self._puts and self._has_room(self._puts[0].nbytes):
                w = self._puts.popleft()
                self._store_locked(w)
                w.finished = True
                finished.append(w)
                progress = True
            for w in list(self._takers):
                if self._serve_locked(w):
                    self._takers.remove(w)
                    w.finished = True
                    finished.append(w)
                    progress = True
        return finished

    def close_resource(self) -> None:
        """The area is dropped (Session.close, reset): every waiter fails before this
        returns."""
        self._lock.acquire()
        self.dropped = True
        dropped = list(self._puts) + self._takers
        self._puts.clear()
        self._takers = []
        for w in dropped:
            w.finished = True
            w.error = errors.CancelledError(None, None, f"{self.kind} '{self.name}' was "
                                            "closed")
        self._release(dropped)

    # ---- storage (subclasses) ------------------------------------------------------------
    def _count(self) -> int:
        raise NotImplementedError

    def _store_locked(self, w: Waiter) -> None:
        raise NotImplementedError

    def _serve_locked(self, w: Waiter) -> bool:
        raise NotImplementedError

    def _clear_storage(self) -> None:
        raise NotImplementedError


class StagingArea(_Area):
    """TF's StagingArea buffer: tuples in FIFO order; `peek(i)` reads the i-th without
    taking it (waiting until there are i + 1)."""

    kind = "StagingArea"

    def __init__(self, name: str, capacity: int, memory_limit: int):
        super().__init__(name, capacity, memory_limit)
        self._buf: deque[list] = deque()

    def put(self, cm, values, done) -> None:
        """Appends a tuple (as `own` returned it); done(None) once it is in."""
        nbytes = tuple_bytes(values)
        self.check_fits(nbytes)
        self._put(cm, Waiter(done, values, nbytes))

    def get(self, cm, done) -> None:
        """Takes the oldest tuple; done(list of arrays)."""
        self._take(cm, Waiter(done), "Unstage")

    def peek(self, cm, index: int, done) -> None:
        """Reads the tuple at `index` (0 = oldest) once there is one."""
        self._take(cm, Waiter(done, index=index, remove=False), "StagePeek")

    def _count(self) -> int:
        return len(self._buf)

    def _store_locked(self, w: Waiter) -> None:
        self._buf.append(w.values)
        self._bytes += w.nbytes
        w.values = None

    def _serve_locked(self, w: Waiter) -> bool:
        if not w.remove:
            if w.index >= len(self._buf):
                return False
            w.result = self._buf[w.index]
            return True
        if not self._buf:
            return False
        w.result = self._buf.popleft()
        self._bytes -= tuple_bytes(w.result)
        return True

    def _clear_storage(self) -> None:
        self._buf.clear()


class MapStagingArea(_Area):
    """TF's (Ordered)MapStagingArea buffer: tuples by int64 key.

    A put of every component adds a complete tuple (waiting for room; if the key is already
    there the tuple is dropped and the first one stays, as in TensorFlow). A put of some
    components goes to the incomplete set (not bounded by capacity) and moves the tuple to
    the complete ones with its last component. A get or peek by key waits for that key; a
    get without key takes the smallest key when ordered, the oldest otherwise. Gets may take
    some components; the tuple goes once all are taken.

    Args:
      name: the shared name.
      n: the number of components of a tuple.
      ordered: whether a get without key takes the smallest key.
      capacity, memory_limit: bounds of the complete tuples (0: none).
    """

    kind = "MapStagingArea"

    def __init__(self, name: str, n: int, ordered: bool, capacity: int, memory_limit: int):
        super().__init__(name, capacity, memory_limit)
        self.n = n
        self.ordered = ordered
        self._map: dict[int, list] = {}
        self._incomplete: dict[int, list] = {}

    def incomplete_size(self) -> int:
        return self._locked(lambda: len(self._incomplete))

    def put(self, cm, key: int, indices: list[int], values, done) -> None:
        """Adds the components `indices` of tuple `key`; done(None or an error)."""
        if len(indices) == self.n:
            nbytes = tuple_bytes(values)
            self.check_fits(nbytes)
            self._put(cm, Waiter(done, list(values), nbytes, key=key))
        else:
            self._call(self._put_partial_locked, cm, Waiter(done, values, key=key,
                                                             indices=indices))

    def _put_partial_locked(self, cm, w: Waiter) -> list:
        entry = self._incomplete.get(w.key)
        if entry is None:
            entry = self._incomplete[w.key] = [None] * self.n
        for i in w.indices:
            if entry[i] is not None:
                w.error = errors.InvalidArgumentError(
                    None, None, f"The tensor for index '{i}' for key '{w.key}' was already "
                    "initialized.")
                return [w]
        for i, v in zip(w.indices, w.values, strict=True):
            entry[i] = v
        if any(v is None for v in entry):
            return [(w.done, None)]
        del self._incomplete[w.key]
        w.values, w.nbytes, w.indices = entry, tuple_bytes(entry), None
        if 0 < self.memory_limit < w.nbytes:
            w.error = _too_big(w.nbytes, self.memory_limit)
            return [w]
        return self._put_locked(cm, w)

    def get(self, cm, key, indices: list[int], done, remove: bool = True) -> None:
        """Takes (`remove`) or reads the components `indices` of tuple `key` (None: any
        tuple); done([key, *arrays]) without a key, done(arrays) with one."""
        what = ("MapUnstage" if key is not None else "MapUnstageNoKey") if remove else \
            "MapPeek"
        self._take(cm, Waiter(done, key=key, indices=indices, remove=remove), what)

    def _count(self) -> int:
        return len(self._map)

    def _store_locked(self, w: Waiter) -> None:
        if w.key not in self._map:
            self._map[w.key] = w.values
            self._bytes += w.nbytes
        w.values = None

    def _serve_locked(self, w: Waiter) -> bool:
        key = w.key
        if key is None:
            if not self._map:
                return False
            key = min(self._map) if self.ordered else next(iter(self._map))
        entry = self._map.get(key)
        if entry is None:
            return False
        gone = next((i for i in w.indices if entry[i] is None), None)
        if gone is not None:
            w.error = errors.InvalidArgumentError(
                None, None, f"Tensor at index '{gone}' for key '{key}' has already been "
                "removed.")
            return True
        values = [entry[i] for i in w.indices]
        if w.remove:
            for i in w.indices:
                entry[i] = None
            self._bytes -= tuple_bytes(values)
            if all(v is None for v in entry):
                del self._map[key]
        w.result = values if w.key is not None else [np.int64(key)] + values
        return True

    def _clear_storage(self) -> None:
        self._map.clear()
        self._incomplete.clear()
