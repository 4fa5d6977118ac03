"""Server-side batching: concurrent requests merge along dimension 0, run once, and each
gets its own rows back."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading

import numpy as np
import pytest

from tensorflux.framework import errors
from tensorflux.serving.batching import BatchScheduler
from tensorflux.serving.manager import ModelManager
from tensorflux.serving.servable import Servable
from tensorflux.serving.server import BackgroundServer
from tests.serving import models
from tests.serving.conftest import Client, write_version


class Doubler(Servable):
    """A test double: y = 2 * x, counting its runs; optionally failing."""

    version = 1
    signatures = {}

    def __init__(self, fail: bool = False):
        super().__init__()
        self.fail = fail
        self.batch_sizes = []

    def run(self, signature_name, inputs):
        self._count_run()
        self.batch_sizes.append(len(inputs["x"]))
        if self.fail:
            raise errors.InvalidArgumentError(None, None, "boom")
        return {"y": inputs["x"] * 2, "n": np.full(len(inputs["x"]), len(inputs["x"]))}


def _scheduler(max_batch_size, timeout_micros, pool):
    async def in_pool(fn, *args):
        return await asyncio.get_running_loop().run_in_executor(pool, fn, *args)
    return BatchScheduler(max_batch_size, timeout_micros, in_pool)


def _run(coro):
    return asyncio.run(asyncio.wait_for(coro, timeout=30))


def test_concurrent_requests_merge_up_to_max_batch_size():
    servable = Doubler()
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        sched = _scheduler(4, 10_000_000, pool)  # only size closes batches here

        async def main():
            reqs = [{"x": np.full((1, 2), i, np.float32)} for i in range(8)]
            return await asyncio.gather(*[sched.submit(servable, "s", r) for r in reqs])
        results = _run(main())
    assert servable.batch_sizes == [4, 4]
    for i, r in enumerate(results):
        np.testing.assert_array_equal(r["y"], np.full((1, 2), 2 * i, np.float32))
        assert r["n"].tolist() == [4]


def test_timeout_closes_a_partial_batch_and_rows_split_back():
    servable = Doubler()
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        sched = _scheduler(100, 1000, pool)

        async def main():
            a = sched.submit(servable, "s", {"x": np.zeros((2, 1), np.float32)})
            b = sched.submit(servable, "s", {"x": np.ones((3, 1), np.float32)})
            return await asyncio.gather(a, b)
        ra, rb = _run(main())
    assert servable.batch_sizes == [5]
    assert ra["y"].shape == (2, 1) and rb["y"].tolist() == [[2.0]] * 3


def test_incompatible_shapes_do_not_merge_and_errors_reach_every_waiter():
    servable = Doubler()
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        sched = _scheduler(100, 1000, pool)

        async def main():
            return await asyncio.gather(
                sched.submit(servable, "s", {"x": np.zeros((1, 2), np.float32)}),
                sched.submit(servable, "s", {"x": np.zeros((1, 3), np.float32)}))
        _run(main())
        assert sorted(servable.batch_sizes) == [1, 1]

        failing = Doubler(fail=True)

        async def failing_main():
            return await asyncio.gather(
                *[sched.submit(failing, "s", {"x": np.zeros((1, 2), np.float32)})
                  for _ in range(3)], return_exceptions=True)
        out = _run(failing_main())
    assert failing.batch_sizes == [3]
    assert all(isinstance(e, errors.InvalidArgumentError) for e in out)


@pytest.mark.parametrize("batching,when_idle,model_idle",
                         [(False, False, False), (True, False, False), (True, True, False),
                          (True, False, True)])
def test_batching_over_http_runs_the_model_fewer_times(tmp_path, export_root, batching,
                                                       when_idle, model_idle):
    write_version(str(tmp_path), 1, 1.0, export_root)
    manager = ModelManager("m", str(tmp_path), poll_wait_seconds=0)
    manager.start()
    n = 8
    rows = [[[float(i), 1.0, 2.0]] for i in range(n)]
    results = [None] * n
    barrier = threading.Barrier(n, timeout=30)
    try:
        with BackgroundServer(manager, enable_batching=batching, max_batch_size=n,
                              batch_timeout_micros=2_000_000,
                              batch_close_when_idle=when_idle,
                              batch_when_model_idle=model_idle) as srv:
            client = Client(srv.url)

            def one(i):
                barrier.wait()
                results[i] = client.predict({"instances": rows[i]})
            threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
            with manager.acquire() as servable:
                before = servable.run_count
                for t in threads:
                    t.start()
                for t in threads:
                    t.join(timeout=60)
                runs = servable.run_count - before
    finally:
        manager.stop()
    for i, (status, body) in enumerate(results):
        assert status == 200
        np.testing.assert_allclose(body["predictions"], models.expected_y(rows[i], 1.0))
    if not batching:
        assert runs == n
    elif not when_idle and not model_idle:
        assert runs < n  # the 8 rows fill one batch unless 2 s pass between arrivals
    else:
        assert 1 <= runs <= n  # as many batches as the arrivals' loop turns
    if model_idle:
        assert srv.server.batcher.running == 0
    if when_idle:
        assert srv.server.batcher.incoming == 0  # every counted request was discounted


class GatedDoubler(Doubler):
    """A Doubler whose first run waits until `gate` is set (a model busy for a while)."""

    def __init__(self):
        super().__init__()
        self.started, self.gate = threading.Event(), threading.Event()

    def run(self, signature_name, inputs):
        if not self.started.is_set():
            self.started.set()
            self.gate.wait(10)
        return super().run(signature_name, inputs)


def test_when_model_idle_a_batch_runs_at_once_and_the_next_when_the_model_is_free():
    servable = GatedDoubler()
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        async def in_pool(fn, *args):
            return await asyncio.get_running_loop().run_in_executor(pool, fn, *args)
        # The timeout (60 s) never closes a batch here: only the model-idle rule does.
        sched = BatchScheduler(64, 60_000_000, in_pool, when_model_idle=True)

        async def main():
            x = {"x": np.zeros((1, 2), np.float32)}
            first = asyncio.ensure_future(sched.submit(servable, "s", x))
            # The idle model takes the first request alone, without waiting for company.
            await asyncio.get_running_loop().run_in_executor(None, servable.started.wait, 10)
            assert sched.running == 1
            rest = [asyncio.ensure_future(sched.submit(servable, "s",
                                                       {"x": np.full((1, 2), i, np.float32)}))
                    for i in range(1, 4)]
            for _ in range(3):
                await asyncio.sleep(0)
            assert servable.batch_sizes == []  # gathering while the model is busy
            servable.gate.set()
            return [await first] + list(await asyncio.gather(*rest))
        results = _run(main())
    assert servable.batch_sizes == [1, 3]
    assert sched.running == 0 and not sched._open
    for i, r in enumerate(results):
        np.testing.assert_array_equal(r["y"], np.full((1, 2), 2 * i, np.float32))


def test_when_model_idle_requests_of_one_loop_turn_share_a_batch():
    servable = Doubler()
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        async def in_pool(fn, *args):
            return await asyncio.get_running_loop().run_in_executor(pool, fn, *args)
        sched = BatchScheduler(64, 60_000_000, in_pool, when_model_idle=True)

        async def main():
            reqs = [{"x": np.full((1, 2), i, np.float32)} for i in range(5)]
            return await asyncio.gather(*[sched.submit(servable, "s", r) for r in reqs])
        results = _run(main())
    assert servable.batch_sizes == [5]
    assert [r["n"].tolist() for r in results] == [[5]] * 5
