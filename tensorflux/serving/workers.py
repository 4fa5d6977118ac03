"""The server's worker threads: model runs (and large JSON) off the event loop, cheaply.

`loop.run_in_executor(ThreadPoolExecutor)` costs about 60-70 us of CPU per call (a
concurrent.futures.Future, its chaining to an asyncio future, the executor's bookkeeping);
a request to a small model pays it once or twice. `WorkerThreads` hands work over with one
`queue.SimpleQueue.put` and hands the answer back with one `call_soon_threadsafe` setting the
caller's asyncio future directly: about half the CPU (measured on the 2-core machine with a
no-op function: 60-73 us per call through the executor, 30-45 us through this).

    workers = WorkerThreads(8)
    value = await workers.run(fn, *args)   # on an event loop
    workers.shutdown(wait=True)            # queued work still runs, then the threads end

The threads are daemons started up front; `run` after `shutdown` raises RuntimeError, as an
executor's `submit` does. An exception of `fn` is raised by `run` in the caller.

A hop is not always worth it. `ModelRuns` runs a model call on the event loop itself when
that call has been measured cheap (its thread CPU time, a moving average per servable,
signature and power-of-two batch size, below `inline_micros`), and on the worker threads
otherwise. The reason is the GIL, not the hop's own 30-45 us: a batch-of-one run of a small
model is mostly Python, so a worker running it holds the GIL that the event loop needs, and
every NumPy or BLAS call that releases it mid-run hands it over (a futex wake and two
context switches each time). With 8 clients on the 2-core machine and nothing else running,
the unbatched digits CNN took 1,100 us of server CPU per request on 8 worker threads (the
threads on both cores, trading the GIL 5-16 times per request) and 430 us with every run on
the loop. Runs measured expensive (large batches, large models: their time is mostly BLAS
and C loops that do not hold the GIL) still go to the threads, so they neither stall the
loop nor lose the second core.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
import weakref

__all__ = ["ModelRuns", "WorkerThreads"]

_STOP = object()


def _set_result(fut: asyncio.Future, value) -> None:
    if not fut.done():
        fut.set_result(value)


def _set_exception(fut: asyncio.Future, exc: BaseException) -> None:
    if not fut.done():
        fut.set_exception(exc)


class WorkerThreads:
    """`num_threads` daemon threads taking work from one queue (see the module docstring)."""

    def __init__(self, num_threads: int, name: str = "serve"):
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._closed = False
        self._threads = [threading.Thread(target=self._work, name=f"{name}_{i}", daemon=True)
                         for i in range(max(1, int(num_threads)))]
        for t in self._threads:
            t.start()

    def _work(self) -> None:
        get = self._queue.get
        while True:
            item = get()
            if item is _STOP:
                return
            loop, fut, fn, args = item
            try:
                value = fn(*args)
            except BaseException as e:  # noqa: BLE001 - handed to the waiting coroutine
                callback, value = _set_exception, e
            else:
                callback = _set_result
            try:
                loop.call_soon_threadsafe(callback, fut, value)
            except RuntimeError:  # the loop is closed: nobody waits any more
                pass
            del item, loop, fut, fn, args, value

    async def run(self, fn, *args):
        """`fn(*args)` on a worker thread; its value (or exception) here."""
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot run new work after shutdown")
            self._queue.put((loop, fut, fn, args))
        return await fut

    def shutdown(self, wait: bool = True) -> None:
        """Stops taking work; what is queued still runs. With `wait`, returns once every
        thread has ended."""
        with self._lock:
            if not self._closed:
                self._closed = True
                for _ in self._threads:
                    self._queue.put(_STOP)
        if wait:
            for t in self._threads:
                if t is not threading.current_thread():
                    t.join()


class ModelRuns:
    """Model calls on the event loop when measured cheap, else on `workers` (see the module
    docstring).

    A kind of call is cheap when the moving average of its thread CPU time is below
    `inline_micros` and that of its wall time below `_WALL_FACTOR` times that (a call on the
    loop updates the wall time every time and the CPU time, a system call of ~1 us, every
    `_CPU_EVERY`-th time; `inline_key` and `run_inline` are the same decision without a
    coroutine, for ModelServer.handle_now): a call that
    waits (a py_func doing I/O, a queue) uses little CPU but would stall the loop, and the
    generous wall bound still passes a small model's runs on a worker, whose wall time
    includes waiting for the GIL behind the other runs.

    Args:
      workers: the WorkerThreads for the calls measured expensive (and the first call of
        each kind, which has no measure yet).
      inline_micros: the thread CPU time (moving average, microseconds) below which a kind
        of call runs on the event loop; 0 sends every call to the workers.
    """

    _ALPHA = 0.25  # weight of the newest measure in the moving averages
    _WALL_FACTOR = 4.0
    _CPU_EVERY = 8  # inline calls per measure of their thread CPU time (1.1 us a read)

    def __init__(self, workers: WorkerThreads, inline_micros: float = 5000.0):
        self.workers = workers
        self.inline_s = max(0.0, float(inline_micros)) / 1e6
        self.inline_wall_s = self._WALL_FACTOR * self.inline_s
        # servable -> {(signature, batch bucket): [thread CPU seconds, wall seconds, inline
        # calls]}, the times moving averages
        self._costs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._last = None  # (weakref to a servable, its measures)
        self.inline_runs = 0

    def cost(self, servable, signature_name: str, rows: int) -> tuple[float, float] | None:
        """The measured (thread CPU, wall) seconds of such a call, None before the first."""
        cost = self._costs_of(servable).get((signature_name, rows.bit_length()))
        return None if cost is None else (cost[0], cost[1])

    def _costs_of(self, servable) -> dict:
        """The measures of `servable`'s calls (the last servable's, looked up without the
        weak dictionary: a server asks about the same one request after request)."""
        last = self._last
        if last is not None and last[0]() is servable:
            return last[1]
        costs = self._costs.get(servable)
        if costs is None:
            costs = self._costs.setdefault(servable, {})
        self._last = (weakref.ref(servable), costs)
        return costs

    def _timed(self, servable, key, fn, args):
        c0, w0 = time.thread_time(), time.perf_counter()
        try:
            return fn(*args)
        finally:
            cpu, wall = time.thread_time() - c0, time.perf_counter() - w0
            costs = self._costs_of(servable)
            old = costs.get(key)
            if old is None:
                costs[key] = [cpu, wall, 0]
            else:
                old[0] += self._ALPHA * (cpu - old[0])
                old[1] += self._ALPHA * (wall - old[1])

    def inline_key(self, servable, signature_name: str, rows: int):
        """The key of such a call when it is measured cheap enough for the event loop
        (`run_inline` it), else None (it goes to the workers)."""
        key = (signature_name, rows.bit_length())
        cost = self._costs_of(servable).get(key)
        if cost is not None and cost[0] < self.inline_s and cost[1] < self.inline_wall_s:
            return key
        return None

    def run_inline(self, servable, key, fn, *args):
        """`fn(*args)` here, a call of the kind `inline_key` gave `key` for. Its wall time
        updates the measures every time; its thread CPU time (a system call) every
        `_CPU_EVERY`-th call."""
        self.inline_runs += 1
        cost = self._costs_of(servable)[key]
        cost[2] += 1
        if cost[2] % self._CPU_EVERY == 0:
            return self._timed(servable, key, fn, args)
        w0 = time.perf_counter()
        try:
            return fn(*args)
        finally:
            cost[1] += self._ALPHA * (time.perf_counter() - w0 - cost[1])

    async def run(self, servable, signature_name: str, rows: int, fn, *args):
        """`fn(*args)`, a call of `servable`'s signature on `rows` rows; its value here."""
        key = self.inline_key(servable, signature_name, rows)
        if key is not None:
            return self.run_inline(servable, key, fn, *args)
        return await self.workers.run(self._timed, servable, (signature_name,
                                                              rows.bit_length()), fn, args)
