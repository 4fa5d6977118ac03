"""MaxPoolWithArgmax and its gradients: TensorFlow 1's values (computed once by TF 2.21;
recomputed by the oracle test), ties to the first maximum, both index forms, and
finite-difference gradient checks."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_tf

pytestmark = pytest.mark.timeout(60)

X = [[[[1., 5.], [3., 5.]], [[3., 0.], [2., 7.]]], [[[9., 1.], [9., 2.]], [[0., 4.], [4., 4.]]]]

PROGRAM = """
x = tf.constant(np.array(X, np.float32))
y, a = tf.nn.max_pool_with_argmax(x, [1, 2, 2, 1], [1, 1, 1, 1], "SAME")
y2, a2 = tf.nn.max_pool_with_argmax(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID",
                                     include_batch_in_index=True)
g = tf.gradients(tf.reduce_sum(y * y), x)[0]
rng = np.random.RandomState(0)
z = tf.constant(rng.randn(2, 7, 6, 3).astype(np.float32))
y3, a3 = tf.nn.max_pool_with_argmax(z, [1, 3, 2, 1], [1, 2, 2, 1], "SAME")
with tf.Session() as s:
    result = [v.tolist() for v in s.run([y, a, a2, g, y3, a3])]
"""


def _here():
    scope = {"tf": tf, "np": np, "X": X}
    with tf.Graph().as_default():
        exec(PROGRAM, scope)  # noqa: S102 - the test's own program
    return scope["result"]


def test_values_ties_and_indices_as_tensorflow():
    y, a, a2, g, _, _ = _here()
    # TF 2.21's answers for X (first maximum of each window wins).
    assert y == [[[[3.0, 7.0], [3.0, 7.0]], [[3.0, 7.0], [2.0, 7.0]]],
                 [[[9.0, 4.0], [9.0, 4.0]], [[4.0, 4.0], [4.0, 4.0]]]]
    assert a == [[[[2, 7], [2, 7]], [[4, 7], [6, 7]]], [[[0, 5], [2, 7]], [[6, 5], [6, 7]]]]
    assert a2 == [[[[2, 7]]], [[[8, 13]]]]
    assert g == [[[[0.0, 0.0], [12.0, 0.0]], [[6.0, 0.0], [4.0, 56.0]]],
                 [[[18.0, 0.0], [18.0, 0.0]], [[0.0, 16.0], [16.0, 16.0]]]]


def test_gradients_by_finite_differences():
    rng = np.random.RandomState(1)
    xv = rng.permutation(2 * 5 * 4 * 2).reshape(2, 5, 4, 2).astype(np.float64) / 7.0
    with tf.Graph().as_default(), tf.Session():
        x = tf.constant(xv)
        y, _ = tf.nn.max_pool_with_argmax(x, [1, 2, 3, 1], [1, 2, 1, 1], "SAME")
        err = tf.test.compute_gradient_error(x, xv.shape, y, y.shape.as_list(), x_init_value=xv)
        assert err < 1e-6
        # second order: the gradient of MaxPoolGradWithArgmax in its `grad` input
        gy = tf.constant(rng.randn(*y.shape.as_list()))
        gx = tf.gradients(y, x, grad_ys=gy)[0]
        err2 = tf.test.compute_gradient_error(gy, gy.shape.as_list(), gx, list(xv.shape))
        assert err2 < 1e-6


def test_bad_input():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="NHWC"):
            tf.nn.max_pool_with_argmax(tf.zeros([1, 4, 4, 1]), 2, 2, "SAME", data_format="NCHW")


@pytest.mark.oracle
def test_against_tensorflow():
    want = run_tf(PROGRAM.replace("X", repr(X)))
    for got, w in zip(_here(), want, strict=True):
        np.testing.assert_allclose(np.asarray(got), np.asarray(w), rtol=1e-6)
