"""Server-side batching: concurrent requests to one signature run as one model call.

A request joins the open batch of its key: (servable, signature, the input aliases and, per
alias, dtype and shape after dimension 0) — only such requests concatenate along dimension
0. A batch closes when it holds `max_batch_size` rows or `batch_timeout_micros` after its
first request arrived, whichever comes first (TF Serving's rule) -- or, when the server
counts `incoming` requests (`--batch_close_when_idle`), at the end of the current event-loop
turn if none is on its way (requests it has begun to handle and not yet submitted; with
none, waiting could only add latency) -- or, with `when_model_idle`
(`--batch_when_model_idle`), at the end of the current event-loop turn if no batch of this
scheduler is running, and else as soon as the running ones have finished: an idle model
never waits for company, a busy one gathers the requests that arrive while it runs into the
next batch (the size and timeout rules still apply). It then runs once on the thread pool and each
request gets its own slice of every output back. Requests arriving while a batch runs
gather into the next one. Requests larger than `max_batch_size` run alone. If an output
of the merged run does not have the batch's rows along dimension 0 (a signature that is not
batchable), the batch's requests are run one by one instead. Errors of a merged run go to
every request of the batch.

All the bookkeeping happens on the event loop thread, so it needs no locks; only the model
runs leave it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import numpy as np

__all__ = ["BatchScheduler"]


class _Batch:
    __slots__ = ("items", "rows", "timer", "servable", "signature_name")

    def __init__(self, servable, signature_name):
        self.servable, self.signature_name = servable, signature_name
        self.items: list[tuple[dict, int, asyncio.Future]] = []
        self.rows = 0
        self.timer: asyncio.TimerHandle | None = None


class BatchScheduler:
    """Merges concurrent `submit` calls (see the module docstring).

    Args:
      max_batch_size: the most rows one model run takes.
      batch_timeout_micros: how long the first request of a batch waits for company.
      run_in_pool: async (fn, *args) -> result, running fn off the event loop.
      when_model_idle: also close a batch when no batch is running (module docstring).
      run_model: async (servable, signature_name, inputs) -> outputs, running the model
        where the server decides (workers.ModelRuns); default: `servable.run` through
        `run_in_pool`.
    """

    def __init__(self, max_batch_size: int, batch_timeout_micros: int,
                 run_in_pool: Callable, when_model_idle: bool = False,
                 run_model: Callable | None = None):
        self.max_batch_size = max(1, int(max_batch_size))
        self.timeout_s = max(0, int(batch_timeout_micros)) / 1e6
        self._run_in_pool = run_in_pool
        self._run_model = run_model
        self._open: dict[tuple, _Batch] = {}
        self.batches_run = 0
        self.when_model_idle = bool(when_model_idle)
        self.running = 0  # batches closed and not finished yet
        # Requests announced (being decoded) and not yet submitted; None: not tracked (the
        # scheduler used alone), so only size and timeout close batches.
        self.incoming: int | None = None

    @staticmethod
    def _rows(inputs: dict) -> int | None:
        """The inputs' common size along dimension 0; None if they differ or one is a
        scalar."""
        rows, first = None, True
        for v in inputs.values():
            shape = v.shape if type(v) is np.ndarray else np.shape(v)
            n = shape[0] if shape else None
            if first:
                rows, first = n, False
            elif n != rows:
                return None
        return rows

    async def submit(self, servable, signature_name: str, inputs: dict) -> dict:
        """The outputs of `servable.run(signature_name, inputs)`, possibly merged with other
        concurrent requests."""
        fut = self.submit_now(servable, signature_name, inputs)
        if fut is None:
            return await self._run(servable, signature_name, inputs)
        return await fut

    def submit_now(self, servable, signature_name: str, inputs: dict):
        """`submit` without a coroutine: the future of the request's outputs once it has
        joined a batch; None (nothing done) for a request that runs alone (`submit` runs
        it)."""
        rows = self._rows(inputs)
        if not rows or rows >= self.max_batch_size:
            return None
        if len(inputs) == 1:  # (the common request: the key without a sort)
            ((k, v),) = inputs.items()
            if type(v) is not np.ndarray:
                v = np.asarray(v)
            key = (id(servable), signature_name, (k, v.dtype.str, v.shape[1:]))
        else:
            key = (id(servable), signature_name) + tuple(
                (k, v.dtype.str, v.shape[1:]) for k, v in
                sorted((k, v if type(v) is np.ndarray else np.asarray(v))
                       for k, v in inputs.items()))
        batch = self._open.get(key)
        if batch is not None and batch.rows + rows > self.max_batch_size:
            self._close(key, servable, signature_name)
            batch = None
        if batch is None:
            batch = self._open[key] = _Batch(servable, signature_name)
            batch.timer = asyncio.get_running_loop().call_later(
                self.timeout_s, self._close, key, servable, signature_name)
        fut = asyncio.get_running_loop().create_future()
        batch.items.append((inputs, rows, fut))
        batch.rows += rows
        if batch.rows >= self.max_batch_size:
            self._close(key, servable, signature_name)
        elif self._idle():
            # Handlers already scheduled in this loop turn still get to join first.
            asyncio.get_running_loop().call_soon(self._close_if_idle, key, batch, servable,
                                                 signature_name)
        return fut

    def _run(self, servable, signature_name: str, inputs: dict):
        if self._run_model is not None:
            return self._run_model(servable, signature_name, inputs)
        return self._run_in_pool(servable.run, signature_name, inputs)

    def _idle(self) -> bool:
        return self.incoming == 0 or (self.when_model_idle and self.running == 0)

    def _close_if_idle(self, key, batch, servable, signature_name) -> None:
        if self._open.get(key) is batch and self._idle():
            self._close(key, servable, signature_name)

    def _close(self, key, servable, signature_name) -> None:
        batch = self._open.pop(key, None)
        if batch is None:
            return
        batch.timer.cancel()
        self.running += 1
        asyncio.get_running_loop().create_task(self._execute(batch, servable, signature_name))

    async def _execute(self, batch: _Batch, servable, signature_name) -> None:
        try:
            await self._execute_batch(batch, servable, signature_name)
        finally:
            self.running -= 1
            if self.when_model_idle and self.running == 0:
                # The model is free: what gathered while it ran goes now.
                for key, open_batch in list(self._open.items()):
                    self._close(key, open_batch.servable, open_batch.signature_name)

    async def _execute_batch(self, batch: _Batch, servable, signature_name) -> None:
        items = batch.items
        try:
            if len(items) == 1:
                results = [await self._run(servable, signature_name, items[0][0])]
            else:
                merged = {k: np.concatenate([it[0][k] for it in items])
                          for k in items[0][0]}
                self.batches_run += 1
                out = await self._run(servable, signature_name, merged)
                results = self._split(out, [it[1] for it in items], batch.rows)
                if results is None:  # not batchable: one run per request
                    results = [await self._run(servable, signature_name, it[0])
                               for it in items]
        except Exception as e:  # noqa: BLE001 - every waiter gets the run's error
            for _, _, fut in items:
                if not fut.done():
                    fut.set_exception(e)
            return
        for (_, _, fut), res in zip(items, results, strict=True):
            if not fut.done():
                fut.set_result(res)

    @staticmethod
    def _split(outputs: dict, sizes: list[int], total: int):
        arrays = {k: np.asarray(v) for k, v in outputs.items()}
        if any(v.ndim == 0 or v.shape[0] != total for v in arrays.values()):
            return None
        out, start = [], 0
        for n in sizes:  # each request's rows: views, as np.split gives them
            out.append({k: v[start:start + n] for k, v in arrays.items()})
            start += n
        return out
