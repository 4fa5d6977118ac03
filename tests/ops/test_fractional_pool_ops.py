"""FractionalMaxPool / FractionalAvgPool and their gradients: against TensorFlow (ratios
dividing the input; seeded random regions, whose sequences equal TF's; TF's own sequences fed
to the gradient ops), against NumPy, and by finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework.op_def_library import apply_op
from tests.oracle import run_tf

pytestmark = pytest.mark.timeout(120)

RNG_X = "np.random.RandomState(5).permutation(2 * 10 * 9 * 3).reshape(2, 10, 9, 3)"

# Ratios that divide the input: the sequences, hence every value, are fixed.
EXACT = f"""
x = tf.constant(({RNG_X} / 7.0).astype(np.float64))
outs = []
for pool in (tf.nn.fractional_max_pool, tf.nn.fractional_avg_pool):
    for overlapping in (False, True):
        y, rows, cols = pool(x, [1.0, 2.0, 3.0, 1.0], overlapping=overlapping)
        outs += [y, rows, cols, tf.gradients(tf.reduce_sum(y * y), x)[0]]
with tf.Session() as s:
    result = [v.tolist() for v in s.run(outs)]
"""

# Random regions: TensorFlow's sequences, its outputs and its gradients for them.
RANDOM = f"""
x = tf.constant(({RNG_X} / 7.0).astype(np.float32))
outs = []
for pool in (tf.nn.fractional_max_pool, tf.nn.fractional_avg_pool):
    for pseudo, overlapping in ((False, False), (True, True), (True, False)):
        y, rows, cols = pool(x, [1.0, 1.44, 1.73, 1.0], pseudo_random=pseudo,
                             overlapping=overlapping, deterministic=True, seed=1, seed2=2)
        outs += [y, rows, cols, tf.gradients(tf.reduce_sum(y * y), x)[0]]
with tf.Session() as s:
    result = [v.tolist() for v in s.run(outs)]
"""


def _run_here(program):
    scope = {"tf": tf, "np": np}
    with tf.Graph().as_default():
        exec(program, scope)  # noqa: S102 - the test's own program
    return scope["result"]


def _np_pool(x, rows, cols, overlapping, reduce):
    out = np.zeros((x.shape[0], len(rows) - 1, len(cols) - 1, x.shape[3]), x.dtype)
    for i in range(len(rows) - 1):
        for j in range(len(cols) - 1):
            r1 = min(rows[i + 1] + (1 if overlapping else 0), x.shape[1])
            c1 = min(cols[j + 1] + (1 if overlapping else 0), x.shape[2])
            out[:, i, j] = reduce(x[:, rows[i]:r1, cols[j]:c1], axis=(1, 2))
    return out


@pytest.mark.oracle
def test_exact_ratios_against_tensorflow():
    for i, (got, want) in enumerate(zip(_run_here(EXACT), run_tf(EXACT), strict=True)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10, err_msg=f"output {i}")


@pytest.mark.oracle
def test_seeded_regions_equal_tensorflows():
    for i, (got, want) in enumerate(zip(_run_here(RANDOM), run_tf(RANDOM), strict=True)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"output {i}")


@pytest.mark.oracle
def test_region_semantics_on_tensorflows_sequences():
    want = run_tf(RANDOM)
    xv = (np.random.RandomState(5).permutation(2 * 10 * 9 * 3).reshape(2, 10, 9, 3)
          / 7.0).astype(np.float32)
    settings = [(np.max, "FractionalMaxPoolGrad"), (np.mean, "FractionalAvgPoolGrad")]
    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.constant(xv)
        k = 0
        for reduce, grad_op in settings:
            for overlapping in (False, True, False):
                y, rows, cols, dx = (np.asarray(v) for v in want[k:k + 4])
                k += 4
                np.testing.assert_allclose(_np_pool(xv, rows, cols, overlapping, reduce), y,
                                           rtol=1e-6)
                dy = tf.constant((2 * y).astype(np.float32))
                if grad_op == "FractionalMaxPoolGrad":
                    got = apply_op(grad_op, orig_input=x,
                                   orig_output=tf.constant(y.astype(np.float32)),
                                   out_backprop=dy, row_pooling_sequence=rows,
                                   col_pooling_sequence=cols, overlapping=overlapping)
                else:
                    got = apply_op(grad_op, orig_input_tensor_shape=np.array(xv.shape),
                                   out_backprop=dy, row_pooling_sequence=rows,
                                   col_pooling_sequence=cols, overlapping=overlapping)
                np.testing.assert_allclose(s.run(got), dx, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("pseudo", [False, True])
@pytest.mark.parametrize("n,ratio", [(10, 1.44), (9, 1.73), (17, 1.3), (25, 2.5), (7, 1.0)])
def test_sequences_tile_the_axis(pseudo, n, ratio):
    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.zeros([1, n, n, 1])
        _, rows, cols = tf.nn.fractional_max_pool(x, [1, ratio, ratio, 1],
                                                  pseudo_random=pseudo)
        for seq in s.run([rows, cols]):
            m = int(np.floor(n / ratio))
            sizes = np.diff(seq)
            assert seq[0] == 0 and seq[-1] == n and len(seq) == m + 1
            assert set(sizes.tolist()) <= {n // m, n // m + 1}


def test_deterministic_sequences_repeat_and_values_match_numpy():
    xv = np.random.RandomState(2).randn(2, 11, 13, 2)
    with tf.Graph().as_default(), tf.Session() as s:
        y, rows, cols = tf.nn.fractional_avg_pool(tf.constant(xv), [1, 1.6, 1.9, 1],
                                                  overlapping=True, deterministic=True,
                                                  seed=4, seed2=9)
        first = s.run([y, rows, cols])
        second = s.run([y, rows, cols])
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(first[0], _np_pool(xv, first[1], first[2], True, np.mean),
                               rtol=1e-12)


@pytest.mark.parametrize("pool", ["max", "avg"])
@pytest.mark.parametrize("overlapping", [False, True])
def test_gradients_by_finite_differences(pool, overlapping):
    xv = np.random.RandomState(3).permutation(1 * 7 * 8 * 2).reshape(1, 7, 8, 2) / 5.0
    fn = tf.nn.fractional_max_pool if pool == "max" else tf.nn.fractional_avg_pool
    with tf.Graph().as_default(), tf.Session():
        x = tf.constant(xv)
        y = fn(x, [1, 1.5, 1.7, 1], overlapping=overlapping, deterministic=True, seed=1)[0]
        err = tf.test.compute_gradient_error(x, list(xv.shape), y, y.shape.as_list(),
                                             x_init_value=xv)
        assert err < 1e-6


def test_shapes_and_errors():
    with tf.Graph().as_default(), tf.Session() as s:
        y, rows, cols = tf.nn.fractional_max_pool(tf.placeholder(tf.float32, [None, 10, None, 3]),
                                                  [1, 1.5, 1.5, 1])
        assert y.shape.as_list() == [None, 6, None, 3] and rows.shape.as_list() == [7]
        with pytest.raises(ValueError, match="smaller than 1"):
            tf.nn.fractional_avg_pool(tf.zeros([1, 4, 4, 1]), [1, 0.5, 1, 1])
        with pytest.raises(ValueError, match="rank 4"):
            tf.nn.fractional_max_pool(tf.zeros([10, 3]), [1, 1.5, 1.5, 1])
        x = tf.zeros([1, 10, 9, 1])
        with pytest.raises(tf.errors.UnimplementedError, match="batch nor channel"):
            s.run(tf.nn.fractional_max_pool(x, [2, 2, 2, 1])[0])
        with pytest.raises(tf.errors.InvalidArgumentError, match="higher than input"):
            s.run(tf.nn.fractional_avg_pool(x, [1, 20, 2, 1])[0])
        with pytest.raises(tf.errors.InvalidArgumentError, match="seed2 should be 0"):
            s.run(tf.nn.fractional_max_pool(x, [1, 1.5, 1.5, 1], seed=3)[0])


def test_tensorflows_sequences():
    # TensorFlow 2.21's sequences for these seeds (recorded from the oracle; the Philox
    # stream's own known answers are in tests/lib/test_philox.py).
    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.zeros([1, 10, 9, 1])
        _, rows, cols = tf.nn.fractional_max_pool(x, [1, 1.5, 2.0, 1], deterministic=True,
                                                  seed=3)
        assert [v.tolist() for v in s.run([rows, cols])] == [[0, 2, 3, 5, 6, 8, 10],
                                                             [0, 2, 4, 7, 9]]
