"""The frequency-domain convolution (tensorflux/kernels/cpu/_fft_conv.py): forced on, every
convolution case of the nn table (values in float32 and float64, finite-difference
gradients) goes through it and agrees with the loop references; random geometries
(padding, dilation, odd and even transform sizes) agree with im2col to rounding; the cost
model picks it where it pays; NaN and infinity stay local as with the direct convolution."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.kernels import intra_op
from tensorflux.kernels.cpu import _fft_conv, _spread_conv
from tests.op_test_util import check_gradient, check_value
from tests.ops.nn_cases import (
    BF16,
    F16,
    LOW_PRECISION_CASES,
    ref_conv,
    ref_conv_filter_grad,
    ref_conv_input_grad,
)
from tests.ops.test_conv_ops import CASES

CONV_CASES = [c for c in CASES if c.name.startswith("conv")]
_BY_NAME = {c.name: c for c in CASES}
_FFT_CALLS = ("conv_forward", "conv_backprop_input", "conv_backprop_filter")


@pytest.fixture
def forced(monkeypatch):
    """Every stride-1 float convolution goes through the transform; returns the number of
    calls of each transform kernel, counted."""
    monkeypatch.setattr(_fft_conv, "_MIN_FLOPS", 0)
    monkeypatch.setattr(_fft_conv, "_MARGIN", 0.0)
    monkeypatch.setattr(_spread_conv, "MAX_FILTERS", 0)  # (convs with few filters: spread)
    calls = dict.fromkeys(_FFT_CALLS, 0)
    for name in _FFT_CALLS:
        real = getattr(_fft_conv, name)

        def counted(*args, _real=real, _name=name):
            calls[_name] += 1
            return _real(*args)

        monkeypatch.setattr(_fft_conv, name, counted)
    return calls


def _run(fetches):
    with tf.Session() as sess:
        return sess.run(fetches)


@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_table_values_through_transform(forced, case, dtype):
    check_value(case, dtype)


@pytest.mark.parametrize("case", [c for c in CONV_CASES if c.grad], ids=lambda c: c.name)
def test_table_gradients_through_transform(forced, case):
    check_gradient(case, np.float64)


@pytest.mark.parametrize("name", ["conv_same", "conv_backprop_filter"])  # the stride-1 ones
@pytest.mark.parametrize("dtype", [F16, BF16], ids=["f16", "bf16"])
def test_table_low_precision_through_transform(forced, name, dtype):
    """half and bfloat16 convolutions are transformed in float32 and cast back."""
    assert name in LOW_PRECISION_CASES
    check_value(_BY_NAME[name], dtype)
    assert sum(forced.values()) >= 1


def test_forced_path_is_taken(forced):
    rng = np.random.default_rng(0)
    x = tf.constant(rng.standard_normal((2, 6, 5, 3)))
    w = tf.constant(rng.standard_normal((3, 3, 3, 2)))
    y = tf.nn.conv2d(x, w, 1, "SAME")
    _run(tf.gradients(tf.reduce_sum(y * y), [x, w]))
    assert forced == dict.fromkeys(_FFT_CALLS, 1)
    _run(tf.nn.conv2d(x, w, 2, "SAME"))  # strided: im2col
    assert forced["conv_forward"] == 1


def _random_geometry(rng):
    while True:
        n, h, w = rng.integers(1, 4), rng.integers(1, 11), rng.integers(1, 11)
        c, f = rng.integers(1, 5), rng.integers(1, 5)
        kh, kw = rng.integers(1, 6), rng.integers(1, 6)
        dil = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        pads = tuple((int(rng.integers(0, 5)), int(rng.integers(0, 5))) for _ in range(2))
        oh = h + sum(pads[0]) - (kh - 1) * dil[0]
        ow = w + sum(pads[1]) - (kw - 1) * dil[1]
        if oh > 0 and ow > 0:
            return (n, h, w, c), (kh, kw, c, f), dil, pads, (n, oh, ow, f)


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-11), (np.float32, 2e-5)])
@pytest.mark.parametrize("workers", [1, 2])
def test_random_geometries_match_loop_references(dtype, tol, workers):
    """Explicit padding of every size (past the window too), dilations, one-pixel images:
    the three kernels against the loop references, relative to the largest value."""
    rng = np.random.default_rng(7)
    for _ in range(40):
        xs, ws, dil, pads, ys = _random_geometry(rng)
        x = rng.standard_normal(xs).astype(dtype)
        w = rng.standard_normal(ws).astype(dtype)
        dy = rng.standard_normal(ys).astype(dtype)
        before = (pads[0][0], pads[1][0])
        got = [_fft_conv.conv_forward(x, w, before, ys[1:3], dil, workers),
               _fft_conv.conv_backprop_input(xs, w, dy, before, dil, workers),
               _fft_conv.conv_backprop_filter(x, dy, ws[:2], before, dil, workers)]
        want = [ref_conv(x, w, (1, 1), "EXPLICIT", dil, pads),
                ref_conv_input_grad(xs, w, dy, (1, 1), "EXPLICIT", dil, pads),
                _filter_grad(x, ws, dy, dil, pads)]
        for g, wv in zip(got, want, strict=True):
            assert g.dtype == dtype and g.shape == wv.shape
            scale = max(1.0, float(np.abs(wv).max()))
            np.testing.assert_allclose(g / scale, wv / scale, rtol=0, atol=tol,
                                       err_msg=f"{xs} {ws} dil={dil} pads={pads}")


def _filter_grad(x, ws, dy, dil, pads):
    """ref_conv_filter_grad knows SAME/VALID only: explicit padding as a padded VALID."""
    xp = np.pad(x, ((0, 0), pads[0], pads[1], (0, 0)))
    return ref_conv_filter_grad(xp, ws, dy, (1, 1), "VALID", dil)


def test_cost_model_choices():
    """The CNN benchmark's second layer (16x16x32 -> 64, 5x5) goes through the transform;
    its first layer (3 input channels), 1x1 and 3x3 convolutions where the transform
    measured slower, and integer data stay on im2col."""
    f32 = np.float32
    assert _fft_conv.worthwhile(f32, 64, (16, 16), 32, 64, (5, 5), (1, 1), (16, 16), (2, 2))
    assert not _fft_conv.worthwhile(f32, 64, (32, 32), 3, 32, (5, 5), (1, 1), (32, 32), (2, 2))
    assert not _fft_conv.worthwhile(f32, 64, (16, 16), 64, 64, (1, 1), (1, 1), (16, 16),
                                    (0, 0))
    assert not _fft_conv.worthwhile(f32, 8, (8, 8), 16, 16, (3, 3), (1, 1), (8, 8), (1, 1))
    # measured: 0.86x of im2col's speed through the transform, so not taken
    assert not _fft_conv.worthwhile(f32, 32, (14, 14), 128, 128, (3, 3), (1, 1), (14, 14),
                                    (1, 1))
    # measured: 1.9x and 1.95x faster through the transform
    assert _fft_conv.worthwhile(f32, 64, (8, 8), 64, 64, (5, 5), (1, 1), (8, 8), (2, 2))
    assert _fft_conv.worthwhile(f32, 8, (64, 64), 16, 32, (7, 7), (1, 1), (64, 64), (3, 3))
    assert not _fft_conv.worthwhile(np.int32, 64, (16, 16), 32, 64, (5, 5), (1, 1), (16, 16),
                                    (2, 2))
    # batch 8 (AlexNet's second layer): the backprops through the transform, the forward
    # conv (thin per-frequency products) by im2col; at batch 64 the forward one too
    alexnet = (f32, 8, (27, 27), 64, 192, (5, 5), (1, 1), (27, 27), (2, 2))
    assert _fft_conv.worthwhile(*alexnet)
    assert not _fft_conv.worthwhile(*alexnet, forward=True)
    assert _fft_conv.worthwhile(f32, 64, (16, 16), 32, 64, (5, 5), (1, 1), (16, 16), (2, 2),
                                forward=True)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_values_stay_local(monkeypatch, bad):
    """A NaN or an infinity in one pixel reaches only the outputs whose windows read it (a
    transform would spread it over the image): such data goes the direct way."""
    monkeypatch.setattr(_fft_conv, "_MIN_FLOPS", 0)
    monkeypatch.setattr(_fft_conv, "_MARGIN", 0.0)
    monkeypatch.setattr(_spread_conv, "MAX_FILTERS", 0)  # (convs with few filters: spread)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 9, 9, 2)).astype(np.float32)
    x[0, 0, 0, 0] = bad
    w = rng.standard_normal((3, 3, 2, 2)).astype(np.float32)
    dy = rng.standard_normal((1, 9, 9, 2)).astype(np.float32)
    dy[0, 8, 8, 1] = bad
    y, dx = _run([tf.nn.conv2d(x, w, 1, "SAME"),
                  tf.nn.conv2d_backprop_input([1, 9, 9, 2], w, dy, [1, 1, 1, 1], "SAME")])
    assert not np.isfinite(y[0, :2, :2]).all() and np.isfinite(y[0, 3:, 3:]).all()
    assert not np.isfinite(dx[0, 7:, 7:]).all() and np.isfinite(dx[0, :6, :6]).all()


def test_parallel_chunks_agree_with_one_thread(monkeypatch):
    """The batch split over the intra-op threads (dynamic chunks, one running sum per
    thread for the filter gradient) gives what one thread gives."""
    monkeypatch.setattr(intra_op, "blas_threads", lambda: 1)
    rng = np.random.default_rng(9)
    x = rng.standard_normal((7, 12, 12, 8)).astype(np.float32)
    w = rng.standard_normal((5, 5, 8, 6)).astype(np.float32)
    dy = rng.standard_normal((7, 12, 12, 6)).astype(np.float32)
    args = [((x, w, (2, 2), (12, 12), (1, 1)), "conv_forward"),
            (((7, 12, 12, 8), w, dy, (2, 2), (1, 1)), "conv_backprop_input"),
            ((x, dy, (5, 5), (2, 2), (1, 1)), "conv_backprop_filter")]
    for a, name in args:
        fn = getattr(_fft_conv, name)
        one, four = fn(*a, 1), fn(*a, 4)
        np.testing.assert_allclose(four, one, rtol=1e-5, atol=1e-4)


def test_transform_size_rule():
    # in + pad_before, out + span - pad_before, span + 1
    assert _fft_conv.transform_size(16, 16, 5, 1, 2) == 18
    assert _fft_conv.transform_size(16, 12, 5, 1, 0) == 16  # VALID needs no padding
    assert _fft_conv.transform_size(1, 1, 5, 1, 2) == 5  # taps must not collide
    assert _fft_conv.transform_size(8, 8, 3, 2, 2) == 10


def _conv_model(seed=0):
    """A conv layer on a variable filter with its gradients, in a new graph."""
    rng = np.random.default_rng(seed)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [4, 10, 10, 6])
        w = tf.Variable(rng.standard_normal((5, 5, 6, 8)).astype(np.float32) * 0.1)
        y = tf.nn.relu(tf.nn.conv2d(x, w, 1, "SAME"))
        loss = tf.reduce_mean(tf.square(tf.nn.conv2d(y, tf.ones([3, 3, 8, 2]), 1, "SAME")))
        train = tf.train.GradientDescentOptimizer(1e-4).minimize(loss)
        grads = tf.gradients(loss, [x, w])
        init = tf.global_variables_initializer()
    return g, x, w, loss, train, grads, init, rng.standard_normal((4, 10, 10, 6))


def test_one_step_makes_each_spectrum_once(forced, monkeypatch):
    """The forward convolution's input and filter spectra and out_backprop's are made once
    per step and shared by the backprop kernels (three spectra per stride-1 layer)."""
    made = {"data": 0, "filter": 0}
    real_data, real_filter = _fft_conv._Geometry.data_spectrum, _fft_conv._Geometry.filter_spectrum

    def data(self, *a):
        made["data"] += 1
        return real_data(self, *a)

    def filt(self, *a):
        made["filter"] += 1
        return real_filter(self, *a)

    monkeypatch.setattr(_fft_conv._Geometry, "data_spectrum", data)
    monkeypatch.setattr(_fft_conv._Geometry, "filter_spectrum", filt)
    g, x, _, loss, _, grads, init, xv = _conv_model()
    with tf.Session(graph=g) as sess:
        sess.run(init)
        sess.run([loss, grads], {x: xv})
        # two layers: input and out_backprop spectra of each, one filter spectrum each
        assert made == {"data": 4, "filter": 2}
        sess.run([loss, grads], {x: xv})  # a new step computes them again
        assert made == {"data": 8, "filter": 4}


def test_training_through_transform_matches_im2col(monkeypatch):
    """Spectra are shared within a step only: the filter variable is updated between steps
    (the spectra must not go stale), and the losses and weights follow im2col's."""
    def train(force):
        with monkeypatch.context() as m:
            if force:
                m.setattr(_fft_conv, "_MIN_FLOPS", 0)
                m.setattr(_fft_conv, "_MARGIN", 0.0)
            else:
                m.setattr(_fft_conv, "worthwhile", lambda *a, **k: False)
            g, x, w, loss, step, _, init, xv = _conv_model(1)
            with tf.Session(graph=g) as sess:
                sess.run(init)
                losses = [sess.run([loss, step], {x: xv})[0] for _ in range(5)]
                return losses, sess.run(w)

    (l1, w1), (l2, w2) = train(True), train(False)
    assert l1[0] > l1[-1]
    np.testing.assert_allclose(l1, l2, rtol=1e-4)
    np.testing.assert_allclose(w1, w2, rtol=1e-4, atol=1e-5)


def test_concurrent_steps_share_nothing(forced):
    """Sixteen threads run steps of one session at once, each with its own input: every
    result equals the one-thread result for that input."""
    from tests.threads_util import join, start

    g, x, _, loss, _, grads, init, _ = _conv_model(2)
    rng = np.random.default_rng(5)
    inputs = [rng.standard_normal((4, 10, 10, 6)) for _ in range(16)]
    with tf.Session(graph=g) as sess:
        sess.run(init)
        want = [sess.run([loss, grads], {x: v}) for v in inputs]
        got = [None] * len(inputs)

        def worker(i):
            for _ in range(3):
                got[i] = sess.run([loss, grads], {x: inputs[i]})

        join(*[start(worker, i) for i in range(len(inputs))], timeout=60)
    for (wl, (wdx, wdw)), (gl, (gdx, gdw)) in zip(want, got, strict=True):
        np.testing.assert_allclose(gl, wl, rtol=1e-6)
        np.testing.assert_allclose(gdx, wdx, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(gdw, wdw, rtol=1e-5, atol=1e-7)


def test_spectra_store_waits_for_a_spectrum_being_made():
    """Two kernels asking for the same spectrum at once: one makes it, the other waits and
    gets the same array; an error in the maker lets the next caller make it again."""
    import threading

    store = _fft_conv._StepSpectra()
    a = np.ones((3, 4), np.float32)
    gate, calls = threading.Event(), []

    def make():
        calls.append(1)
        gate.wait(10)
        return np.zeros(5)

    results = []
    from tests.threads_util import join, start, wait_until

    threads = [start(lambda: results.append(store.get("t", a, make))) for _ in range(4)]
    wait_until(lambda: len(calls) == 1)
    gate.set()
    join(*threads)
    assert len(calls) == 1 and all(r is results[0] for r in results)
    assert store.get("t", a[:, :2], lambda: np.ones(1))[0] == 1  # another view: another key

    def fail():
        raise ValueError("boom")

    with pytest.raises(ValueError):
        store.get("u", a, fail)
    assert store.get("u", a, lambda: np.full(2, 7.0))[0] == 7.0


_ORACLE_CONV = """
rng = np.random.default_rng(11)
x = tf.constant(rng.standard_normal((8, 16, 16, 32)).astype(np.float32))
w = tf.constant(rng.standard_normal((5, 5, 32, 64)).astype(np.float32) * 0.1)
dy = tf.constant(rng.standard_normal((8, 16, 16, 64)).astype(np.float32))
y = tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME")
y_valid = tf.nn.conv2d(x, w, [1, 1, 1, 1], "VALID", dilations=[1, 2, 1, 1])
dx, dw = tf.gradients(y, [x, w], dy)
with tf.Session() as s:
    vals = s.run({"y": y, "y_valid": y_valid, "dx": dx, "dw": dw})
result = {k: np.asarray(v) for k, v in vals.items()}
"""


@pytest.mark.oracle
def test_transform_path_matches_tensorflow(monkeypatch):
    """The CNN's second layer, its gradients and a dilated VALID variant, computed through
    the transform (the cost model picks it for these shapes; forced here for the batch of
    8) against TensorFlow 2.21's direct convolution, to float32 rounding."""
    from tests import oracle

    monkeypatch.setattr(_fft_conv, "_MIN_FLOPS", 0)
    monkeypatch.setattr(_fft_conv, "_MARGIN", 0.0)
    monkeypatch.setattr(_spread_conv, "MAX_FILTERS", 0)  # (convs with few filters: spread)
    ours, theirs = oracle.run_both(_ORACLE_CONV, tf)
    oracle.assert_results_close(ours, theirs, rtol=1e-4, atol=2e-4)


def test_spectra_store_drops_a_spectrum_once_both_its_kernels_took_it():
    """A spectrum shared by two kinds of kernel is dropped (with its operand) once both
    asked for it; a third asker makes it anew. Without `shared_by` it stays."""
    store = _fft_conv._StepSpectra()
    a = np.ones((3, 4), np.float32)
    made = []

    def make():
        made.append(1)
        return np.zeros(5)

    kinds = ("forward", "filter")
    first = store.get("x*", a, make, "forward", kinds)
    assert store.get("x*", a, make, "forward", kinds) is first  # the same kind again
    assert store.bytes == first.nbytes and len(made) == 1
    assert store.get("x*", a, make, "filter", kinds) is first
    assert not store.entries and store.bytes == 0  # both kinds took it: dropped
    store.get("x*", a, make, "filter", kinds)
    assert len(made) == 2
    kept = store.get("t", a, make)
    assert store.get("t", a, make) is kept and len(store.entries) == 2
