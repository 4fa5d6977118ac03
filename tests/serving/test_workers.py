"""WorkerThreads: the server's hand-over of work off the event loop (workers.py)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from tensorflux.framework import errors
from tensorflux.serving.workers import ModelRuns, WorkerThreads


def _run(coro):
    return asyncio.run(asyncio.wait_for(coro, timeout=30))


def test_values_come_back_and_run_off_the_loop_thread():
    workers = WorkerThreads(2)
    try:
        loop_thread = threading.current_thread()

        def square(i):
            return i * i, threading.current_thread()

        async def main():
            return await asyncio.gather(*[workers.run(square, i) for i in range(20)])
        results = _run(main())
    finally:
        workers.shutdown(wait=True)
    assert [v for v, _ in results] == [i * i for i in range(20)]
    assert all(t is not loop_thread for _, t in results)
    assert {t.name for _, t in results} <= {"serve_0", "serve_1"}


def test_an_exception_reaches_the_caller_and_the_workers_go_on():
    workers = WorkerThreads(1)

    def fail():
        raise errors.InvalidArgumentError(None, None, "boom")
    try:
        async def main():
            with pytest.raises(errors.InvalidArgumentError, match="boom"):
                await workers.run(fail)
            return await workers.run(lambda a, b: a + b, 2, 3)
        assert _run(main()) == 5
    finally:
        workers.shutdown(wait=True)


def test_a_cancelled_caller_does_not_break_the_worker():
    workers = WorkerThreads(1)
    gate, started = threading.Event(), threading.Event()

    def slow():
        started.set()
        gate.wait(10)
        return "late"
    try:
        async def main():
            task = asyncio.ensure_future(workers.run(slow))
            await asyncio.get_running_loop().run_in_executor(None, started.wait, 10)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            gate.set()
            return await workers.run(lambda: "next")
        assert _run(main()) == "next"
    finally:
        workers.shutdown(wait=True)


def test_shutdown_finishes_queued_work_then_refuses_more():
    workers = WorkerThreads(1)
    done = []

    async def main():
        futs = [asyncio.ensure_future(workers.run(done.append, i)) for i in range(5)]
        await asyncio.sleep(0)  # every run queued
        workers.shutdown(wait=False)
        await asyncio.gather(*futs)
        with pytest.raises(RuntimeError, match="shutdown"):
            await workers.run(done.append, 99)
    _run(main())
    workers.shutdown(wait=True)
    assert done == [0, 1, 2, 3, 4]
    assert not any(t.is_alive() for t in workers._threads)


class _Model:
    """Stands for a servable: ModelRuns keys its measures by the servable object."""


def _burn(seconds):
    t0 = time.thread_time()
    while time.thread_time() - t0 < seconds:
        pass


@pytest.mark.parametrize("inline_micros, work_s, sleep_s, rows, inline_after_first", [
    (5000, 0.0, 0.0, 1, True),     # cheap: measured on a worker once, then on the loop
    (5000, 0.0, 0.0, 0, True),     # scalar inputs (no batch dimension) too
    (5000, 0.02, 0.0, 1, False),   # 20 ms of CPU per call: stays on the workers
    (5000, 0.0, 0.03, 1, False),   # waits 30 ms (little CPU, much wall time): the same
    (0, 0.0, 0.0, 1, False),       # inlining turned off
])
def test_model_runs_go_inline_only_when_measured_cheap(inline_micros, work_s, sleep_s, rows,
                                                       inline_after_first):
    workers = WorkerThreads(2)
    runs = ModelRuns(workers, inline_micros)
    model = _Model()

    def fn(x):
        _burn(work_s)
        time.sleep(sleep_s)
        return x, threading.current_thread()
    try:
        async def main():
            loop_thread = threading.current_thread()
            out = [await runs.run(model, "s", rows, fn, i) for i in range(4)]
            assert [v for v, _ in out] == [0, 1, 2, 3]
            on_loop = [t is loop_thread for _, t in out]
            assert on_loop[0] is False  # no measure yet: a worker
            assert on_loop[1:] == [inline_after_first] * 3
            assert runs.cost(model, "s", rows) is not None
            assert runs.cost(model, "other", rows) is None
        _run(main())
    finally:
        workers.shutdown(wait=True)


def test_model_runs_key_by_batch_size_and_raise_inline_errors():
    workers = WorkerThreads(1)
    runs = ModelRuns(workers, 5000)
    model = _Model()

    def fail():
        raise errors.InvalidArgumentError(None, None, "boom")
    try:
        async def main():
            await runs.run(model, "s", 1, lambda: None)
            assert runs.cost(model, "s", 1) is not None
            assert runs.cost(model, "s", 64) is None  # another power-of-two bucket
            for _ in range(2):  # on a worker, then inline: the error comes back both times
                with pytest.raises(errors.InvalidArgumentError, match="boom"):
                    await runs.run(model, "f", 1, fail)
            assert runs.inline_runs == 1
        _run(main())
    finally:
        workers.shutdown(wait=True)
