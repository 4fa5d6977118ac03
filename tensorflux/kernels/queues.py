"""Queue resources: FIFOQueue, PaddingFIFOQueue, RandomShuffleQueue, PriorityQueue.

A queue lives in a device's ResourceMgr (paper §3.1; whitepaper §4.6) and is hit by many
steps and threads at once. Its kernels (kernels/cpu/data_flow_ops.py) are asynchronous:
an enqueue that finds the queue full, or a dequeue that finds it empty, leaves an *attempt*
behind and returns; no thread waits. Whoever later changes the queue (an enqueue, a
dequeue, a close, a cancellation) runs the waiting attempts.

Invariants (all under `self._lock`):
  - Attempts wait in two FIFO deques, enqueues and dequeues; only the head of each may
    progress. `_flush_locked` runs heads until neither side moves.
  - An attempt finishes exactly once: it is popped (flush), cancelled (the step's
    CancellationManager) or failed (close with cancel_pending_enqueues, resource dropped),
    and `finished` is set under the lock, so a late cancellation finds it finished and does
    nothing.
  - A dequeue_many may take elements in several pieces as they arrive (as TensorFlow's
    does, so a batch may exceed the capacity). If it then fails (closed with too few
    elements, or cancelled) its pieces go back to the front of the queue: nothing is lost.
  - `done` callbacks run after the lock is released, on whichever thread made progress.

Elements are the queue's own: `own`/`own_batch` copy what an enqueue is given (scalar
components of element queues become immutable Python objects instead), and dequeued arrays
are never written by the queue again, so they may be views of stored batches.
"""

from __future__ import annotations

import heapq
import itertools
import os
import threading
from collections import deque

import numpy as np

from tensorflux.framework import errors
from tensorflux.lib import philox

COMPLETE, PROGRESS, NO_PROGRESS = 0, 1, 2
_seq = itertools.count()


class Attempt:
    """A pending enqueue, dequeue or close, with what it needs to resume."""

    __slots__ = ("run", "done", "cm", "token", "finished", "result", "error", "n", "got",
                 "parts", "allow_small", "single", "comps", "count", "index", "assemble")

    def __init__(self, run, done):
        self.run = run
        self.done = done
        self.cm = None
        self.token = None
        self.finished = False
        self.result = None
        self.error = None
        # (assemble, parts, n, single): the batch is put together by `_finish`, outside the
        # queue's lock, so concurrent enqueuers never wait behind a concatenation.
        self.assemble = None


def type_name(dtype) -> str:
    """A dtype as TensorFlow's messages print it ("float", "int32")."""
    return {"float32": "float", "float64": "double", "float16": "half"}.get(dtype.name,
                                                                          dtype.name)


def shape_str(shape) -> str:
    if shape is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


class DeferringLock:
    """A resource's lock that no thread ever sleeps on while holding the GIL.

    Subclasses run every change as `_call(op, *args)`, where `op(*args)` runs under the
    lock and returns the attempts it finished (or `(done, value)` pairs); they are called
    back after the lock is released (`_finish`).
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._deferred: deque[tuple] = deque()  # operations left to the lock's holder

    # ---- the lock ------------------------------------------------------------------------
    # Every change runs under `_lock`, but no thread ever sleeps on it in the common case:
    # an operation that finds the lock taken is appended to `_deferred` (deque appends are
    # atomic) and the caller returns at once (the operations are asynchronous). Whoever
    # holds the lock runs the deferred operations, in arrival order, before letting go, and
    # looks again after letting go, taking the lock back if one arrived meanwhile; so none
    # is left behind. Under the GIL this matters: a thread woken on a lock must then wait
    # for the GIL *while holding the lock*, and every other thread queues behind it (a lock
    # convoy that took 4 reader threads filling one queue down to a third of 1 thread's
    # speed).
    def _call(self, op, *args) -> None:
        """Runs `op(*args) -> finished` under the lock now, or leaves it to the holder."""
        if self._deferred or not self._lock.acquire(False):
            self._deferred.append((op, args))
            if not self._lock.acquire(False):
                return  # the holder runs it (see above)
            finished = []
        else:
            finished = op(*args)
        self._release(finished)

    def _release(self, finished: list) -> None:
        """Runs the deferred operations, lets go of the lock, then calls back `finished`."""
        deferred = self._deferred
        while True:
            try:
                while deferred:
                    op, args = deferred.popleft()
                    finished += op(*args)
            finally:
                self._lock.release()
            if finished:
                _finish(finished)
            if not deferred or not self._lock.acquire(False):
                return
            finished = []


class QueueBase(DeferringLock):
    """The blocking, closing and cancelling logic shared by every queue.

    Subclasses define the storage: `_size`, `_available` (how many a dequeue may take now),
    `_put(comps)`, `_put_batch(comps, start, stop)`, `_take(k) -> piece`,
    `_restore(pieces)` and `_assemble(pieces, n, single) -> list of arrays`.

    Args:
      name: the resource name used in messages ("_0_fifo_queue" or the shared name).
      dtypes: the component DTypes.
      shapes: one tuple per component (None entries for unknown dims), or None if the
        queue was built without shapes.
      capacity: the most elements it holds; <= 0 means unbounded.
    """

    kind = "Queue"
    op_type = ""
    dropped = False  # set when the ResourceMgr drops the queue

    def __init__(self, name: str, dtypes, shapes, capacity: int):
        self.name = name
        self.dtypes = list(dtypes)
        self.np_dtypes = [d.numpy_dtype for d in self.dtypes]
        self.shapes = None if shapes is None else [tuple(s) for s in shapes]
        self.capacity = capacity if capacity > 0 else 2**31 - 1
        super().__init__()
        self._closed = False
        self._enqueue_attempts: deque[Attempt] = deque()
        self._dequeue_attempts: deque[Attempt] = deque()

    def __repr__(self) -> str:
        return f"<{self.kind} '{self.name}' size={self.size()} closed={self._closed}>"

    # ---- facts ---------------------------------------------------------------------------
    def size(self) -> int:
        self._lock.acquire()
        n = self._size()
        self._release([])
        return n

    def is_closed(self) -> bool:
        return self._closed

    def check_compatible(self, kind: str, capacity: int, dtypes, shapes) -> None:
        """InvalidArgumentError unless a queue op asking for this shared queue agrees."""
        if kind != self.kind:
            raise errors.InvalidArgumentError(
                None, None, f"Expected {kind}, found {self.op_type or self.kind}")
        capacity = capacity if capacity > 0 else 2**31 - 1
        if capacity != self.capacity:
            raise errors.InvalidArgumentError(
                None, None, f"Shared queue '{self.name}' has capacity {self.capacity} but "
                f"requested capacity was {capacity}")
        if list(dtypes) != self.dtypes:
            raise errors.InvalidArgumentError(
                None, None, f"Shared queue '{self.name}' has component types "
                f"{', '.join(type_name(d) for d in self.dtypes)} but requested component "
                f"types were {', '.join(type_name(d) for d in dtypes)}")
        want = None if shapes is None else [tuple(s) for s in shapes]
        if want != self.shapes:
            have = ", ".join(shape_str(s) for s in self.shapes or ())
            asked = ", ".join(shape_str(s) for s in want or ())
            raise errors.InvalidArgumentError(
                None, None, f"Shared queue '{self.name}' has component shapes [{have}] but "
                f"requested component shapes were [{asked}]")

    # ---- what the queue stores -----------------------------------------------------------
    def shape_mismatch(self, i: int, want, got) -> errors.InvalidArgumentError:
        return errors.InvalidArgumentError(
            None, None, f"Shape mismatch in tuple component {i}. Expected {shape_str(want)}, "
            f"got {shape_str(got)} ({self.kind} '{self.name}')")

    def own(self, comps) -> list:
        """One element as the queue stores it: private copies of `comps` (the queue must own
        its elements), checked against the component shapes."""
        shapes = self.shapes
        out = []
        for i, (v, dt) in enumerate(zip(comps, self.np_dtypes, strict=True)):
            arr = np.array(v, dtype=dt)
            if shapes is not None and arr.shape != shapes[i] and not _fits(arr.shape,
                                                                         shapes[i]):
                raise self.shape_mismatch(i, shapes[i], arr.shape)
            out.append(arr)
        return out

    def own_batch(self, comps) -> tuple[list, int]:
        """A batch for enqueue_many: private copies and the batch size, checked."""
        shapes = self.shapes
        out = []
        batch = None
        for i, (v, dt) in enumerate(zip(comps, self.np_dtypes, strict=True)):
            arr = np.array(v, dtype=dt)
            shape = arr.shape
            if not shape:
                raise self.shape_mismatch(i, (None,) + (shapes[i] if shapes else ()), ())
            if batch is None:
                batch = shape[0]
            want = (batch,) + (shapes[i] if shapes is not None else shape[1:])
            if shape != want and (shape[0] != batch or not _fits(shape[1:], want[1:])):
                raise self.shape_mismatch(i, want, shape)
            out.append(arr)
        return out, batch or 0

    # ---- operations (each calls done(result or exception) exactly once; the result of an
    # enqueue, enqueue_many or close is None) ------------------------------------------------
    def enqueue(self, cm, comps, done) -> None:
        """Adds one element (as `own` returned it)."""
        self._call(self._enqueue_locked, cm, comps, done)

    def _enqueue_locked(self, cm, comps, done) -> list:
        if not self._enqueue_attempts and not self._closed and self._size() < self.capacity:
            self._put(comps)
            if self._dequeue_attempts:
                return [(done, None)] + self._flush_locked()
            return [(done, None)]
        a = Attempt(self._run_enqueue, done)
        a.comps, a.count = comps, None
        return self._wait_locked(a, self._enqueue_attempts, cm, "Enqueue")

    def enqueue_many(self, cm, comps, count: int, done) -> None:
        """Adds the `count` elements of a batch (as `own_batch` returned it)."""
        a = Attempt(self._run_enqueue, done)
        a.comps, a.count, a.index = comps, count, 0
        self._call(self._wait_locked, a, self._enqueue_attempts, cm, "Enqueue")

    def dequeue(self, cm, done) -> None:
        """Takes one element; done(list of arrays)."""
        self._call(self._dequeue_locked, cm, 1, False, True, done)

    def dequeue_many(self, cm, n: int, allow_small: bool, done) -> None:
        """Takes `n` elements as one batch (fewer, at least one, if `allow_small` and the
        queue is closed); done(list of batched arrays)."""
        if n == 0:
            done(self._assemble([], 0, False))
            return
        self._call(self._dequeue_locked, cm, n, allow_small, False, done)

    def _dequeue_locked(self, cm, n: int, allow_small: bool, single: bool, done) -> list:
        a = self._dequeue_attempt(n, allow_small, single, done)
        if not self._dequeue_attempts and self._available() >= n:
            a.assemble = (self._assemble, [self._take(n)], n, single)  # done outside the lock
            a.parts = None
            return [a] + self._flush_locked() if self._enqueue_attempts else [a]
        return self._wait_locked(a, self._dequeue_attempts, cm, "Dequeue")

    def close(self, cm, cancel_pending_enqueues: bool, done) -> None:
        """Closes the queue. Without `cancel_pending_enqueues` the close waits behind the
        pending enqueues (as TensorFlow's does); with it, they fail with CancelledError."""
        if cancel_pending_enqueues:
            self._call(self._cancel_close_locked, done)
        else:
            self._call(self._wait_locked, Attempt(self._run_close, done),
                       self._enqueue_attempts, cm, "Enqueue")

    def _cancel_close_locked(self, done) -> list:
        self._closed = True
        cancelled = self._drop_all(self._enqueue_attempts, "Enqueue")
        return cancelled + [(done, None)] + self._flush_locked()

    def close_resource(self) -> None:
        """The resource is dropped (Session.reset, close): every waiting attempt fails
        before this returns."""
        self._lock.acquire()
        self.dropped = True
        self._closed = True
        self._release(self._drop_all(self._enqueue_attempts, "Enqueue")
                      + self._drop_all(self._dequeue_attempts, "Dequeue"))

    # ---- attempts ------------------------------------------------------------------------
    def _dequeue_attempt(self, n: int, allow_small: bool, single: bool, done) -> Attempt:
        a = Attempt(self._run_dequeue, done)
        a.n, a.got, a.parts, a.allow_small, a.single = n, 0, [], allow_small, single
        return a

    def _wait_locked(self, a: Attempt, attempts: deque, cm, what: str) -> list:
        """Queues `a` (cancellable through `cm`) and runs whatever can progress now."""
        if cm is not None:
            token = cm.get_token()
            if not cm.register(token, lambda: self._cancel(a, attempts, what)):
                a.finished = True
                a.error = errors.CancelledError(None, None,
                                                f"{what} operation was cancelled")
                return [a]
            a.cm, a.token = cm, token
        attempts.append(a)
        return self._flush_locked()

    def _flush_locked(self) -> list:
        finished: list[Attempt] = []
        while True:
            progress = self._try(self._enqueue_attempts, finished)
            if self._try(self._dequeue_attempts, finished) or progress:
                continue
            return finished

    @staticmethod
    def _try(attempts: deque, finished: list) -> bool:
        progress = False
        while attempts:
            a = attempts[0]
            r = a.run(a)
            if r == NO_PROGRESS:
                break
            progress = True
            if r == PROGRESS:
                break
            attempts.popleft()
            a.finished = True
            finished.append(a)
        return progress

    def _cancel(self, a: Attempt, attempts: deque, what: str) -> None:
        self._call(self._cancel_locked, a, attempts, what)

    def _cancel_locked(self, a: Attempt, attempts: deque, what: str) -> list:
        if a.finished:
            return []
        attempts.remove(a)
        a.finished = True
        a.cm = None  # being cancelled: nothing to deregister
        if a.run == self._run_dequeue and a.parts:
            self._restore(a.parts)
            a.parts = []
        a.error = errors.CancelledError(None, None, f"{what} operation was cancelled")
        return [a] + self._flush_locked()

    def _drop_all(self, attempts: deque, what: str) -> list:
        dropped = []
        while attempts:
            a = attempts.popleft()
            a.finished = True
            if a.run == self._run_dequeue and a.parts:
                self._restore(a.parts)
                a.parts = []
            a.error = errors.CancelledError(None, None, f"{what} operation was cancelled")
            dropped.append(a)
        return dropped

    def _run_close(self, a: Attempt) -> int:
        if self._closed:
            a.error = errors.CancelledError(None, None,
                                            f"Queue '{self.name}' is already closed.")
        self._closed = True
        return COMPLETE

    def _run_enqueue(self, a: Attempt) -> int:
        if self._closed:
            a.error = errors.CancelledError(None, None, f"{self.kind} '{self.name}' is closed.")
            return COMPLETE
        room = self.capacity - self._size()
        if a.count is None:  # a single element
            if room <= 0:
                return NO_PROGRESS
            self._put(a.comps)
            return COMPLETE
        k = min(room, a.count - a.index)
        if k > 0:
            self._put_batch(a.comps, a.index, a.index + k)
            a.index += k
        if a.index == a.count:
            a.comps = None
            return COMPLETE
        return PROGRESS if k > 0 else NO_PROGRESS

    def _run_dequeue(self, a: Attempt) -> int:
        need = a.n - a.got
        if self._closed:
            size = self._size()
            if size < need:
                if a.allow_small and a.got + size > 0:
                    if size:
                        a.parts.append(self._take(size))
                    a.assemble = (self._assemble, a.parts, a.got + size, False)
                    a.parts = None
                    return COMPLETE
                if a.parts:
                    self._restore(a.parts)
                    a.parts = []
                a.error = errors.OutOfRangeError(
                    None, None, f"{self.kind} '{self.name}' is closed and has insufficient "
                    f"elements (requested {a.n}, current size {size})")
                return COMPLETE
        k = min(self._available(), need)
        if k <= 0:
            return NO_PROGRESS
        a.parts.append(self._take(k))
        a.got += k
        if a.got < a.n:
            return PROGRESS
        a.assemble = (self._assemble, a.parts, a.n, a.single)
        a.parts = None
        return COMPLETE

    # ---- storage (subclasses) ------------------------------------------------------------
    def _size(self) -> int:
        raise NotImplementedError

    def _available(self) -> int:
        return self._size()


def _fits(shape: tuple, want: tuple) -> bool:
    return len(shape) == len(want) and all(w is None or w == d
                                           for d, w in zip(shape, want, strict=True))


def _finish(attempts) -> None:
    """Deregisters and calls back finished attempts (outside the queue's lock); a
    (done, value) pair is a callback with its value."""
    for a in attempts:
        if type(a) is tuple:
            a[0](a[1])
            continue
        if a.cm is not None:
            a.cm.deregister(a.token)
        if a.error is None and a.assemble is not None:
            assemble, parts, n, single = a.assemble
            a.result = assemble(parts, n, single)
        a.done(a.error if a.error is not None else a.result)


# ------------------------------------------------------------------------------------------
# FIFO storage: a deque of batches ("chunks"), so enqueue_many and an aligned dequeue_many
# move whole arrays without splitting them into elements.


class FIFOQueue(QueueBase):
    """First in, first out. Storage: chunks, each a list of component arrays with one
    leading batch dimension; `_head` is how many rows of the first chunk are gone."""

    kind = "FIFOQueue"
    op_type = "FIFOQueueV2"

    def __init__(self, name, dtypes, shapes, capacity):
        super().__init__(name, dtypes, shapes, capacity)
        self._chunks: deque[list[np.ndarray]] = deque()
        self._head = 0
        self._count = 0

    def _size(self) -> int:
        return self._count

    def _put(self, comps) -> None:
        self._chunks.append([c[np.newaxis] for c in comps])
        self._count += 1

    def _put_batch(self, comps, start: int, stop: int) -> None:
        if start == 0 and stop == len(comps[0]):
            self._chunks.append(comps)
        else:
            self._chunks.append([c[start:stop] for c in comps])
        self._count += stop - start

    def _take(self, k: int) -> list:
        """`k` rows as a list of pieces (each a list of component arrays)."""
        pieces = []
        chunks = self._chunks
        self._count -= k
        while k:
            chunk = chunks[0]
            head = self._head
            rows = len(chunk[0]) - head
            if rows <= k:
                pieces.append(chunk if head == 0 else [c[head:] for c in chunk])
                chunks.popleft()
                self._head = 0
                k -= rows
            else:
                pieces.append([c[head:head + k] for c in chunk])
                self._head = head + k
                k = 0
        return pieces

    def _restore(self, parts) -> None:
        if self._head:
            first = self._chunks.popleft()
            self._chunks.appendleft([c[self._head:] for c in first])
            self._head = 0
        for pieces in reversed(parts):
            for piece in reversed(pieces):
                self._chunks.appendleft(piece)
                self._count += len(piece[0])

    def _assemble(self, parts, n: int, single: bool) -> list:
        pieces = [p for part in parts for p in part]
        if single:
            return [c[0, ...] for c in pieces[0]]
        if len(pieces) == 1:
            return list(pieces[0])
        if not pieces:
            return [np.empty((0,) + tuple(s or ()), dt)
                    for s, dt in zip(self._out_shapes(), self.np_dtypes, strict=True)]
        return [np.concatenate(cs) for cs in zip(*pieces, strict=True)]

    def _out_shapes(self):
        return self.shapes if self.shapes is not None else [()] * len(self.dtypes)


class PaddingFIFOQueue(FIFOQueue):
    """A FIFOQueue whose dequeue_many pads each component to the largest element of the
    batch along the dimensions its shape leaves unknown (zeros, or b"" for strings)."""

    kind = "PaddingFIFOQueue"
    op_type = "PaddingFIFOQueueV2"

    def _assemble(self, parts, n: int, single: bool) -> list:
        pieces = [p for part in parts for p in part]
        if single or not pieces:
            if not pieces:
                return [np.empty((0,) + tuple(d or 0 for d in s), dt)
                        for s, dt in zip(self.shapes, self.np_dtypes, strict=True)]
            return [c[0, ...] for c in pieces[0]]
        out = []
        for i, dt in enumerate(self.np_dtypes):
            arrays = [p[i] for p in pieces]
            dims = np.max([a.shape[1:] for a in arrays], axis=0) if arrays[0].ndim > 1 \
                else np.zeros(0, np.int64)
            full = (n,) + tuple(int(d) for d in dims)
            if len(arrays) == 1 and arrays[0].shape == full:
                out.append(arrays[0])
                continue
            if all(a.shape[1:] == full[1:] for a in arrays):
                out.append(np.concatenate(arrays))
                continue
            batch = np.full(full, b"" if dt.kind == "O" else 0, dtype=dt)
            row = 0
            for a in arrays:
                batch[(slice(row, row + len(a)),) + tuple(slice(0, d) for d in a.shape[1:])] = a
                row += len(a)
            out.append(batch)
        return out


# ------------------------------------------------------------------------------------------
# Element storage: RandomShuffleQueue and PriorityQueue keep one tuple per element.


def element_rows(comps, start: int, stop: int, scalar: list[bool]) -> list[tuple]:
    """The elements start..stop of a batch as tuples; scalar components become Python
    objects (bytes, numbers), others stay row views of the batch."""
    cols = []
    for c, is_scalar in zip(comps, scalar, strict=True):
        part = c[start:stop]
        cols.append(part.tolist() if is_scalar else list(part))
    return list(zip(*cols, strict=True))


def stack_elements(elements, i: int, dtype, shape) -> np.ndarray:
    """Component `i` of `elements` batched into one array of shape [n] + `shape`."""
    vals = [e[i] for e in elements]
    if shape == ():
        if np.dtype(dtype).kind == "O":
            out = np.empty(len(vals), dtype=object)
            out[:] = vals
            return out
        return np.array(vals, dtype=dtype)
    out = np.empty((len(vals),) + tuple(shape), dtype=dtype)
    if vals:
        np.stack(vals, out=out)
    return out


class _ElementQueue(QueueBase):
    """Storage as one tuple per element; scalar components held as Python objects."""

    def __init__(self, name, dtypes, shapes, capacity):
        super().__init__(name, dtypes, shapes, capacity)
        self._scalar = [s == () for s in self.shapes] if self.shapes is not None \
            else [False] * len(self.dtypes)
        self._all_scalar = all(self._scalar)

    def own(self, comps) -> tuple:
        """One element as a tuple: scalar components as Python objects (bytes, numbers;
        immutable, so no copy is needed), the others as private arrays."""
        if self._all_scalar:
            if len(comps) == 1:  # the common case: one scalar of the right dtype
                v = comps[0]
                if type(v) is np.ndarray and v.dtype is self.np_dtypes[0] and not v.shape:
                    return (v[()],)
            out = []
            for i, (v, dt) in enumerate(zip(comps, self.np_dtypes, strict=True)):
                if type(v) is not np.ndarray or v.dtype != dt:
                    v = np.asarray(v, dtype=dt)
                if v.shape:
                    raise self.shape_mismatch(i, (), v.shape)
                out.append(v[()])
            return tuple(out)
        arrays = super().own(comps)
        return tuple([c[()] if s else c for c, s in zip(arrays, self._scalar, strict=True)])

    def _assemble(self, parts, n: int, single: bool) -> list:
        elements = [e for part in parts for e in part]
        if single:
            e = elements[0]
            return [np.asarray(v, dtype=dt) if s else v
                    for v, s, dt in zip(e, self._scalar, self.np_dtypes, strict=True)]
        return [stack_elements(elements, i, dt, s)
                for i, (dt, s) in enumerate(zip(self.np_dtypes, self.shapes, strict=True))]


class RandomShuffleQueue(_ElementQueue):
    """Dequeues elements in random order; keeps at least `min_after_dequeue` elements
    unless closed. Each pick takes element w % size (w the next word of TF's
    PhiloxRandom(seed, seed2); random seeds when both are 0) and moves the last element into
    its place, as TensorFlow's queue does: the same enqueues dequeue in TF's order."""

    kind = "RandomShuffleQueue"
    op_type = "RandomShuffleQueueV2"

    def __init__(self, name, dtypes, shapes, capacity, min_after_dequeue, seed, seed2):
        super().__init__(name, dtypes, shapes, capacity)
        self.min_after_dequeue = min_after_dequeue
        if seed == 0 and seed2 == 0:
            seed, seed2 = (int.from_bytes(os.urandom(8), "little") for _ in range(2))
        self._words = philox.single_words(seed, seed2)  # drawn in blocks of 1,024
        self._elements: list[tuple] = []

    def check_compatible(self, kind, capacity, dtypes, shapes, min_after=None) -> None:
        super().check_compatible(kind, capacity, dtypes, shapes)
        if min_after is not None and min_after != self.min_after_dequeue:
            raise errors.InvalidArgumentError(
                None, None, f"Shared queue '{self.name}' has min_after_dequeue "
                f"{self.min_after_dequeue} but requested min_after_dequeue was {min_after}.")

    def _size(self) -> int:
        return len(self._elements)

    def _available(self) -> int:
        n = len(self._elements)
        return n if self._closed else n - self.min_after_dequeue

    def _put(self, element) -> None:
        self._elements.append(element)

    def _put_batch(self, comps, start, stop) -> None:
        self._elements.extend(element_rows(comps, start, stop, self._scalar))

    def _take(self, k: int) -> list:
        """`k` elements drawn uniformly without replacement (swap with the last, pop).

        Runs under the queue's lock, often for k = 1 (a waiting dequeue_many takes elements
        as they arrive), so the random words come from a pre-drawn block: a generator call
        per pick would hold the lock for microseconds that every enqueuer waits behind.
        """
        elements = self._elements
        words = self._words
        out = []
        for _ in range(k):
            j = next(words) % len(elements)
            out.append(elements[j])
            elements[j] = elements[-1]
            elements.pop()
        return out

    def _restore(self, parts) -> None:
        for part in parts:
            self._elements.extend(part)


class PriorityQueue(_ElementQueue):
    """Dequeues the element with the smallest int64 priority (component 0) first; equal
    priorities leave in insertion order."""

    kind = "PriorityQueue"
    op_type = "PriorityQueueV2"

    def __init__(self, name, dtypes, shapes, capacity):
        super().__init__(name, dtypes, shapes, capacity)
        self._heap: list[tuple] = []

    def _size(self) -> int:
        return len(self._heap)

    def _put(self, e) -> None:
        heapq.heappush(self._heap, (int(e[0]), next(_seq), e))

    def _put_batch(self, comps, start, stop) -> None:
        for e in element_rows(comps, start, stop, self._scalar):
            heapq.heappush(self._heap, (int(e[0]), next(_seq), e))

    def _take(self, k: int) -> list:
        return [heapq.heappop(self._heap) for _ in range(k)]

    def _restore(self, parts) -> None:
        for part in parts:
            for entry in part:
                heapq.heappush(self._heap, entry)

    def _assemble(self, parts, n, single) -> list:
        return super()._assemble([[entry[2] for entry in part] for part in parts], n, single)
