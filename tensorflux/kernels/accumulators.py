"""Conditional accumulators and Barrier: resources that aggregate across steps.

ConditionalAccumulator (dense) and SparseConditionalAccumulator (row-indexed) sum the
gradients applied to them, dropping any whose `local_step` is older than their global step
(stale replicas; each drop is counted, `num_dropped`); a take waits, without holding a
thread, until `num_required` gradients are in, returns the mean (or sum), resets the sum
and increments the global step. Takers are served in arrival order. A Barrier collects the
components of each key and releases complete keys in insertion order.

As in kernels/queues.py, waiting takes are attempts cancellable through the step's
CancellationManager, finished exactly once under the resource's lock, with callbacks run
after the lock is released.
"""

from __future__ import annotations

import heapq
import threading
from collections import deque

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels.queues import shape_str


class _Taker:
    __slots__ = ("n", "done", "cm", "token", "finished", "result", "error", "allow_small")

    def __init__(self, n: int, done, allow_small: bool = False):
        self.n = n
        self.done = done
        self.cm = None
        self.token = None
        self.finished = False
        self.result = None
        self.error = None
        self.allow_small = allow_small


def _finish(takers) -> None:
    for t in takers:
        if t.cm is not None:
            t.cm.deregister(t.token)
        t.done(t.error if t.error is not None else t.result)


def _compatible(shape, want) -> bool:
    if want is None:
        return True
    return len(shape) == len(want) and all(w is None or w == d
                                           for d, w in zip(shape, want, strict=True))


class _Waiting:
    """Takers waiting in arrival order, cancellable; subclasses define `_serve_locked`."""

    kind = ""
    dropped = False  # set when the ResourceMgr drops the resource

    def __init__(self):
        self._lock = threading.Lock()
        self._takers: deque[_Taker] = deque()

    def _wait(self, cm, taker: _Taker) -> None:
        with self._lock:
            if cm is not None:
                token = cm.get_token()
                if not cm.register(token, lambda: self._cancel(taker)):
                    taker.error = errors.CancelledError(None, None, "TakeGrad operation was "
                                                        "cancelled")
                    taker.finished = True
                    finished = [taker]
                else:
                    taker.cm, taker.token = cm, token
                    self._takers.append(taker)
                    finished = self._serve_locked()
            else:
                self._takers.append(taker)
                finished = self._serve_locked()
        _finish(finished)

    def _cancel(self, taker: _Taker) -> None:
        with self._lock:
            if taker.finished:
                return
            self._takers.remove(taker)
            taker.finished = True
            taker.cm = None
        taker.done(errors.CancelledError(None, None, f"{self.kind} operation was cancelled"))

    def close_resource(self) -> None:
        with self._lock:
            self.dropped = True
            takers, self._takers = list(self._takers), deque()
            for t in takers:
                t.finished = True
                t.error = errors.CancelledError(None, None,
                                                f"{self.kind} operation was cancelled")
        _finish(takers)


class _Accumulator(_Waiting):
    """What the dense and sparse accumulators share: a global step that makes older
    gradients stale, a count of the gradients applied since the last take, and takers
    served in order once enough have come (`_result_locked` makes each one's result and
    starts the next round)."""

    kind = "TakeGrad"

    def __init__(self, name: str, dtype, shape, reduction_type: str):
        super().__init__()
        self.name = name
        self.dtype = dtype
        self.np_dtype = dtype.numpy_dtype
        self.shape = shape  # tuple (None entries unknown) or None
        self.mean = reduction_type == "MEAN"
        self.global_step = 0
        self.count = 0
        self.stale_dropped = 0  # stale gradients dropped since creation

    def check_compatible(self, dtype, shape, reduction_type) -> None:
        if dtype != self.dtype or shape != self.shape or (reduction_type == "MEAN") != \
                self.mean:
            raise errors.InvalidArgumentError(
                None, None, f"Shared accumulator '{self.name}' has a different dtype, shape "
                "or reduction_type than requested")

    def num_accumulated(self) -> int:
        with self._lock:
            return self.count

    def num_dropped(self) -> int:
        with self._lock:
            return self.stale_dropped

    def set_global_step(self, step: int) -> None:
        with self._lock:
            self.global_step = int(step)

    def take(self, cm, num_required: int, done) -> None:
        if num_required <= 0:
            done(errors.InvalidArgumentError(
                None, None, f"Argument num_required must be positive, but was {num_required}"))
            return
        self._wait(cm, _Taker(num_required, done))

    def _serve_locked(self) -> list:
        finished = []
        while self._takers and self.count >= self._takers[0].n:
            t = self._takers.popleft()
            t.finished = True
            t.result = self._result_locked()
            self.count = 0
            self.global_step += 1
            finished.append(t)
        return finished

    def _result_locked(self):
        raise NotImplementedError


class ConditionalAccumulator(_Accumulator):
    """A dense gradient accumulator (TF's ConditionalAccumulator)."""

    resource_kind = "ConditionalAccumulator"

    def __init__(self, name: str, dtype, shape, reduction_type: str):
        super().__init__(name, dtype, shape, reduction_type)
        self._sum: np.ndarray | None = None

    def apply(self, local_step: int, grad: np.ndarray) -> None:
        """Adds `grad` unless it is stale. InvalidArgumentError on a shape that does not fit."""
        with self._lock:
            if local_step < self.global_step:
                self.stale_dropped += 1  # stale: dropped, as TensorFlow does (it only logs)
                return
            if not _compatible(grad.shape, self.shape) or (
                    self._sum is not None and grad.shape != self._sum.shape):
                want = self._sum.shape if self._sum is not None else self.shape
                raise errors.InvalidArgumentError(
                    None, None, f"Shape mismatch: expected shape {shape_str(want)}, got "
                    f"{shape_str(grad.shape)} (accumulator '{self.name}')")
            if self._sum is None:
                self._sum = np.array(grad, dtype=self.np_dtype, copy=True)
            else:
                np.add(self._sum, grad, out=self._sum, casting="unsafe")
            self.count += 1
            finished = self._serve_locked()
        _finish(finished)

    def _result_locked(self):
        total, count, self._sum = self._sum, self.count, None
        if not self.mean:
            return total
        if total.dtype.kind in "iu":
            return (total / count).astype(total.dtype)  # truncates toward zero
        return (total / count).astype(total.dtype, copy=False)


class SparseConditionalAccumulator(_Accumulator):
    """A row-indexed gradient accumulator (TF's SparseConditionalAccumulator): the sum and
    the number of contributions per row index."""

    resource_kind = "SparseConditionalAccumulator"

    def __init__(self, name: str, dtype, shape, reduction_type: str):
        super().__init__(name, dtype, shape, reduction_type)
        self._rows: dict[int, list] = {}  # index -> [sum row, contributions]
        self._row_shape: tuple | None = None
        self._dense_shape: tuple | None = None

    def apply(self, local_step, indices, values, dense_shape, has_known_shape) -> None:
        indices = np.asarray(indices, np.int64).reshape(-1)
        values = np.asarray(values, self.np_dtype)
        if values.ndim == 0 or len(values) != len(indices):
            raise errors.InvalidArgumentError(
                None, None, f"Shape mismatch: gradient_indices has {len(indices)} entries but "
                f"gradient_values has shape {shape_str(values.shape)}")
        with self._lock:
            if local_step < self.global_step:
                self.stale_dropped += 1
                return
            if has_known_shape:
                dense = tuple(int(d) for d in np.asarray(dense_shape).reshape(-1))
                if not _compatible(dense, self.shape) or (
                        self._dense_shape is not None and dense != self._dense_shape):
                    raise errors.InvalidArgumentError(
                        None, None, f"Shape mismatch: expected shape "
                        f"{shape_str(self._dense_shape or self.shape)}, got {shape_str(dense)}"
                        f" (accumulator '{self.name}')")
                self._dense_shape = dense
            row_shape = values.shape[1:]
            if (self._row_shape is not None and row_shape != self._row_shape) or (
                    self.shape is not None and not _compatible(row_shape, self.shape[1:])):
                raise errors.InvalidArgumentError(
                    None, None, f"Shape mismatch: values rows have shape "
                    f"{shape_str(row_shape)}, expected {shape_str(self._row_shape)}")
            self._row_shape = row_shape
            rows = self._rows
            for i, row in zip(indices.tolist(), values, strict=True):
                slot = rows.get(i)
                if slot is None:
                    rows[i] = [np.array(row, copy=True), 1]
                else:
                    slot[0] += row
                    slot[1] += 1
            self.count += 1
            finished = self._serve_locked()
        _finish(finished)

    def _result_locked(self):
        order = sorted(self._rows)
        row_shape = self._row_shape or ()
        values = np.empty((len(order),) + row_shape, self.np_dtype)
        for k, i in enumerate(order):
            total, n = self._rows[i]
            values[k] = total / n if self.mean else total
        indices = np.array(order, np.int64)
        if self.shape is not None and all(d is not None for d in self.shape):
            shape = self.shape
        elif self._dense_shape is not None:
            shape = self._dense_shape
        else:
            shape = ((order[-1] + 1) if order else 0,) + row_shape
        self._rows, self._dense_shape = {}, None
        return indices, values, np.array(shape, np.int64)


class Barrier(_Waiting):
    """Keys waiting for all their components (TF's Barrier)."""

    kind = "TakeMany"
    resource_kind = "Barrier"

    def __init__(self, name: str, dtypes, shapes, capacity: int):
        super().__init__()
        self.name = name
        self.dtypes = list(dtypes)
        self.np_dtypes = [d.numpy_dtype for d in self.dtypes]
        self.shapes = shapes
        self.capacity = capacity
        self._incomplete: dict[bytes, list] = {}  # key -> [index, values, missing]
        self._ready: list = []  # heap of (index, key, values)
        self._next_index = -(2**63)
        self._closed = False
        self._cancelled = False

    def ready_size(self) -> int:
        with self._lock:
            return len(self._ready)

    def incomplete_size(self) -> int:
        with self._lock:
            return len(self._incomplete)

    def insert_many(self, component: int, keys, values) -> None:
        keys = [k if isinstance(k, bytes) else str(k).encode()
                for k in np.asarray(keys, dtype=object).reshape(-1)]
        if component < 0 or component >= len(self.dtypes):
            raise errors.InvalidArgumentError(
                None, None, f"The component ID is out of range {component} > num_components "
                f"(= {len(self.dtypes)})")
        values = np.asarray(values, self.np_dtypes[component])
        if values.ndim == 0 or len(values) != len(keys):
            raise errors.InvalidArgumentError(
                None, None, f"Shape mismatch: keys has {len(keys)} entries but values has "
                f"shape {shape_str(values.shape)}")
        if self.shapes is not None and not _compatible(values.shape[1:],
                                                       self.shapes[component]):
            raise errors.InvalidArgumentError(
                None, None, f"Shape mismatch in component {component} of barrier "
                f"'{self.name}': expected {shape_str(self.shapes[component])}, got "
                f"{shape_str(values.shape[1:])}")
        with self._lock:
            new = [k for k in dict.fromkeys(keys) if k not in self._incomplete]
            if self._cancelled or (self._closed and new):
                raise errors.CancelledError(
                    None, None, f"Barrier {self.name} is closed.  Pending enqueues cancelled: "
                    f"{int(self._cancelled)}.  Number of new insertions: {len(new)}.  Number "
                    f"of incomplete keys: {len(self._incomplete)}.")
            for k in keys:
                entry = self._incomplete.get(k)
                if entry is not None and entry[1][component] is not None:
                    raise errors.InvalidArgumentError(
                        None, None, f"Key {k.decode(errors='replace')} already has a value "
                        f"for component {component} in barrier {self.name}")
            for k, row in zip(keys, values, strict=True):
                entry = self._incomplete.get(k)
                if entry is None:
                    entry = self._incomplete[k] = [self._next_index,
                                                   [None] * len(self.dtypes), len(self.dtypes)]
                    self._next_index += 1
                entry[1][component] = np.array(row, copy=True)
                entry[2] -= 1
                if entry[2] == 0:
                    del self._incomplete[k]
                    heapq.heappush(self._ready, (entry[0], k, entry[1]))
            finished = self._serve_locked()
        _finish(finished)

    def take_many(self, cm, n: int, allow_small: bool, done) -> None:
        self._wait(cm, _Taker(n, done, allow_small))

    def close(self, cancel_pending_enqueues: bool) -> None:
        with self._lock:
            self._closed = True
            if cancel_pending_enqueues:
                self._cancelled = True
                self._incomplete.clear()
            finished = self._serve_locked()
        _finish(finished)

    def _serve_locked(self) -> list:
        finished = []
        while self._takers:
            t = self._takers[0]
            ready = len(self._ready)
            if ready >= t.n:
                count = t.n
            elif self._closed and not self._incomplete:
                if not (t.allow_small and ready > 0):
                    self._takers.popleft()
                    t.finished = True
                    t.error = errors.OutOfRangeError(
                        None, None, f"Barrier '{self.name}' is closed and has insufficient "
                        f"elements (requested {t.n}, total size {ready})")
                    finished.append(t)
                    continue
                count = ready
            else:
                break
            self._takers.popleft()
            t.finished = True
            taken = [heapq.heappop(self._ready) for _ in range(count)]
            indices = np.array([e[0] for e in taken], np.int64)
            keys = np.empty(count, dtype=object)
            keys[:] = [e[1] for e in taken]
            values = []
            for c, dt in enumerate(self.np_dtypes):
                rows = [e[2][c] for e in taken]
                if rows:
                    values.append(np.stack(rows).astype(dt, copy=False))
                else:
                    shape = self.shapes[c] if self.shapes else ()
                    values.append(np.empty((0,) + tuple(d or 0 for d in shape), dt))
            t.result = (indices, keys, *values)
            finished.append(t)
        return finished
