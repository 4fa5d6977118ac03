"""The intra-op split (tensorflux/kernels/intra_op.py) and the process-wide BLAS policy
(tensorflux/kernels/cpu/_blas.py). No timing is asserted."""

from __future__ import annotations

import gc
import json
import os
import platform
import subprocess
import sys
import threading
import weakref
from types import SimpleNamespace

import pytest

from tensorflux.kernels import intra_op
from tensorflux.kernels.cpu import _blas


@pytest.mark.parametrize("n, grain, parts", [(0, 3, 2), (1, 3, 2), (10, 3, 1), (10, 3, 2),
                                             (10, 1, 4), (97, 8, 3), (5, 100, 2)])
def test_parallel_for_runs_every_chunk_once(n, grain, parts):
    seen = []
    lock = threading.Lock()

    def fn(lo, hi):
        assert 0 <= lo < hi <= n and hi - lo <= grain
        with lock:
            seen.extend(range(lo, hi))

    intra_op.parallel_for(fn, n, grain, parts)
    assert sorted(seen) == list(range(n))


@pytest.mark.parametrize("failing", [0, 5, 9])
def test_parallel_for_raises_the_first_error_and_waits(failing):
    running = []

    def fn(lo, hi):
        running.append(lo)
        if lo == failing:
            raise ValueError(f"chunk {lo}")

    with pytest.raises(ValueError, match=f"chunk {failing}"):
        intra_op.parallel_for(fn, 10, 1, 2)
    intra_op.parallel_for(lambda lo, hi: None, 10, 1, 2)  # the pool is still usable


def test_parallel_for_drops_its_function_before_a_late_helper_runs(monkeypatch):
    """A helper still queued when the caller has run every chunk (its thread busy or without
    a core) must not keep the chunk function, and the arrays it captured, alive: the
    step's memory would then depend on when that thread runs."""
    queued = []
    monkeypatch.setattr(intra_op, "_get_pool",
                        lambda: SimpleNamespace(submit=lambda fn: queued.append(fn)))

    class Captured:
        pass

    captured, ran = Captured(), []
    intra_op.parallel_for(lambda lo, hi, _c=captured: ran.append(lo), 6, 1, 3)
    assert sorted(ran) == list(range(6)) and len(queued) == 2
    alive = weakref.ref(captured)
    del captured
    gc.collect()
    assert alive() is None  # the queued helpers hold the loop, not the function
    for late in queued:
        late()  # finds no chunk left
    assert sorted(ran) == list(range(6))


def test_per_thread_gives_each_thread_its_own_object():
    get, values = intra_op.per_thread(list)

    def fn(lo, hi):
        get().extend(range(lo, hi))

    intra_op.parallel_for(fn, 50, 1, 2)
    parts = values()
    assert 1 <= len(parts) <= 2
    assert sorted(i for p in parts for i in p) == list(range(50))


def _expected_sum(values, grain: int, parts: int):
    """parallel_sum's documented order: chunks in `sum_groups` groups of consecutive
    chunks, each group's chunks added in order from zero, the groups added in order."""
    import numpy as np

    n = len(values)
    count = -(-n // grain)
    groups = intra_op.sum_groups(count, parts, values.itemsize)
    bounds = [g * count // groups for g in range(groups + 1)]
    sums = []
    for g in range(groups):
        acc = np.zeros(1, values.dtype)
        for i in range(bounds[g], bounds[g + 1]):
            acc += np.add.reduce(values[i * grain:min(n, (i + 1) * grain)])
        sums.append(acc)
    for acc in sums[1:]:
        sums[0] += acc
    return sums[0]


@pytest.mark.parametrize("n, grain, parts", [(0, 3, 2), (1, 3, 4), (10, 3, 1), (10, 3, 2),
                                             (40, 1, 4), (97, 8, 3), (50, 2, 8)])
def test_parallel_sum_adds_in_a_fixed_order_whatever_the_timing(n, grain, parts):
    """Values whose sum depends on the order of addition, chunks that take random time:
    every run gives the bits of the documented order, and each group's chunks ran one at
    a time, in order."""
    import random

    import numpy as np

    values = (np.random.default_rng(n).standard_normal(n) *
              10.0 ** np.random.default_rng(1).integers(-6, 6, n)).astype(np.float32)
    want = _expected_sum(values, grain, parts)
    for trial in range(6):
        jitter = random.Random(trial)
        seen = []

        def fn(lo, hi, acc, jitter=jitter, seen=seen):
            if jitter.random() < 0.5:
                threading.Event().wait(jitter.random() * 2e-3)
            seen.append((id(acc), lo))
            acc += np.add.reduce(values[lo:hi])

        got = intra_op.parallel_sum(fn, n, grain, parts, lambda: np.zeros(1, np.float32))
        assert got.tobytes() == want.tobytes(), (trial, got, want)
        assert sorted(lo for _, lo in seen) == list(range(0, n, grain))
        per_acc: dict = {}
        for acc, lo in seen:
            per_acc.setdefault(acc, []).append(lo)
        assert all(los == sorted(los) for los in per_acc.values())


def test_sum_groups_two_per_thread_unless_big():
    assert intra_op.sum_groups(100, 1, 4) == 1
    assert intra_op.sum_groups(1, 4, 4) == 1
    assert intra_op.sum_groups(100, 4, 4) == 8
    assert intra_op.sum_groups(5, 4, 4) == 5
    assert intra_op.sum_groups(100, 4, intra_op.SUM_BYTES // 6) == 6
    assert intra_op.sum_groups(100, 4, intra_op.SUM_BYTES) == 4


def test_parallel_sum_raises_the_first_error_and_drops_its_function(monkeypatch):
    import numpy as np

    def fn(lo, hi, acc):
        if lo == 7:
            raise ValueError("chunk 7")
        acc += 1

    with pytest.raises(ValueError, match="chunk 7"):
        intra_op.parallel_sum(fn, 20, 1, 3, lambda: np.zeros(1))
    queued = []
    monkeypatch.setattr(intra_op, "_get_pool",
                        lambda: SimpleNamespace(submit=lambda fn: queued.append(fn)))

    class Captured:
        pass

    captured = Captured()
    total = intra_op.parallel_sum(lambda lo, hi, acc, _c=captured: acc.__iadd__(hi - lo),
                                  12, 1, 3, lambda: np.zeros(1))
    assert total[0] == 12 and len(queued) == 2
    alive = weakref.ref(captured)
    del captured
    gc.collect()
    assert alive() is None
    for late in queued:
        late()  # finds no chunk left


def test_add_in_order_sums_every_element_in_list_order(monkeypatch):
    import numpy as np

    monkeypatch.setattr(intra_op, "MIN_ELEMENTS", 0)
    monkeypatch.setattr(intra_op, "CHUNK_ELEMENTS", 5)
    rng = np.random.default_rng(0)
    arrays = [(rng.standard_normal((7, 6)) * 10.0 ** k).astype(np.float32) for k in range(5)]
    want = arrays[0].copy()
    for a in arrays[1:]:
        want += a
    got = intra_op.add_in_order([a.copy() for a in arrays], parts=3)
    assert got.tobytes() == want.tobytes()


def test_split_elementwise_and_parallel_rows(monkeypatch):
    import numpy as np

    monkeypatch.setattr(intra_op, "MIN_ELEMENTS", 0)
    monkeypatch.setattr(intra_op, "CHUNK_ELEMENTS", 7)
    x = np.arange(60, dtype=np.float32).reshape(20, 3)
    out = np.empty_like(x)
    intra_op.split_elementwise(lambda o, a: np.multiply(a, 2, out=o), out, x, parts=2)
    np.testing.assert_array_equal(out, 2 * x)


def _ctx(intra_op_threads: int):
    """A stand-in KernelContext whose session has intra_op_parallelism_threads set."""
    config = SimpleNamespace(intra_op_parallelism_threads=intra_op_threads)
    return SimpleNamespace(session=SimpleNamespace(_config=config))


def test_workers_follow_blas_threads_and_config(monkeypatch):
    monkeypatch.setattr(intra_op, "blas_threads", lambda: 1)
    assert intra_op.workers(None) == intra_op.cores()
    assert intra_op.workers(_ctx(3)) == 3
    monkeypatch.setattr(intra_op, "blas_threads", lambda: 4)  # BLAS parallelizes itself
    assert intra_op.workers(_ctx(3)) == 1



def test_a_step_works_its_count_out_once(monkeypatch):
    """A step's context keeps the count of its first call (a kernel right after a big one
    reads one attribute); the next step's context sees a change of BLAS threads."""
    from tensorflux.kernels.registry import KernelContext

    calls = []

    def blas_threads():
        calls.append(1)
        return 1

    monkeypatch.setattr(intra_op, "blas_threads", blas_threads)
    step = KernelContext(1, None, session=SimpleNamespace(_intra_op_threads=3))
    assert step.workers == 0
    assert [intra_op.workers(step) for _ in range(5)] == [3] * 5
    assert len(calls) == 1 and step.workers == 3
    monkeypatch.setattr(intra_op, "blas_threads", lambda: 4)
    assert intra_op.workers(step) == 3  # within the step: unchanged
    assert intra_op.workers(KernelContext(2, None, session=step.session)) == 1


@pytest.mark.parametrize("config_n, env_at_creation, env_later, want", [
    (0, "3", "5", 3), (0, None, "5", "cores"), (2, "3", "5", 2)])
def test_a_session_keeps_the_intra_op_threads_it_was_created_with(
        monkeypatch, config_n, env_at_creation, env_later, want):
    """TF reads TF_NUM_INTRAOP_THREADS when a session's devices are made: a kernel of that
    session splits over that count after the variable changes (no environment read per
    kernel call); a kernel outside a session reads the variable as it is."""
    import tensorflux as tf

    monkeypatch.setattr(intra_op, "blas_threads", lambda: 1)
    monkeypatch.delenv("TF_NUM_INTRAOP_THREADS", raising=False)
    if env_at_creation is not None:
        monkeypatch.setenv("TF_NUM_INTRAOP_THREADS", env_at_creation)
    with tf.Session(graph=tf.Graph(), config=tf.ConfigProto(
            intra_op_parallelism_threads=config_n)) as sess:
        monkeypatch.setenv("TF_NUM_INTRAOP_THREADS", env_later)
        expected = intra_op.cores() if want == "cores" else want
        assert intra_op.workers(SimpleNamespace(session=sess)) == expected
    assert intra_op.workers(None) == int(env_later)

def _blas_threads_in_child(env_value):
    env = dict(os.environ)
    env.pop("TENSORFLUX_BLAS_THREADS", None)
    if env_value is not None:
        env["TENSORFLUX_BLAS_THREADS"] = env_value
    env["OPENBLAS_NUM_THREADS"] = "2"  # what BLAS would use without the policy
    code = ("import numpy, tensorflux\n"
            "from tensorflux.kernels.cpu import _blas\n"
            "print(_blas.blas_threads())")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=60, check=True)
    return int(out.stdout.split()[-1])


@pytest.mark.skipif(_blas.blas_threads() == 0, reason="NumPy's BLAS is not OpenBLAS")
def test_import_sets_blas_single_threaded_unless_told_otherwise():
    assert _blas_threads_in_child(None) == 1
    assert _blas_threads_in_child("0") == 2  # left alone
    assert _blas_threads_in_child("3") == 3


@pytest.mark.parametrize("config_n, env, want", [
    (0, None, "cores"), (3, None, 3), (0, "5", 5), (2, "5", 2), (0, "junk", "cores"),
    (0, "-2", "cores")])
def test_intra_op_threads_follow_config_then_tf_env_then_cores(monkeypatch, config_n, env,
                                                               want):
    monkeypatch.delenv("TF_NUM_INTRAOP_THREADS", raising=False)
    if env is not None:
        monkeypatch.setenv("TF_NUM_INTRAOP_THREADS", env)
    config = SimpleNamespace(intra_op_parallelism_threads=config_n)
    expected = intra_op.cores() if want == "cores" else want
    assert intra_op.intra_op_threads(config) == expected
    assert intra_op.requested_intra_op_threads(config) == (0 if want == "cores" else want)


@pytest.mark.parametrize("config_n, env, want", [
    (0, None, "cores"), (4, None, 4), (0, "3", 3), (-1, "3", 0), (-7, None, 0)])
def test_inter_op_threads_follow_config_then_tf_env_then_cores(monkeypatch, config_n, env,
                                                               want):
    monkeypatch.delenv("TF_NUM_INTEROP_THREADS", raising=False)
    if env is not None:
        monkeypatch.setenv("TF_NUM_INTEROP_THREADS", env)
    config = SimpleNamespace(inter_op_parallelism_threads=config_n)
    expected = intra_op.cores() if want == "cores" else want
    assert intra_op.inter_op_threads(config) == expected


def test_negative_inter_op_threads_run_every_kernel_on_the_callers_thread():
    """TF: a negative inter_op_parallelism_threads runs all ops in the caller's thread. The
    device has no pool then, also for expensive kernels on the dataflow executor."""
    import numpy as np

    import tensorflux as tf
    from tensorflux.runtime.exec_options import ExecOptions

    with tf.Graph().as_default():
        a = tf.constant(np.arange(64 * 64, dtype=np.float32).reshape(64, 64) / 4096)
        products = [tf.matmul(a, a + i) for i in range(4)]  # independent expensive kernels
        total = tf.add_n(products)
        config = tf.ConfigProto(inter_op_parallelism_threads=-1)
        with tf.Session(config=config, exec_options=ExecOptions(strategy="dataflow")) as s:
            got = s.run(total)
            device = s._device_mgr.devices[0]
            assert device.num_threads == 0
            assert device._pool is None  # never created
    a_ = np.arange(64 * 64, dtype=np.float32).reshape(64, 64) / 4096
    np.testing.assert_allclose(got, sum(a_ @ (a_ + i) for i in range(4)), rtol=1e-5)


@pytest.mark.skipif(not _blas._blas_controllers(), reason="no BLAS threadpoolctl knows")
def test_blas_threads_are_read_and_set_through_threadpoolctl():
    from threadpoolctl import threadpool_info

    numpy_blas = [i for i in threadpool_info() if i["user_api"] == "blas"
                  and i["filepath"] == _blas.blas_info()["filepath"]]
    assert numpy_blas and numpy_blas[0]["num_threads"] == _blas.blas_threads() == 1
    assert _blas.blas_info()["architecture"]  # the kernel family, reported by benchmarks
    try:
        assert _blas.set_blas_threads(2)
        assert _blas.blas_threads() == 2  # seen at once, not after the cache expires
        assert intra_op.workers(None) == 1  # BLAS splits the products itself now
    finally:
        _blas.set_blas_threads(1)
    assert _blas.blas_threads() == 1


_FAULTS_CHILD = (
    "import resource, numpy as np\n"
    "import tensorflux\n"
    "def touch():\n"
    "    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
    "    a = np.empty(64 << 18, np.float32)\n"
    "    a.fill(1.0)\n"
    "    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before\n"
    "print(touch(), touch())\n")


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the malloc policy is glibc's")
def test_malloc_policy_keeps_freed_large_blocks_for_the_next_step():
    """A freed 64 MiB array's pages serve the next one (no mmap, no trim): the second
    allocation takes almost no page faults; without the policy it takes as many as the
    first. Then malloc_trim gives them back."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    first, second = map(int, subprocess.run([sys.executable, "-c", _FAULTS_CHILD], env=env,
                                            capture_output=True, text=True, timeout=60,
                                            check=True).stdout.split())
    assert second <= max(8, first // 4), (first, second)
    env["TENSORFLUX_MALLOC_TUNING"] = "0"
    first, second = map(int, subprocess.run([sys.executable, "-c", _FAULTS_CHILD], env=env,
                                            capture_output=True, text=True, timeout=60,
                                            check=True).stdout.split())
    assert second > first // 2, (first, second)
    _blas.release_free_memory()


_CORE_CHILD = (
    "import ctypes, json, numpy as np\n"
    "import tensorflux\n"
    "from tensorflux.kernels.cpu import _blas\n"
    "def ok():\n"
    "    rng = np.random.default_rng(0)\n"
    "    a = rng.standard_normal((300, 200)); b = rng.standard_normal((200, 100))\n"
    "    x = rng.standard_normal((60, 60)) + 60 * np.eye(60)\n"
    "    return bool(np.allclose(a @ b, np.einsum('ik,kj->ij', a, b), atol=1e-10) and\n"
    "                np.allclose(x @ np.linalg.solve(x, b[:60]), b[:60], atol=1e-9))\n"
    "taken = _blas.blas_info().get('architecture')\n"
    "first = ok()\n"
    "_blas._switch_core(ctypes.CDLL(_blas.blas_info()['filepath']), None)\n"
    "print(json.dumps([taken, _blas.blas_info().get('architecture'), first and ok()]))\n")


@pytest.mark.skipif(not _blas._openblas_libraries(), reason="NumPy's BLAS is not OpenBLAS")
def test_openblas_kernel_family_is_chosen_again_only_where_it_chose_skylakex():
    """A core type named in TENSORFLUX_BLAS_CORETYPE replaces OpenBLAS's own choice when
    that was SkylakeX (and only then), products and LAPACK stay right, and blas_info()
    reports the kernel family that runs (a child process: the choice is made at import)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path),
               TENSORFLUX_BLAS_CORETYPE="Sandybridge")
    env.pop("OPENBLAS_CORETYPE", None)
    out = subprocess.run([sys.executable, "-c", _CORE_CHILD], env=env, capture_output=True,
                         text=True, timeout=60, check=True).stdout
    taken, own, ok = json.loads(out.strip().splitlines()[-1])
    assert ok and own
    assert taken == ("Sandybridge" if own == "SkylakeX" else own)


def test_kernels_running_side_by_side_keep_the_configured_threads(monkeypatch):
    """While executors run n expensive kernels at once (kernel_started/finished), each
    still plans for the configured intra-op threads (its plan, and its bits, do not depend
    on what runs beside it; the C pool serves several splits at once)."""
    monkeypatch.setattr(_blas, "blas_threads", lambda: 1)
    ctx = SimpleNamespace(session=SimpleNamespace(_config=SimpleNamespace(
        intra_op_parallelism_threads=4, inter_op_parallelism_threads=0)))
    assert intra_op.workers(ctx) == 4
    for n in (1, 2, 3):
        intra_op.kernel_started()
        assert intra_op.running() == n and intra_op.workers(ctx) == 4
    for _ in range(3):
        intra_op.kernel_finished()
    assert intra_op.workers(ctx) == 4 and intra_op.running() == 0


def test_independent_products_side_by_side_give_the_same_bits_every_step():
    """Two chains of 512^3 products (big enough to run side by side on the inter-op
    threads, exec_options.side_by_side): every step of two sessions gives the same bits,
    since each product plans for the configured intra-op threads whatever runs beside it
    (before, a product's plan followed the kernels running at that moment)."""
    import numpy as np

    import tensorflux as tf

    n = 512
    rng = np.random.default_rng(3)
    g = tf.Graph()
    with g.as_default():
        a = tf.placeholder(tf.float32, [n, n])
        b = tf.placeholder(tf.float32, [n, n])
        chains = []
        for m in (a, b):
            x = m
            for _ in range(3):
                x = tf.matmul(x, m) * (1.0 / n)
            chains.append(x)
        out = chains[0] + chains[1]
    feed = {a: rng.random((n, n), dtype=np.float32), b: rng.random((n, n), dtype=np.float32)}
    seen = set()
    for _ in range(2):
        with tf.Session(graph=g) as sess:
            for _ in range(4):
                seen.add(sess.run(out, feed).tobytes())
    assert len(seen) == 1
