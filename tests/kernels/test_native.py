"""The optional C extension (tensorflux/kernels/cpu/_native.c, native.py): each loop against
the NumPy path it stands in for (bit for bit where the docs promise it), the layouts and
dtypes it must refuse, its pool under many threads and across fork. No timing is asserted."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import threading
from types import SimpleNamespace

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.kernels.cpu import native, nn_ops, training_ops
from tests.threads_util import join, start

needs_native = pytest.mark.skipif(not native.available(),
                                  reason="the C extension is not built")


def test_the_extension_is_built_where_a_compiler_is():
    """Installing with a C compiler present builds the extension (setup.py marks it optional,
    so a failed build would otherwise go unnoticed and every test below would skip)."""
    if os.environ.get("TENSORFLUX_NATIVE", "1").strip() == "0":
        pytest.skip("TENSORFLUX_NATIVE=0")
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler here")
    if not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")):
        pytest.skip("no Python headers here")
    assert native.available()


def _operand(rng, shape, dtype, layout):
    """A (rows, cols) operand stored C-order, as a transposed view (F-order), or strided."""
    if layout == "c":
        return rng.standard_normal(shape).astype(dtype)
    if layout == "f":
        return rng.standard_normal(shape[::-1]).astype(dtype).T
    return rng.standard_normal((shape[0], 2 * shape[1])).astype(dtype)[:, ::2]


_GEMM_CASES = [  # m, k, n
    (128, 784, 512), (784, 128, 512), (128, 512, 10), (10, 300, 700), (1, 50, 1000),
    (1000, 50, 1), (63, 5, 65), (200, 1, 300), (129, 77, 129),
]


@needs_native
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m, k, n", _GEMM_CASES)
@pytest.mark.parametrize("layout", ["cc", "fc", "cf", "ff"])
@pytest.mark.parametrize("parts", [1, 2, 3])
def test_gemm_matches_numpy(dtype, m, k, n, layout, parts):
    rng = np.random.default_rng(m * 7 + n)
    a = _operand(rng, (m, k), dtype, layout[0])
    b = _operand(rng, (k, n), dtype, layout[1])
    out = native.gemm(a, b, parts)
    assert out is not None and out.shape == (m, n) and out.dtype == dtype
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out, a @ b, rtol=tol, atol=tol * np.sqrt(k))


# Products big enough to be cut: (m, k, n) and which plan _native.c's plan_gemm takes with
# 2 threads (tiles: a grid of output tiles; k slices: pieces of k, each into a partial
# product of its own, added in order) and, polled (a stop cell given), where its calls get
# k pieces (beta=1).
_SPLIT_CASES = [
    (128, 8192, 128),   # k slices (2 threads); polled: k pieces of one tile
    (512, 2048, 512),   # 2x2 tiles (2 threads; polled: 2 k pieces each); polled alone: 6 k pieces
    (640, 3000, 96),    # a long k with few columns
    (1024, 256, 1024),  # tiles in a 2-D grid; polled: more tiles
    (2000, 300, 70),    # tall and thin: row tiles
]


def _raw_gemm():
    """The extension's gemm entry, with NumPy's BLAS handed over (native.gemm does that on
    its first call)."""
    assert native.gemm(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), 1) is not None
    return native._mod.gemm


@needs_native
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m, k, n", _SPLIT_CASES)
@pytest.mark.parametrize("layout", ["cc", "ff"])
@pytest.mark.parametrize("parts", [1, 2, 3])
@pytest.mark.parametrize("polled", [False, True])
def test_split_products_match_numpy(dtype, m, k, n, layout, parts, polled):
    """Every way plan_gemm cuts a product (tiles, k pieces, k slices, over 1-3 threads,
    polling or not) gives NumPy's product up to summation order."""
    rng = np.random.default_rng(m + k + n)
    a = _operand(rng, (m, k), dtype, layout[0])
    b = _operand(rng, (k, n), dtype, layout[1])
    a_rm, ta = native._row_major(a)
    b_rm, tb = native._row_major(b)
    out = np.full((m, n), np.nan, dtype)
    stop = (np.zeros(1, np.int32), 0.0) if polled else ()
    assert _raw_gemm()(a_rm, b_rm, out, ta, tb, parts, *stop) is True
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out, a @ b, rtol=tol, atol=tol * np.sqrt(k))


@needs_native
@pytest.mark.parametrize("m, k, n", [(128, 8192, 128), (512, 2048, 512), (1024, 256, 1024)])
@pytest.mark.parametrize("polled", [False, True])
def test_split_products_side_by_side_keep_their_bits(m, k, n, polled):
    """Products split over 2 threads, six at once from six threads (the pool's slots serve
    four splits at once; the others run the same chunks alone), give the bits of the same
    product run by itself: a plan depends on the product and `parts`, never on which
    thread ran a chunk or whether the pool took the call (k slices included)."""
    rng = np.random.default_rng(m + k + n)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    gemm = _raw_gemm()
    stop = (np.zeros(1, np.int32), 0.0) if polled else ()
    alone = np.empty((m, n), np.float32)
    assert gemm(a, b, alone, False, False, 2, *stop) is True
    outs = [np.full((m, n), np.nan, np.float32) for _ in range(6)]
    start = threading.Barrier(len(outs))

    def run(out):
        start.wait()
        for _ in range(3):
            assert gemm(a, b, out, False, False, 2, *stop) is True

    threads = [threading.Thread(target=run, args=(out,)) for out in outs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for out in outs:
        assert out.tobytes() == alone.tobytes()


@needs_native
@pytest.mark.parametrize("m, k, n", [(128, 8192, 128), (1024, 1024, 1024)])
@pytest.mark.parametrize("parts", [1, 2])
def test_a_set_stop_cell_stops_a_split_product(m, k, n, parts):
    a = np.ones((m, k), np.float32)
    b = np.ones((k, n), np.float32)
    out = np.empty((m, n), np.float32)
    assert _raw_gemm()(a, b, out, False, False, parts, np.ones(1, np.int32), 0.0) is False


@needs_native
@pytest.mark.parametrize("a, b", [
    (np.ones((3, 4), np.int32), np.ones((4, 5), np.int32)),        # not float
    (np.ones((3, 4), np.float32), np.ones((4, 5), np.float64)),    # mixed dtypes
    (np.ones((3, 8), np.float32)[:, ::2], np.ones((4, 5), np.float32)),  # strided
    (np.ones((0, 4), np.float32), np.ones((4, 5), np.float32)),    # empty
    (np.ones((3, 0), np.float32), np.ones((0, 5), np.float32)),    # k == 0
    (np.ones((3, 4), np.float16), np.ones((4, 5), np.float16)),
])
def test_gemm_refuses_what_it_does_not_take(a, b):
    assert native.gemm(a, b, 2) is None


@needs_native
def test_c_entry_points_check_their_buffers():
    mod = native._mod
    f32 = np.zeros(10, np.float32)
    with pytest.raises(ValueError, match="differ in size"):
        mod.relu(np.zeros(11, np.float32), f32, 2)
    with pytest.raises(ValueError, match="float32 or float64"):
        mod.relu(np.zeros(10, np.int32), np.zeros(10, np.int32), 2)
    with pytest.raises(ValueError, match="one type"):
        mod.relu(f32, np.zeros(10, np.float64), 2)
    read_only = np.zeros(10, np.float32)
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        mod.relu(read_only, f32, 2)
    with pytest.raises((BufferError, ValueError), match="contiguous"):
        mod.relu(np.zeros((2, 5), np.float32).T, f32, 2)  # the right size, F-ordered
    with pytest.raises(ValueError, match="shapes do not match"):
        mod.gemm(np.ones((3, 4), np.float32), np.ones((5, 6), np.float32),
                 np.empty((3, 6), np.float32), False, False, 2)
    with pytest.raises(ValueError, match="matrices"):
        mod.gemm(f32, f32, f32, False, False, 2)
    with pytest.raises(TypeError):
        mod.adam(f32, f32, f32)


_SIZES = [1, 7, 65536, 65536 * 2 + 7, 300_001]


def _update_inputs(rng, n, dtype):
    var, m, g = (rng.standard_normal(n).astype(dtype) for _ in range(3))
    v = np.abs(rng.standard_normal(n)).astype(dtype)
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], dtype)
    k = min(n - n // 2, len(specials))
    g[n // 2: n // 2 + k] = specials[:k]  # NaN and Inf gradients propagate, as in NumPy
    return var, m, v, g


@needs_native
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", _SIZES)
@pytest.mark.parametrize("nesterov", [False, True])
@pytest.mark.parametrize("parts", [1, 2, 3])
def test_adam_equals_the_numpy_rule_bit_for_bit(dtype, n, nesterov, parts):
    rng = np.random.default_rng(n)
    var, m, v, grad = _update_inputs(rng, n, dtype)
    hyper = {k: np.asarray(x, dtype) for k, x in dict(
        beta1_power=0.9 ** 3, beta2_power=0.999 ** 3, lr=1e-3, beta1=0.9, beta2=0.999,
        epsilon=1e-7).items()}
    want = [x.copy() for x in (var, m, v)]
    training_ops._adam(*want, **hyper, grad=grad, use_nesterov=nesterov)
    got = [x.copy() for x in (var, m, v)]
    assert training_ops._adam_native(*got, **hyper, grad=grad, use_nesterov=nesterov,
                                     parts=parts)
    for g_, w_ in zip(got, want, strict=True):
        np.testing.assert_array_equal(g_.view(np.uint8), w_.view(np.uint8))


@needs_native
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", _SIZES)
@pytest.mark.parametrize("nesterov", [False, True])
@pytest.mark.parametrize("parts", [1, 2])
def test_momentum_equals_the_numpy_rule_bit_for_bit(dtype, n, nesterov, parts):
    rng = np.random.default_rng(n + 1)
    var, accum, _, grad = _update_inputs(rng, n, dtype)
    hyper = {"lr": np.asarray(0.01, dtype), "momentum": np.asarray(0.9, dtype)}
    want = [var.copy(), accum.copy()]
    training_ops._momentum(*want, **hyper, grad=grad, use_nesterov=nesterov)
    got = [var.copy(), accum.copy()]
    assert training_ops._momentum_native(*got, **hyper, grad=grad, use_nesterov=nesterov,
                                         parts=parts)
    for g_, w_ in zip(got, want, strict=True):
        np.testing.assert_array_equal(g_.view(np.uint8), w_.view(np.uint8))


@needs_native
def test_adam_refuses_what_it_does_not_take():
    x = np.zeros(8, np.float32)
    assert not native.adam(x, x.copy(), x.copy(), np.zeros(8, np.float16), 1e-3, .9, .999,
                           1e-7, False, 2)
    assert not native.adam(x, x.copy(), x.copy(), np.zeros(9, np.float32), 1e-3, .9, .999,
                           1e-7, False, 2)
    assert not native.adam(x, x.copy(), np.zeros(16, np.float32)[::2], x.copy(), 1e-3, .9,
                           .999, 1e-7, False, 2)
    read_only = x.copy()
    read_only.flags.writeable = False
    assert not native.adam(read_only, x.copy(), x.copy(), x.copy(), 1e-3, .9, .999, 1e-7,
                           False, 2)
    h = np.zeros(8, np.float16)
    assert not native.adam(h, h.copy(), h.copy(), h.copy(), 1e-3, .9, .999, 1e-7, False, 2)


def _with_specials(x):
    x = x.copy()
    x.reshape(-1)[:6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40]
    return x


@needs_native
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(), (5,), (128, 512), (3, 65536 + 3)])
@pytest.mark.parametrize("parts", [1, 2])
def test_relu_and_grad_equal_the_numpy_paths(dtype, shape, parts):
    rng = np.random.default_rng(len(shape))
    x = rng.standard_normal(shape).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    if x.size >= 6:
        x, g = _with_specials(x), _with_specials(g[::-1] if g.ndim == 1 else g)
    want = np.empty_like(x)
    nn_ops._relu_into(want, x)
    np.testing.assert_array_equal(native.relu(x, parts), want)
    want = np.empty_like(g)
    nn_ops._relu_grad_into(want, g, x)
    np.testing.assert_array_equal(native.relu_grad(g, x, parts), want)


# (base shape, index of the view, whether its axes fold into rows of one stride)
_VIEWS = [
    ((8, 7, 7, 256), (Ellipsis, slice(64, 192)), True),  # a concat's channel slice
    ((2, 3, 4, 5), (Ellipsis, slice(4, 5)), True),  # one channel: any last stride
    ((3, 65536 + 3), (slice(None), slice(1, 65536 + 2)), True),  # rows over several chunks
    ((6, 4, 10), (slice(None), slice(None, None, 2), slice(0, 5)), True),  # rows 2 apart
    ((1, 1, 9, 1, 12), (Ellipsis, slice(3, 11)), True),  # unit axes
    ((6, 4, 10), (slice(None, None, 2), slice(None), slice(0, 5)), False),  # axes apart
    ((8, 6), (slice(None), slice(None, None, 2)), False),  # a stride in the last axis
    ((5, 4, 3), (Ellipsis, slice(None, None, -1)), False),  # a negative one
    ((4, 6), (Ellipsis, slice(2, 2)), False),  # empty
]


@needs_native
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", _VIEWS, ids=lambda c: "x".join(map(str, c[0])) + (
    "-rows" if c[2] else "-declined"))
@pytest.mark.parametrize("parts", [1, 2])
def test_relu_grad_of_views_equals_the_numpy_path(dtype, case, parts):
    """A gradient or feature view (ReluGrad under a ConcatV2's gradient gets channel slices)
    goes through relu_grad_rows when its axes fold into rows of one stride, with the NumPy
    path's products bit for bit (NaN and infinities included); other views are declined
    (None) for the NumPy path. `out` may be a donated contiguous input."""
    base, index, folds = case
    rng = np.random.default_rng(len(base))
    g_base = _with_specials(rng.standard_normal(base).astype(dtype))
    x_base = _with_specials(rng.standard_normal(base).astype(dtype)[..., ::-1].copy())
    for g, x in [(g_base[index], np.ascontiguousarray(x_base[index])),
                 (np.ascontiguousarray(g_base[index]), x_base[index]),
                 (g_base[index], x_base[index])]:
        want = np.empty(g.shape, dtype)
        nn_ops._relu_grad_into(want, g, x)
        got = native.relu_grad(g, x, parts)
        if g.flags.c_contiguous and x.flags.c_contiguous:
            continue  # (the flat path, tested above)
        if not folds:
            assert got is None
            continue
        np.testing.assert_array_equal(got, want)
        if x.flags.c_contiguous:
            into = x.copy()
            assert native.relu_grad(g, into, parts, into) is into
            np.testing.assert_array_equal(into, want)


@needs_native
def test_relu_grad_kernel_on_a_concat_gradient_slice():
    """The ReluGrad kernel fed a Split output (a view of the concatenation's gradient)
    equals NumPy's g * (x > 0)."""
    rng = np.random.default_rng(3)
    big = rng.standard_normal((4, 5, 5, 48)).astype(np.float32)
    x = rng.standard_normal((4, 5, 5, 16)).astype(np.float32)
    with tf.Graph().as_default():
        parts = tf.split(tf.constant(big), [16, 16, 16], axis=3)
        grad = tf.raw_ops.ReluGrad(gradients=parts[1], features=tf.constant(x))
        with tf.Session() as sess:
            got = sess.run(grad)
    np.testing.assert_array_equal(got, big[..., 16:32] * (x > 0))


@needs_native
def test_many_threads_share_the_pool():
    """16 threads run products, updates and activations at once: a caller that finds the pool
    busy runs on its own thread, and every result is still right."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((300, 200)).astype(np.float32)
    b = rng.standard_normal((200, 400)).astype(np.float32)
    want = a @ b
    x = rng.standard_normal(200_000).astype(np.float32)
    relu_want = np.maximum(x, np.float32(0))
    errors = []

    def work(seed):
        try:
            for _ in range(30):
                np.testing.assert_allclose(native.gemm(a, b, 2), want, rtol=1e-5, atol=1e-4)
                np.testing.assert_array_equal(native.relu(x, 2), relu_want)
                w, m, v = np.zeros(1000), np.zeros(1000), np.zeros(1000)
                assert native.adam(w, m, v, np.ones(1000), 0.5, 0.9, 0.999, 1e-8, False, 2)
                assert np.all(w < 0)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [start(work, i) for i in range(16)]
    join(*threads, timeout=60)
    assert not errors, errors[0]


@needs_native
@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs sched_setaffinity")
def test_split_products_are_right_with_every_thread_on_one_cpu():
    """With the caller and its helpers on one CPU, the caller must hand the core over to a
    helper holding a chunk (it yields to it, never spins it out) and still gets every
    chunk: the results equal NumPy's, on one CPU as on all of them."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((256, 300)).astype(np.float32)
    b = rng.standard_normal((300, 512)).astype(np.float32)
    want = a @ b
    native.gemm(a, b, 2)  # the helpers exist from here on
    tids = [int(t) for t in os.listdir("/proc/self/task")]
    saved = {}
    for tid in tids:
        try:
            saved[tid] = os.sched_getaffinity(tid)
        except OSError:  # the thread has ended
            continue
    one = {min(os.sched_getaffinity(0))}
    try:
        for tid in saved:
            try:
                os.sched_setaffinity(tid, one)
            except OSError:
                pass
        for _ in range(50):
            np.testing.assert_allclose(native.gemm(a, b, 2), want, rtol=1e-5, atol=1e-4)
    finally:
        for tid, cpus in saved.items():
            try:
                os.sched_setaffinity(tid, cpus)
            except OSError:
                pass
    np.testing.assert_allclose(native.gemm(a, b, 2), want, rtol=1e-5, atol=1e-4)


@needs_native
def test_a_forked_child_starts_helpers_of_its_own():
    script = textwrap.dedent("""
        import os, numpy as np
        from tensorflux.kernels.cpu import native
        a = np.ones((256, 300), np.float32); b = np.ones((300, 256), np.float32)
        assert (native.gemm(a, b, 2) == 300).all()
        pid = os.fork()
        if pid == 0:
            ok = all((native.gemm(a, b, 2) == 300).all() for _ in range(20))
            x = np.arange(-5, 300000, dtype=np.float32)
            ok = ok and (native.relu(x, 2) == np.maximum(x, 0)).all()
            os._exit(0 if ok and native._mod.helpers() >= 1 else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr


@needs_native
def test_helpers_spin_only_where_a_core_is_to_spare():
    """A helper that finished its chunks spins (TENSORFLUX_HELPER_SPIN_US, default 300 us)
    for the next task before it sleeps, but only where a core is to spare: a process
    confined to one CPU (here, so that the helpers start there) never spins, whatever the
    load; the results are the same either way."""
    script = textwrap.dedent("""
        import os, sys
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
        import numpy as np
        from tensorflux.kernels.cpu import native
        assert native._mod.helper_spin() == 300.0, native._mod.helper_spin()
        a = np.ones((256, 512), np.float32)
        b = np.full((512, 512), 2.0, np.float32)
        ok = all(bool((native.gemm(a, b, 2) == 1024.0).all()) for _ in range(100))
        try:
            native._mod.helper_spin(2e6)
            ok = False
        except ValueError:
            pass
        assert native._mod.helper_spin(0) == 0.0
        ok = ok and all(bool((native.gemm(a, b, 2) == 1024.0).all()) for _ in range(20))
        print("ok" if ok else "wrong", native._mod.helpers(), native._mod.helper_spins())
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60, env={k: v for k, v in os.environ.items()
                                          if k != "TENSORFLUX_HELPER_SPIN_US"})
    assert out.returncode == 0, out.stderr
    verdict, helpers, spins = out.stdout.split()
    assert verdict == "ok" and int(helpers) >= 1
    assert int(spins) == 0


@needs_native
@pytest.mark.parametrize("value,want", [("0", 0.0), ("50", 50.0), ("junk", 300.0),
                                        ("-3", 300.0)])
def test_the_helpers_spin_comes_from_the_environment(value, want):
    out = subprocess.run(
        [sys.executable, "-c", "from tensorflux.kernels.cpu import native; "
                               "print(native._mod.helper_spin())"],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "TENSORFLUX_HELPER_SPIN_US": value})
    assert float(out.stdout) == want, out.stderr


def test_tensorflux_native_0_turns_it_off():
    out = subprocess.run(
        [sys.executable, "-c", "from tensorflux.kernels.cpu import native; "
                               "print(native.available())"],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "TENSORFLUX_NATIVE": "0"})
    assert out.stdout.strip() == "False", out.stderr


def _train_mlp(steps):
    rng = np.random.default_rng(1)
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(3)
        x = tf.placeholder(tf.float32, [None, 300])
        y = tf.placeholder(tf.int64, [None])
        h = x
        for i, (n_in, n_out) in enumerate([(300, 256), (256, 256)]):
            h = tf.nn.relu(tf.matmul(h, tf.get_variable(f"w{i}", [n_in, n_out])))
        logits = tf.matmul(h, tf.get_variable("out", [256, 10]))
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=y, logits=logits))
        train = tf.train.AdamOptimizer(1e-3).minimize(loss)
        init = tf.global_variables_initializer()
        weights = tf.trainable_variables()
    feed = {x: rng.standard_normal((200, 300)).astype(np.float32),
            y: rng.integers(0, 10, 200)}
    with tf.Session(graph=g) as sess:
        sess.run(init)
        losses = [sess.run([train, loss], feed)[1] for _ in range(steps)]
        return losses, sess.run(weights)


@needs_native
def test_training_with_and_without_the_extension_agree(monkeypatch):
    """The same 8 Adam steps of a ReLU network, kernels on the native paths and then on the
    NumPy paths: products may differ in rounding (BLAS blocking), nothing else."""
    with_native = _train_mlp(8)
    monkeypatch.setattr(native, "_mod", None)
    without = _train_mlp(8)
    np.testing.assert_allclose(with_native[0], without[0], rtol=1e-5)
    for a, b in zip(with_native[1], without[1], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def _pool_node(k, s, padding, explicit=None):
    attrs = {"ksize": [1, k[0], k[1], 1], "strides": [1, s[0], s[1], 1], "padding": padding,
             "data_format": "NHWC"}
    if explicit is not None:
        attrs["explicit_paddings"] = [0, 0, *explicit, 0, 0]
    return SimpleNamespace(attrs=attrs, name="pool", op="MaxPool")


def _pool_cases():
    rng = np.random.default_rng(7)
    cases = [((2, 2), (2, 2), "VALID", None, (3, 8, 8, 5)),      # the CNN's: tiles, covered
             ((2, 2), (2, 2), "SAME", None, (2, 7, 9, 3)),       # tiles, partial windows
             ((3, 3), (2, 2), "SAME", None, (2, 9, 9, 4)),       # overlapping
             ((3, 3), (1, 1), "VALID", None, (1, 6, 7, 2)),
             ((1, 1), (2, 3), "VALID", None, (2, 5, 7, 3)),      # gaps between windows
             ((2, 3), (3, 1), "EXPLICIT", [2, 1, 0, 3], (2, 6, 5, 6))]
    for _ in range(14):
        k = tuple(int(v) for v in rng.integers(1, 5, 2))
        s = tuple(int(v) for v in rng.integers(1, 4, 2))
        shape = (int(rng.integers(1, 4)), int(rng.integers(k[0], 12)),
                 int(rng.integers(k[1], 12)), int(rng.integers(1, 40)))
        cases.append((k, s, str(rng.choice(["VALID", "SAME"])), None, shape))
    return cases


def _pool_input(rng, shape, dtype):
    """Values with ties, NaN, +-Inf and signed zeros, so the first-maximum rule and the
    NaN handling are exercised."""
    x = rng.integers(-3, 4, shape).astype(dtype)
    flat = x.reshape(-1)
    picks = rng.choice(flat.size, size=min(flat.size, max(1, flat.size // 6)), replace=False)
    flat[picks] = rng.choice(np.array([np.nan, np.inf, -np.inf, -0.0], dtype), len(picks))
    return x


@needs_native
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("parts", [1, 2])
@pytest.mark.parametrize("case", range(len(_pool_cases())))
def test_max_pool_and_grad_equal_the_numpy_path(monkeypatch, dtype, parts, case):
    from tensorflux.kernels.cpu import pooling_ops

    k, s, padding, explicit, shape = _pool_cases()[case]
    node = _pool_node(k, s, padding, explicit)
    rng = np.random.default_rng(case)
    x = _pool_input(rng, shape, dtype)
    forward = pooling_ops._max_pool(node)
    backward = pooling_ops._max_pool_grad(node)
    ctx = SimpleNamespace(session=SimpleNamespace(
        _config=SimpleNamespace(intra_op_parallelism_threads=parts)))
    calls = []
    for name in ("max_pool", "max_pool_grad"):
        real = getattr(native, name)
        monkeypatch.setattr(native, name, lambda *a, _real=real, _name=name:
                            calls.append(_name) or _real(*a))
    out = forward(ctx, x)
    g = rng.standard_normal(out.shape).astype(dtype)
    g.reshape(-1)[: min(g.size, 3)] = np.array([np.inf, np.nan, -0.0], dtype)[: min(g.size, 3)]
    dx = backward(ctx, x, out, g)
    assert calls == ["max_pool", "max_pool_grad"]  # both went to the C loops
    monkeypatch.setattr(native, "_mod", None)
    want_out = forward(ctx, x)
    want_dx = backward(ctx, x, want_out, g)
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(dx.view(f"u{dx.itemsize}"),
                                  want_dx.view(f"u{want_dx.itemsize}"))


@needs_native
def test_max_pool_refuses_what_it_does_not_take():
    x = np.zeros((1, 4, 4, 3), np.float32)
    pads = [(0, 0)] * 3
    assert native.max_pool(x.astype(np.float16), (1, 2, 2, 3), [2, 2, 1], [2, 2, 1], pads,
                           2) is None
    assert native.max_pool(x, (1, 2, 2, 1), [2, 2, 3], [2, 2, 3], pads, 2) is None  # depth
    assert native.max_pool(np.zeros((1, 4, 8, 3), np.float32)[:, :, ::2], (1, 2, 2, 3),
                           [2, 2, 1], [2, 2, 1], pads, 2) is None
    assert native.max_pool(np.zeros((1, 2, 2, 5000), np.float32), (1, 1, 1, 5000),
                           [2, 2, 1], [2, 2, 1], pads, 2) is None
    with pytest.raises(ValueError, match="shapes do not match"):
        native._mod.max_pool(x, np.zeros((1, 2, 2, 4), np.float32), 2, 2, 2, 2, 0, 0, 2)
    with pytest.raises(ValueError, match="shapes do not match"):
        native._mod.max_pool_grad(x, np.zeros((1, 2, 2, 3), np.float32),
                                  np.zeros((1, 4, 4, 3), np.float32),
                                  np.zeros((1, 2, 2, 2), np.int32), 2, 2, 2, 2, 0, 0, True, 2)
    with pytest.raises(ValueError, match="positive windows"):
        native._mod.max_pool(x, np.zeros((1, 2, 2, 3), np.float32), 0, 2, 2, 2, 0, 0, 2)
    with pytest.raises(ValueError, match="tiles"):  # windows that do not tile the input
        native._mod.max_pool_grad(x, np.zeros((1, 2, 2, 3), np.float32),
                                  np.zeros((1, 4, 4, 3), np.float32),
                                  np.zeros((1, 2, 2, 3), np.int32), 3, 3, 2, 2, 0, 0, True, 2)


@needs_native
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kh, kw, sh, sw, dh, dw", [
    (5, 5, 1, 1, 1, 1), (3, 3, 2, 2, 1, 1), (3, 2, 1, 3, 2, 2), (1, 1, 1, 1, 1, 1),
    (2, 4, 3, 1, 1, 3)])
def test_im2col_equals_the_strided_copy(dtype, kh, kw, sh, sw, dh, dw):
    from tensorflux.kernels.cpu import conv_ops

    rng = np.random.default_rng(kh * 10 + kw)
    xp = rng.standard_normal((5, 13, 14, 3)).astype(dtype)
    oh = (13 - (kh - 1) * dh - 1) // sh + 1
    ow = (14 - (kw - 1) * dw - 1) // sw + 1
    patches = conv_ops._patches(xp, kh, kw, oh, ow, (sh, sw), (dh, dw))
    got = np.full((3, oh, ow, kh, kw, 3), np.nan, dtype)
    assert native.im2col(xp, got, 2, (sh, sw), (dh, dw))
    np.testing.assert_array_equal(got, patches[2:5])


@needs_native
def test_im2col_refuses_geometry_outside_the_input():
    xp = np.zeros((2, 6, 6, 3), np.float32)
    with pytest.raises(ValueError, match="geometry"):  # windows reach past the input
        native._mod.im2col(xp, np.zeros((2, 3, 3, 5, 5, 3), np.float32), 0, 5, 5, 1, 1, 1, 1)
    with pytest.raises(ValueError, match="geometry"):  # more images than remain
        native._mod.im2col(xp, np.zeros((2, 2, 2, 5, 5, 3), np.float32), 1, 5, 5, 1, 1, 1, 1)
    assert not native.im2col(xp[:, :, ::2], np.zeros((2, 1, 1, 3, 3, 3), np.float32), 0,
                             (1, 1), (1, 1))  # strided input: the NumPy copy


def _outer_sum_reference(x, dy):
    """x.T @ dy in _native.c's outer_sum order: the k terms added in order, no FMA."""
    out = x[0][:, None] * dy[0]
    for r in range(1, x.shape[0]):
        out += x[r][:, None] * dy[r]
    return out


def _thin_nt_reference(a, w):
    """a @ w.T in _native.c's thin_nt order: 16 lanes per dot product, summed in order."""
    m, k = a.shape
    full = k // 16 * 16
    acc = np.zeros((m, w.shape[0], 16), a.dtype)
    for c in range(0, full, 16):
        acc += a[:, None, c:c + 16] * w[None, :, c:c + 16]
    acc[..., :k - full] += a[:, None, full:] * w[None, :, full:]
    total = acc[..., 0].copy()
    for lane in range(1, 16):
        total += acc[..., lane]
    return total


@needs_native
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k, m, n", [(1, 5, 3), (8, 70, 37), (16, 33, 300), (3, 200, 64),
                                     (8, 9, 1030), (5, 12, 70)])
@pytest.mark.parametrize("parts", [1, 2])
def test_skinny_products_equal_their_numpy_order_bit_for_bit(dtype, k, m, n, parts):
    """The fully connected gradients at small batches: x^T dy (outer_sum: blocks of four
    rows built in strips of 256 columns, streaming stores on aligned rows, single rows and
    a plain tail) and dy w^T (thin_nt: 2x4 blocks for even batches, single dots for odd
    ones and the last rows; 16 lanes and a tail), bit for bit
    against the NumPy spelling of their order, and close to BLAS's products."""
    rng = np.random.default_rng(k * 31 + n)
    x = rng.standard_normal((k, m)).astype(dtype)
    dy = rng.standard_normal((k, n)).astype(dtype)
    got = native.skinny(x.T, dy, parts)
    np.testing.assert_array_equal(got, _outer_sum_reference(x, dy))
    np.testing.assert_allclose(got, x.T @ dy, rtol=1e-5, atol=1e-5)
    w = rng.standard_normal((m, n)).astype(dtype)  # (outputs, inputs): dy (k, m) @ w
    d2 = rng.standard_normal((k, n)).astype(dtype)
    got = native.skinny(d2, w.T, parts)
    np.testing.assert_array_equal(got, _thin_nt_reference(d2, w))
    np.testing.assert_allclose(got, d2 @ w.T, rtol=1e-4, atol=1e-4)


@needs_native
def test_skinny_refuses_what_it_does_not_take():
    a = np.ones((20, 4), np.float32)
    assert native.skinny(a.T, np.ones((20, 5), np.float32), 2) is None  # k = 20 > 16
    assert native.skinny(a, np.ones((5, 4), np.float32).T, 2) is None  # m = 20 > 16
    assert native.skinny(a[:4].T, np.ones((4, 5), np.float64), 2) is None  # mixed dtypes
    assert native.skinny(np.ones((4, 3), np.float32), np.ones((3, 5), np.float32), 2) is None


def test_matmul_of_fully_connected_gradients_through_the_skinny_products():
    """tf.matmul(x, dy, transpose_a=True) and tf.matmul(dy, w, transpose_b=True) at a batch
    of 8, large enough for the skinny kernels, against NumPy."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((8, 1200)).astype(np.float32)
    dy = rng.standard_normal((8, 700)).astype(np.float32)
    w = rng.standard_normal((1200, 700)).astype(np.float32)
    with tf.Session() as sess:
        gw, gx = sess.run([tf.matmul(x, dy, transpose_a=True),
                           tf.matmul(dy, w, transpose_b=True)])
    np.testing.assert_allclose(gw, x.T @ dy, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(gx, dy @ w.T, rtol=1e-5, atol=1e-3)


def _xent_reference(x, labels):
    """Sparse softmax cross-entropy in float64 (loss, backprop)."""
    xf = x.astype(np.float64)
    shifted = xf - xf.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    s = e.sum(axis=1, keepdims=True)
    rows = np.arange(x.shape[0])
    backprop = e / s
    backprop[rows, labels] -= 1
    return np.log(s[:, 0]) - shifted[rows, labels], backprop


@needs_native
@pytest.mark.parametrize("dtype,tol", [(np.float32, 2e-6), (np.float64, 1e-14)])
@pytest.mark.parametrize("label_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (128, 10), (3, 1000), (40, 100)])
def test_sparse_xent_agrees_with_the_numpy_path(monkeypatch, dtype, tol, label_dtype, shape):
    """The one-pass C kernel against a float64 reference and against the kernel's NumPy
    path (the extension switched off), for the sizes it takes and one it leaves to NumPy."""
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    labels = rng.integers(0, shape[1], shape[0]).astype(label_dtype)
    taken = native.sparse_xent(x, labels)
    assert (taken is not None) == (x.size <= native.XENT_MAX_ELEMENTS)
    loss, backprop = nn_ops._sparse_softmax_xent(None, x, labels)
    assert loss.dtype == dtype and backprop.dtype == dtype
    assert loss.shape == (shape[0],) and backprop.shape == shape
    ref_loss, ref_backprop = _xent_reference(x, labels)
    np.testing.assert_allclose(loss, ref_loss, rtol=tol, atol=tol)
    np.testing.assert_allclose(backprop, ref_backprop, rtol=tol, atol=tol)
    monkeypatch.setattr(native, "_mod", None)
    np_loss, np_backprop = nn_ops._sparse_softmax_xent(None, x, labels)
    np.testing.assert_allclose(loss, np_loss, rtol=2 * tol, atol=2 * tol)
    np.testing.assert_allclose(backprop, np_backprop, rtol=2 * tol, atol=2 * tol)


@needs_native
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sparse_xent_keeps_nan_and_inf_as_numpy_does(monkeypatch, dtype):
    x = np.array([[1.0, np.nan, 2.0], [np.nan, 0.0, 1.0], [np.inf, 0.0, 1.0],
                  [-np.inf, 0.0, 1.0], [1e30, -1e30, 0.0], [3.0, 3.0, 3.0]], dtype)
    labels = np.array([0, 2, 1, 1, 0, 2], np.int64)
    assert native.sparse_xent(x, labels) is not None
    loss, backprop = nn_ops._sparse_softmax_xent(None, x, labels)
    monkeypatch.setattr(native, "_mod", None)
    np_loss, np_backprop = nn_ops._sparse_softmax_xent(None, x, labels)
    np.testing.assert_allclose(loss, np_loss, rtol=1e-6, equal_nan=True)
    np.testing.assert_allclose(backprop, np_backprop, rtol=1e-6, atol=1e-7, equal_nan=True)
    assert np.isnan(loss[:3]).all() and np.isnan(backprop[:3]).all()


@needs_native
def test_sparse_xent_bad_labels_raise_as_before_and_write_nothing():
    x = np.zeros((4, 5), np.float32)
    for bad in ([0, 5, 1, 2], [-1, 0, 0, 0], [0, 1, 2, 9]):
        labels = np.array(bad, np.int32)
        assert native.sparse_xent(x, labels)[2] == next(i for i, v in enumerate(bad)
                                                        if not 0 <= v < 5)
        first = next(v for v in bad if not 0 <= v < 5)
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=rf"label value of {first} which is outside the valid range "
                                 rf"of \[0, 5\)\.  Label values: {' '.join(map(str, bad))}"):
            nn_ops._sparse_softmax_xent(None, x, labels)


@needs_native
def test_sparse_xent_refuses_what_it_does_not_take():
    x = np.zeros((4, 5), np.float32)
    labels = np.zeros(4, np.int32)
    assert native.sparse_xent(x.astype(np.float16), labels) is None
    assert native.sparse_xent(x, labels.astype(np.uint8)) is None
    assert native.sparse_xent(np.zeros((5, 4), np.float32).T, labels) is None  # F-ordered
    assert native.sparse_xent(x, np.zeros(3, np.int32)) is None
    assert native.sparse_xent(np.zeros((4, 0), np.float32), labels) is None
    with pytest.raises(ValueError, match="sparse_xent"):
        native._mod.sparse_xent(x, np.zeros(3, np.int32), np.empty(4, np.float32),
                                np.empty((4, 5), np.float32))
    with pytest.raises(ValueError, match="sparse_xent"):
        native._mod.sparse_xent(x, labels.astype(np.int16), np.empty(4, np.float32),
                                np.empty((4, 5), np.float32))


@needs_native
def test_own_many_takes_what_own_value_takes():
    """own_many against state_ops.own_value on the same situations: the stored array when
    nothing else holds it, else a copy put in the variable's place."""
    from tensorflux.framework import dtypes
    from tensorflux.kernels.cpu.state_ops import Var, own_value

    def situations():
        """(variable, what else holds) pairs, made fresh for each implementation."""
        out = []
        alone = Var(dtypes.float32)
        alone.value = np.arange(6, dtype=np.float32)
        out.append((alone, None))
        held = Var(dtypes.float32)
        held.value = np.arange(6, dtype=np.float32)
        out.append((held, held.value))  # a read still alive
        frozen = Var(dtypes.float32)
        frozen.value = np.arange(6, dtype=np.float32)
        frozen.value.flags.writeable = False
        out.append((frozen, None))
        view_alone = Var(dtypes.float32)
        view_alone.value = np.arange(8, dtype=np.float32)[2:]  # its base held by it alone
        out.append((view_alone, None))
        view_held = Var(dtypes.float32)
        base = np.arange(8, dtype=np.float32)
        view_held.value = base[2:]
        out.append((view_held, base))
        scalar = Var(dtypes.float32)
        scalar.value = np.float32(3)  # not an ndarray: copied
        out.append((scalar, None))
        return out

    python = situations()
    python_ids = [id(v.value) for v, _ in python]
    python_got = [own_value(v) for v, _ in python]
    python_kept = [id(a) == i for a, i in zip(python_got, python_ids, strict=True)]
    c = situations()
    c_ids = [id(v.value) for v, _ in c]
    c_got = native.own_many([v for v, _ in c])
    c_kept = [id(a) == i for a, i in zip(c_got, c_ids, strict=True)]
    assert python_kept == c_kept == [True, False, False, True, False, False]
    for (v, other), a in zip(c, c_got, strict=True):
        assert v.value is a  # the variable holds what the update writes
        if other is not None:
            assert other is not a and np.array_equal(np.asarray(other).reshape(-1)[-6:],
                                                      np.asarray(a).reshape(-1))
    empty = Var(dtypes.float32)
    first = Var(dtypes.float32)
    first.value = np.zeros(2, np.float32)
    assert native.own_many([first, empty, first]) == 1
    with pytest.raises(TypeError):
        native._mod.own_many([first], "ndarray")


# ---- VarReader: ReadVariableOp's common case in C -------------------------------------------


def _reader_world():
    """A FoundVars, a step context and a handle as the ReadVariableOp kernel sees them."""
    from tensorflux.framework import dtypes
    from tensorflux.kernels.cpu import state_ops
    from tensorflux.runtime.resource_mgr import ResourceMgr

    rm = ResourceMgr()
    var = state_ops.Var(dtypes.float32)
    var.value = np.arange(4, dtype=np.float32)
    handle = state_ops.ResourceHandle("localhost", "v", "/cpu:0", dtypes.float32)
    ctx = SimpleNamespace(resource_mgr=rm, device=object())
    found = state_ops.FoundVars(lambda c, h: var)
    return found, ctx, handle, var, rm


@needs_native
def test_var_reader_reads_the_found_variable_without_its_python_kernel():
    found, ctx, handle, var, rm = _reader_world()
    slow_calls = []

    def slow(c, h):
        slow_calls.append(h)
        v, = found.look_up(c, (h,))
        return v.value

    read = native.var_reader(found, slow)
    assert type(read).__name__ == "VarReader" and read.slow is slow
    assert read(ctx, handle) is var.value and len(slow_calls) == 1  # the first looks up
    for _ in range(5):
        assert read(ctx, handle) is var.value
    assert len(slow_calls) == 1
    var.value = np.ones(2, np.float32)  # an assignment: the new array is read
    assert read(ctx, handle) is var.value and len(slow_calls) == 1


@needs_native
@pytest.mark.parametrize("change", ["other_handle", "version", "device", "manager",
                                    "no_value", "keywords", "arity"])
def test_var_reader_leaves_every_other_case_to_the_python_kernel(change):
    """Another handle object, a removal from the resource manager (its version), another
    device or manager, a variable without a value, keyword or other argument counts: the
    Python kernel runs (and raises what it raises)."""
    from tensorflux.kernels.cpu.state_ops import ResourceHandle
    from tensorflux.runtime.resource_mgr import ResourceMgr

    found, ctx, handle, var, rm = _reader_world()
    calls = []

    def slow(c, h=None, **kw):
        calls.append(1)
        return "slow"

    found.entry_for(ctx, (handle,))
    read = native.var_reader(found, slow)
    assert read(ctx, handle) is var.value and not calls
    args = (ctx, handle)
    if change == "other_handle":
        args = (ctx, ResourceHandle("localhost", "v", "/cpu:0", handle.dtype))  # equal, not it
    elif change == "version":
        rm.create("c", "x", object())
        rm.delete("c", "x")
    elif change == "device":
        args = (SimpleNamespace(resource_mgr=rm, device=object()), handle)
    elif change == "manager":
        args = (SimpleNamespace(resource_mgr=ResourceMgr(), device=ctx.device), handle)
    elif change == "no_value":
        var.value = None
    if change == "keywords":
        assert read(ctx, h=handle) == "slow"
    elif change == "arity":
        assert read(ctx) == "slow"
    else:
        assert read(*args) == "slow"
    assert calls == [1]


@needs_native
def test_var_reader_reads_under_the_lock_from_many_threads():
    found, ctx, handle, var, rm = _reader_world()
    read = native.var_reader(found, lambda c, h: found.look_up(c, (h,))[0].value)
    read(ctx, handle)
    seen, stop = [], threading.Event()

    def reader():
        while not stop.is_set():
            seen.append(int(read(ctx, handle)[0]))

    def writer():
        for i in range(2000):
            with var.lock:
                var.value = np.full(4, i, np.float32)
        stop.set()

    threads = [start(reader) for _ in range(8)] + [start(writer)]
    join(*threads, timeout=60)
    assert seen and max(seen) <= 1999 and int(read(ctx, handle)[0]) == 1999
