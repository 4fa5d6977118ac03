"""Pooling ops (tensorflux/ops/pooling_ops.py) and their CPU kernels: max and average pooling
and their gradients against explicit-loop NumPy references, NaN semantics as TensorFlow's,
huge windows, chunked kernels.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework.op_def_library import apply_op
from tests import oracle
from tests.op_test_util import OpCase
from tests.ops.nn_cases import (
    _distinct,
    _pool_case,
    _run,
    ref_avg_pool_grad,
    ref_max_pool_grad,
    ref_pool,
    table_tests,
)

# Each test runs on a fresh default graph (tests/ops/conftest.py).
pytestmark = pytest.mark.usefixtures("fresh_graph")

CASES = [
    # Pools.
    _pool_case("max_pool_2x2", "max", (2, 4, 6, 3), (2, 2), (2, 2), "VALID"),
    _pool_case("max_pool_same_odd", "max", (1, 5, 5, 2), (2, 2), (2, 2), "SAME"),
    _pool_case("max_pool_3x3_s1", "max", (1, 4, 5, 2), (3, 3), (1, 1), "SAME"),
    _pool_case("max_pool_3x3_s2_valid", "max", (1, 7, 6, 2), (3, 3), (2, 2), "VALID"),
    _pool_case("max_pool_nchw", "max", (1, 2, 4, 4), (2, 2), (2, 2), "VALID", nchw=True),
    OpCase("max_pool_explicit",
           lambda x: tf.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1],
                                    [[0, 0], [1, 0], [0, 1], [0, 0]]),
           lambda x: ref_pool(x, (2, 2), (2, 2), "EXPLICIT", "max", ((1, 0), (0, 1))),
           shapes=[(1, 3, 3, 2)], make=_distinct),
    # Windows larger than the input: the kernels read only the taps that reach it.
    _pool_case("max_pool_window_over_input", "max", (1, 4, 5, 2), (9, 300), (1, 2), "SAME"),
    _pool_case("avg_pool_window_over_input", "avg", (1, 4, 5, 2), (300, 7), (2, 1), "SAME"),
    _pool_case("avg_pool_2x2", "avg", (2, 4, 6, 3), (2, 2), (2, 2), "VALID"),
    _pool_case("avg_pool_same", "avg", (1, 5, 5, 2), (3, 3), (2, 2), "SAME"),
    _pool_case("avg_pool_3x3_s1", "avg", (1, 4, 4, 2), (3, 3), (1, 1), "SAME"),
    _pool_case("avg_pool_nchw", "avg", (1, 2, 5, 4), (2, 2), (2, 1), "VALID", nchw=True),
    OpCase("max_pool_grad",
           lambda x, g: apply_op("MaxPoolGrad", orig_input=x, orig_output=tf.nn.max_pool(
               x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME"), grad=g, ksize=[1, 3, 3, 1],
               strides=[1, 2, 2, 1], padding="SAME"),
           lambda x, g: ref_max_pool_grad(x, g, (3, 3), (2, 2), "SAME"),
           shapes=[(1, 5, 4, 2), (1, 3, 2, 2)], grad_inputs=[1], make=_distinct),
    OpCase("avg_pool_grad",
           lambda g: apply_op("AvgPoolGrad", orig_input_shape=[1, 5, 4, 2], grad=g,
                              ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME"),
           lambda g: ref_avg_pool_grad((1, 5, 4, 2), g, (3, 3), (2, 2), "SAME"),
           shapes=[(1, 3, 2, 2)]),
]
test_value, test_value_low_precision, test_gradient = table_tests(CASES)


def test_max_pool_grad_routes_ties_to_first():
    x = np.array([[1, 1, 0, 0], [1, 1, 0, 0], [2, 1, 3, 3], [1, 2, 3, 3]],
                 np.float32).reshape(1, 4, 4, 1)
    xt = tf.constant(x)
    y = tf.nn.max_pool(xt, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    (dx,) = tf.gradients(y, xt, tf.reshape(tf.constant([1.0, 2, 3, 4]), [1, 2, 2, 1]))
    want = np.zeros((4, 4), np.float32)
    want[0, 0], want[0, 2], want[2, 0], want[2, 2] = 1, 2, 3, 4
    np.testing.assert_array_equal(_run(dx).reshape(4, 4), want)
    # TF re-derives the argmax from orig_input: a wrong orig_output does not matter.
    direct = apply_op("MaxPoolGrad", orig_input=xt, orig_output=tf.zeros([1, 2, 2, 1]),
                      grad=tf.ones([1, 2, 2, 1]), ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1],
                      padding="VALID")
    np.testing.assert_array_equal(_run(direct).reshape(4, 4), (want > 0).astype(np.float32))


_NAN_POOL_INPUT = np.array([[np.nan, 1, 0, 0], [2, 1, np.nan, np.nan], [1, 1, 2, 1],
                            [np.nan, 2, 2, 2]], np.float32).reshape(1, 4, 4, 1)
# TensorFlow 2.21's answer (tests/oracle.py) for _NAN_POOL_INPUT and grads 1, 2, 3, 4: the
# argmax scan starts at each window's first element and moves on only to a strictly
# greater one, so a NaN first element keeps the gradient and a later NaN never takes it.
_NAN_POOL_TF = ([2, 0, 2, 2], [[1, 0, 2, 0], [0, 0, 0, 0], [0, 0, 4, 0], [0, 3, 0, 0]])


@pytest.mark.parametrize("native_on", [True, False], ids=["native", "numpy"])
def test_pool_windows_far_larger_than_the_input_take_the_inputs_time(monkeypatch, native_on):
    """A SAME window of 10^6 or 2^31 - 1 taps on a 4 x 5 input is the global pool, computed
    in the input's time (it used to loop over every tap, or allocate the padded input)."""
    from tensorflux.kernels.cpu import native

    if not native_on:
        monkeypatch.setattr(native, "max_pool", lambda *a, **k: None)
        monkeypatch.setattr(native, "max_pool_grad", lambda *a, **k: None)
    x = np.random.default_rng(3).permutation(40).astype(np.float32).reshape(2, 4, 5, 1)
    xt = tf.constant(x)
    fetches = []
    for k in (10**6, 2**31 - 1):
        for fn in (tf.nn.max_pool, tf.nn.avg_pool):
            y = fn(xt, [1, k, k, 1], [1, 1, 1, 1], "SAME")
            fetches += [y, tf.gradients(y, xt)[0]]
    got = _run(fetches)
    glob = {"max": x.max(axis=(1, 2), keepdims=True), "avg": x.mean(axis=(1, 2), keepdims=True)}
    grad = {"max": (x == glob["max"]) * 20.0, "avg": np.ones_like(x)}  # 20 windows each
    for i, kind in enumerate(["max", "avg"] * 2):
        np.testing.assert_allclose(got[2 * i], np.broadcast_to(glob[kind], x.shape), rtol=1e-6)
        np.testing.assert_allclose(got[2 * i + 1], grad[kind], rtol=1e-6)


@pytest.mark.parametrize("fn", [tf.nn.max_pool, tf.nn.avg_pool])
def test_pool_attrs_out_of_int32_range_are_refused_when_built(fn):
    x = tf.zeros([1, 4, 4, 1])
    with pytest.raises(ValueError, match="Attr ksize has value 2147483648 out of range for "
                                         "an int32"):
        fn(x, [1, 2**31, 2**31, 1], [1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match="Attr strides has value 4294967296 out of range"):
        fn(x, [1, 2, 2, 1], [1, 2**32, 1, 1], "SAME")


def test_non_positive_pool_windows_fail_when_run():
    x = tf.zeros([1, 4, 4, 1])
    for y in (tf.nn.avg_pool(x, [1, 0, 2, 1], [1, 1, 1, 1], "SAME"),
              tf.nn.max_pool(x, [1, -1, 2, 1], [1, 1, 1, 1], "SAME")):
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Sliding window ksize must be positive"):
            _run(y)


def _nan_pool_code():
    return """
x = tf.constant(INPUT)
y = tf.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
dx = tf.gradients(y, x, tf.reshape(tf.constant([1.0, 2, 3, 4]), [1, 2, 2, 1]))[0]
with tf.Session() as s:
    a, b = s.run([y, dx])
result = [a.reshape(-1).tolist(), b.reshape(4, 4).tolist()]
"""


@pytest.mark.parametrize("chunked", [False, True])
def test_max_pool_grad_nan_and_inf_follow_tf(monkeypatch, chunked):
    from tensorflux.kernels import intra_op

    if chunked:  # the tiled (tap-major) path in one-image chunks, split over two threads
        monkeypatch.setattr(intra_op, "MIN_ELEMENTS", 0)
        monkeypatch.setattr(intra_op, "CHUNK_ELEMENTS", 1)
        monkeypatch.setattr(intra_op, "workers", lambda ctx=None: 2)
    x = np.concatenate([_NAN_POOL_INPUT] * 3)
    xt = tf.constant(x)
    y = tf.nn.max_pool(xt, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    g = np.tile(np.array([1.0, 2, 3, 4], np.float32).reshape(1, 2, 2, 1), (3, 1, 1, 1))
    g[2] = [[[np.inf], [-np.inf]], [[np.inf], [np.inf]]]  # unrouted: exact zeros, no NaN
    (dx,) = tf.gradients(y, xt, tf.constant(g))
    # The same windows overlapping (3x3, stride 1) take the general path.
    over = apply_op("MaxPoolGrad", orig_input=xt, orig_output=tf.zeros([3, 2, 2, 1]),
                    grad=tf.ones([3, 2, 2, 1]), ksize=[1, 3, 3, 1], strides=[1, 1, 1, 1],
                    padding="VALID")
    got_y, got_dx, got_over = _run([y, dx, over])
    want_y, want_dx = _NAN_POOL_TF
    for i in range(3):
        np.testing.assert_array_equal(got_y[i].reshape(-1), want_y)
    np.testing.assert_array_equal(got_dx[0].reshape(4, 4), want_dx)
    np.testing.assert_array_equal(got_dx[1].reshape(4, 4), want_dx)
    inf_dx = np.array(want_dx, np.float32)
    inf_dx[inf_dx == 2] = -np.inf
    inf_dx[inf_dx > 0] = np.inf
    np.testing.assert_array_equal(got_dx[2].reshape(4, 4), inf_dx)
    ones = np.ones((1, 2, 2, 1), np.float32)
    np.testing.assert_array_equal(got_over[:1],
                                  ref_max_pool_grad(x[:1], ones, (3, 3), (1, 1), "VALID"))


@pytest.mark.oracle
def test_max_pool_grad_nan_oracle():
    if not oracle.available():
        pytest.skip("no TensorFlow oracle venv")
    code = f"INPUT = np.array({_NAN_POOL_INPUT.tolist()!r}, np.float32)\n" + _nan_pool_code()
    theirs = oracle.run_tf(code.replace("nan", "np.nan").replace("np.np.nan", "np.nan"))
    assert theirs[0] == _NAN_POOL_TF[0] and theirs[1] == [list(map(float, r))
                                                          for r in _NAN_POOL_TF[1]]


def test_max_pool_grad_grad():
    x = _distinct(np.random.default_rng(3), (1, 4, 4, 2), np.float32)
    g = np.random.default_rng(4).standard_normal((1, 4, 4, 2)).astype(np.float32)
    y = tf.nn.max_pool(x, 3, 1, "SAME")
    gg = apply_op("MaxPoolGradGrad", orig_input=x, orig_output=y, grad=g, ksize=[1, 3, 3, 1],
                  strides=[1, 1, 1, 1], padding="SAME")
    # out[window] = g at the window's argmax: the linear map transposed to MaxPoolGrad.
    h = np.random.default_rng(5).standard_normal((1, 4, 4, 2)).astype(np.float32)
    mpg = ref_max_pool_grad(x, h, (3, 3), (1, 1), "SAME")
    np.testing.assert_allclose(np.sum(_run(gg) * h), np.sum(mpg * g), rtol=1e-5)


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("shape, k, padding", [
    ((3, 6, 8, 16), (2, 2), "VALID"), ((3, 7, 9, 8), (2, 2), "VALID"),
    ((2, 7, 5, 3), (2, 2), "SAME"), ((2, 9, 6, 8), (3, 3), "VALID"),
    ((2, 4, 6, 8), (1, 3), "VALID"),
])
def test_max_pool_and_grad_in_chunks(monkeypatch, workers, shape, k, padding):
    """Pools run in cache-sized batch chunks, split over threads or not; they agree with
    the loop references (ties included) and with an unchunked run (NaNs included)."""
    from tensorflux.kernels import intra_op

    monkeypatch.setattr(intra_op, "MIN_ELEMENTS", 0)
    monkeypatch.setattr(intra_op, "CHUNK_ELEMENTS", 50)
    monkeypatch.setattr(intra_op, "workers", lambda ctx=None: workers)
    rng = np.random.default_rng(6)
    x = rng.integers(-2, 3, shape).astype(np.float32)  # many ties, zeros among them
    ks = [1, *k, 1]
    y = tf.nn.max_pool(x, ks, ks, padding)
    g = rng.standard_normal(y.shape.as_list()).astype(np.float32)
    grad = apply_op("MaxPoolGrad", orig_input=x, orig_output=y, grad=g, ksize=ks, strides=ks,
                    padding=padding)
    got_y, got_dx = _run([y, grad])
    np.testing.assert_array_equal(got_y, ref_pool(x, k, k, padding, "max"))
    np.testing.assert_array_equal(got_dx, ref_max_pool_grad(x, g, k, k, padding))
    xn = x.copy()
    xn.reshape(-1)[::7] = np.nan
    fetch = [tf.nn.max_pool(xn, ks, ks, padding),
             apply_op("MaxPoolGrad", orig_input=xn, orig_output=y, grad=g, ksize=ks,
                      strides=ks, padding=padding)]
    chunked = _run(fetch)
    monkeypatch.setattr(intra_op, "MIN_ELEMENTS", 1 << 40)
    whole = _run(fetch)
    for a, b in zip(chunked, whole, strict=True):
        np.testing.assert_array_equal(a, b)


# ---- static shapes -----------------------------------------------------------------------


def test_pool_static_shapes():
    x = tf.placeholder(tf.float32, [None, 8, 8, 3])
    got = [str(tf.nn.max_pool(x, [1, 3, 3, 1], s, p).shape)
           for s in ([1, 1, 1, 1], [1, 2, 2, 1], [1, 3, 3, 1]) for p in ("SAME", "VALID")]
    assert got == ["(?, 8, 8, 3)", "(?, 6, 6, 3)", "(?, 4, 4, 3)", "(?, 3, 3, 3)",
                   "(?, 3, 3, 3)", "(?, 2, 2, 3)"]
    assert str(tf.nn.max_pool(x, 2, 2, "VALID").shape) == "(?, 4, 4, 3)"
    assert str(tf.nn.avg_pool(x, [1, 2, 2, 2], [1, 2, 2, 1], "VALID").shape) == "(?, 4, 4, 2)"
