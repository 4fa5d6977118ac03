"""CPU kernel of BatchFunction (tensorflux/ops/batch_ops.py, which states the semantics).

The kernel is asynchronous: a call ("task") is split into pieces placed in the node's
`BatchQueue` (one per ResourceMgr, container and shared name) and the step holds no thread
while it waits. The queue's own `num_batch_threads` threads run the batches: a thread takes
a closed batch from `_work` (a SimpleQueue: waiting on it holds no lock), concatenates and
pads the pieces' rows, calls the function (runtime/functions.py, the last task's captured
values), and hands each task its rows.

Invariants (state changes run under the queue's `DeferringLock`, kernels/queues.py, so no
thread sleeps on a lock while holding the GIL; callbacks run after it is released):
  - At most one batch is open (`_open`); a batch is closed when full (its size reaches
    `max_exec`) or at its deadline, and once closed it is put on `_work` exactly once.
  - Each opened batch puts one ("deadline", batch) marker on `_work`; the thread taking it
    closes the batch when the deadline comes, if nothing closed it before.
  - `_waiting` counts the batches opened and not yet taken by a thread (the open one too);
    a task that would make it exceed `max_enqueued_batches` fails with UnavailableError.
  - A task finishes exactly once (`finished`, set under the lock): all its pieces ran, one
    failed, its step was cancelled, or the queue was dropped. Pieces of a finished task
    are skipped by batches not yet run.
"""

from __future__ import annotations

import queue
import threading
import time

import numpy as np

from tensorflux.framework import errors
from tensorflux.kernels import functions as functions_lib
from tensorflux.kernels.queues import DeferringLock
from tensorflux.kernels.registry import kernel_factory


class _Task:
    """One BatchFunction call: its batched inputs (`size` rows), captured values, function
    call and callback, and the outputs of its pieces as they come (by first row)."""

    __slots__ = ("inputs", "size", "captured", "call", "done", "pieces_left", "parts",
                 "finished", "cm", "token")

    def __init__(self, inputs, size, captured, call, done):
        self.inputs, self.size, self.captured = inputs, size, captured
        self.call, self.done = call, done
        self.pieces_left = 0
        self.parts: dict[int, list] = {}
        self.finished = False
        self.cm = None
        self.token = None

    def complete(self, error) -> None:
        """Calls back with `error` or the outputs put together (outside the lock)."""
        if self.cm is not None:
            self.cm.deregister(self.token)
        if error is not None:
            self.done(error)
            return
        parts = [self.parts[k] for k in sorted(self.parts)]
        outs = parts[0] if len(parts) == 1 else \
            [np.concatenate(c) for c in zip(*parts, strict=True)]
        self.done(outs[0] if len(outs) == 1 else tuple(outs))


class _Batch:
    __slots__ = ("pieces", "size", "deadline")

    def __init__(self, deadline: float):
        self.pieces: list[tuple[_Task, int, int]] = []  # (task, first row, end row)
        self.size = 0
        self.deadline = deadline


class BatchQueue(DeferringLock):
    """The batches of one BatchFunction node (see the module docstring)."""

    dropped = False

    def __init__(self, name: str, num_threads: int, max_batch_size: int, timeout_s: float,
                 allowed: list, max_enqueued: int, split: bool):
        super().__init__()
        self.name = name
        self.max_exec = allowed[-1] if allowed else max_batch_size
        self.allowed, self.timeout_s, self.split = allowed, timeout_s, split
        self.max_enqueued = max_enqueued
        self._open: _Batch | None = None
        self._waiting = 0
        self._work: queue.SimpleQueue = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._serve, daemon=True,
                                          name=f"tensorflux-batch-{name}-{i}")
                         for i in range(max(1, num_threads))]
        for t in self._threads:
            t.start()

    def schedule(self, task: _Task, cm) -> None:
        """Places `task`'s rows in batches; task.done(outputs or error) once they ran."""
        self._call(self._schedule_locked, task, cm)

    def close_resource(self) -> None:
        """Dropped (Session.close, a container reset): waiting tasks fail with
        CancelledError and the threads stop once their current batch is done."""
        self._call(self._drop_locked)

    # ---- under the lock ------------------------------------------------------------------
    def _schedule_locked(self, task: _Task, cm) -> list:
        if self.dropped:
            return [(task.done, _cancelled())]
        open_, size, cap = self._open, task.size, self.max_exec
        room = cap - open_.size if open_ is not None else 0
        if self.split:
            new = -(-max(0, size - room) // cap)
        else:
            new = 0 if size <= room else 1
        if self._waiting + new > self.max_enqueued:
            return [(task.done, errors.UnavailableError(
                None, None, "The batch scheduling queue to which this task was submitted is "
                "full"))]
        if cm is not None:
            token = cm.get_token()
            if not cm.register(token, lambda: self._call(self._cancel_locked, task)):
                return [(task.done, _cancelled())]
            task.cm, task.token = cm, token
        start = 0
        while start < size:
            if self._open is None or (not self.split and self._open.size + size > cap):
                self._close_locked(self._open)
                self._open = _Batch(time.monotonic() + self.timeout_s)
                self._waiting += 1
                self._work.put(("deadline", self._open))
            batch = self._open
            take = min(size - start, cap - batch.size)
            batch.pieces.append((task, start, start + take))
            batch.size += take
            task.pieces_left += 1
            start += take
            if batch.size >= cap:
                self._close_locked(batch)
        return []

    def _close_locked(self, batch: _Batch | None) -> list:
        if batch is not None and batch is self._open:
            self._open = None
            self._work.put(batch)
        return []

    def _taken_locked(self) -> list:
        self._waiting -= 1
        return []

    def _cancel_locked(self, task: _Task) -> list:
        if task.finished:
            return []
        task.finished = True
        task.cm = None  # being cancelled: nothing to deregister
        if self._open is not None:
            self._open.pieces = [p for p in self._open.pieces if p[0] is not task]
            self._open.size = sum(stop - start for _, start, stop in self._open.pieces)
        return [(task.complete, _cancelled())]

    def _deliver_locked(self, pieces: list, outs, error) -> list:
        finished = []
        offset = 0
        for task, start, stop in pieces:
            n = stop - start
            if not task.finished:
                if error is not None:
                    task.finished = True
                    finished.append((task.complete, error))
                else:
                    task.parts[start] = [o[offset:offset + n] for o in outs]
                    task.pieces_left -= 1
                    if task.pieces_left == 0:
                        task.finished = True
                        finished.append((task.complete, None))
            offset += n
        return finished

    def _drop_locked(self) -> list:
        self.dropped = True
        out = []
        if self._open is not None:
            out = self._deliver_locked(self._open.pieces, None, _cancelled())
            self._open = None
        for _ in self._threads:
            self._work.put(None)
        return out

    # ---- the batch threads ---------------------------------------------------------------
    def _serve(self) -> None:
        deadlines: list[_Batch] = []  # batches this thread closes when due, earliest first
        while True:
            timeout = None
            if deadlines:
                timeout = max(0.0, deadlines[0].deadline - time.monotonic())
            try:
                item = self._work.get(timeout=timeout)
            except queue.Empty:
                self._call(self._close_locked, deadlines.pop(0))
                continue
            if item is None:
                return
            if type(item) is tuple:
                deadlines.append(item[1])
                deadlines.sort(key=lambda b: b.deadline)
            else:
                self._call(self._taken_locked)
                self._run(item)

    def _run(self, batch: _Batch) -> None:
        pieces = [p for p in batch.pieces if not p[0].finished]
        if not pieces:
            return
        if self.dropped:
            self._call(self._deliver_locked, pieces, None, _cancelled())
            return
        size = sum(stop - start for _, start, stop in pieces)
        padded = next((s for s in self.allowed if s >= size), size)
        last = pieces[-1][0]
        outs = None
        try:
            args = []
            for i in range(len(last.inputs)):
                x = np.concatenate([t.inputs[i][a:b] for t, a, b in pieces])
                if padded > size:
                    x = np.concatenate([x, np.repeat(x[:1], padded - size, axis=0)])
                args.append(x)
            outs = last.call(args + list(last.captured))
            for o in outs:
                if np.ndim(o) == 0 or np.shape(o)[0] != padded:
                    raise errors.FailedPreconditionError(
                        None, None, "Batched output tensor's 0th dimension does not equal "
                        "the sum of the 0th dimension sizes of the input tensors. 0th "
                        f"dimension size: {np.shape(o)[0] if np.ndim(o) else 0}; batch size: "
                        f"{size}; unbatched tasks size: 0; padding size: {padded - size}")
            error = None
        except ValueError as e:  # the tasks' rows do not concatenate
            error = errors.InvalidArgumentError(None, None, str(e))
        except BaseException as e:  # noqa: BLE001 - reported to every task of the batch
            error = e
        self._call(self._deliver_locked, pieces, outs, error)


def _cancelled() -> errors.CancelledError:
    return errors.CancelledError(None, None, "Batch function call was cancelled")


def _check_attrs(allowed: list, max_batch_size: int, split: bool) -> None:
    if any(b <= a for a, b in zip(allowed, allowed[1:], strict=False)):
        raise errors.InvalidArgumentError(
            None, None, "allowed_batch_sizes entries must be monotonically increasing")
    if allowed and not split and allowed[-1] != max_batch_size:
        raise errors.InvalidArgumentError(
            None, None, "final entry in allowed_batch_sizes must equal max_batch_size when "
            "enable_large_batch_splitting is False")


def _check_inputs(inputs, names: list) -> int:
    """The task size of `inputs`; InvalidArgumentError unless all have one 0th dim."""
    shapes = [np.shape(x) for x in inputs]
    problem = None
    if any(len(s) == 0 for s in shapes):
        problem = "Batching input tensors must have at least one dimension."
    elif len({s[0] for s in shapes}) > 1:
        problem = ("Batching input tensors supplied in a given op invocation must have equal "
                   "0th-dimension size.")
    if problem is not None:
        listing = "".join(f"\n - {n} has shape [{','.join(map(str, s))}]"
                          for n, s in zip(names, shapes, strict=True))
        raise errors.InvalidArgumentError(
            None, None, f"{problem}\nBelow are the input tensors: {listing}\n")
    return shapes[0][0]


@kernel_factory("BatchFunction", is_async=True)
def _batch_function(node):
    a = node.attrs
    allowed = [int(s) for s in a.get("allowed_batch_sizes") or ()]
    max_batch_size, split = int(a["max_batch_size"]), bool(a["enable_large_batch_splitting"])
    _check_attrs(allowed, max_batch_size, split)
    n_in = len(a["Tin"])
    names = [src.name for src, _ in node.inputs[:n_in]]
    empty = [np.zeros((0,), dt.numpy_dtype) for dt in a["Tout"]]
    empty = empty[0] if len(empty) == 1 else tuple(empty)
    container, name = a.get("container", ""), a.get("shared_name", "") or node.name
    func, calls = a["f"], {}

    def create():
        return BatchQueue(name, int(a["num_batch_threads"]), max_batch_size,
                          int(a["batch_timeout_micros"]) / 1e6, allowed,
                          int(a["max_enqueued_batches"]), split)

    def compute(ctx, done, *inputs):
        size = _check_inputs(inputs[:n_in], names)
        if size == 0:
            done(empty)
            return
        if size > max_batch_size:
            raise errors.InvalidArgumentError(
                None, None, f"Task size {size} is larger than maximum input batch size "
                f"{max_batch_size}")
        key = (id(ctx.device), id(ctx.session))
        call = calls.get(key)
        if call is None:
            call = calls.setdefault(key, functions_lib.instantiate(func, ctx))
        batches = ctx.resource_mgr.lookup_or_create(container, name, create)
        batches.schedule(_Task(inputs[:n_in], size, inputs[n_in:], call, done),
                         ctx.cancellation)
    return compute
