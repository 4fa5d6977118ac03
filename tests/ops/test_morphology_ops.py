"""Dilation2D, erosion2d and their gradients against TensorFlow (one oracle run) and by
finite differences (inputs without ties, so the max is differentiable there)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_tf

pytestmark = pytest.mark.timeout(60)

PROGRAM = """
rng = np.random.RandomState(0)
x = tf.constant(rng.permutation(2 * 6 * 5 * 3).reshape(2, 6, 5, 3).astype(np.float32) / 9)
f = tf.constant(rng.randn(3, 2, 3).astype(np.float32))
outs = [tf.nn.dilation2d(x, f, [1, 1, 1, 1], [1, 1, 1, 1], "SAME"),
        tf.nn.dilation2d(x, f, [1, 2, 1, 1], [1, 1, 2, 1], "VALID"),
        tf.nn.erosion2d(x, f, [1, 1, 2, 1], [1, 2, 1, 1], "SAME")]
loss = sum(tf.reduce_sum(o * o) for o in outs)
outs += tf.gradients(loss, [x, f])
with tf.Session() as s:
    result = [v.tolist() for v in s.run(outs)]
"""


def _here():
    scope = {"tf": tf, "np": np}
    with tf.Graph().as_default():
        exec(PROGRAM, scope)  # noqa: S102 - the test's own program
    return scope["result"]


def test_gradients_by_finite_differences():
    rng = np.random.RandomState(3)
    xv = rng.permutation(1 * 5 * 4 * 2).reshape(1, 5, 4, 2).astype(np.float64) / 5.0
    fv = rng.permutation(2 * 2 * 2).reshape(2, 2, 2).astype(np.float64) / 11.0
    with tf.Graph().as_default(), tf.Session():
        x, f = tf.constant(xv), tf.constant(fv)
        y = tf.nn.dilation2d(x, f, [1, 1, 1, 1], [1, 1, 1, 1], "SAME")
        err = tf.test.compute_gradient_error([x, f], [list(xv.shape), list(fv.shape)], y,
                                             y.shape.as_list(), x_init_value=[xv, fv])
        assert err < 1e-6


def test_shapes_and_bad_input():
    got = _here()
    assert np.asarray(got[0]).shape == (2, 6, 5, 3)
    assert np.asarray(got[1]).shape == (2, 2, 3, 3)
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="strides"):
            tf.nn.dilation2d(tf.zeros([1, 4, 4, 1]), tf.zeros([2, 2, 1]), [2, 2, 2, 2],
                             [1, 1, 1, 1], "SAME")


@pytest.mark.oracle
def test_against_tensorflow():
    for got, want in zip(_here(), run_tf(PROGRAM), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
