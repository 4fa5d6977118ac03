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
"""

from __future__ import annotations

import asyncio
import queue
import threading

__all__ = ["WorkerThreads"]

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
