"""tf.vectorized_map: values, structures, static shapes and gradients as TensorFlow's (which
vectorizes; tensorflux loops), against NumPy and the oracle."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_tf

X = np.arange(12.0, dtype=np.float32).reshape(4, 3)
W = np.array([1.0, 2.0, 3.0], np.float32)

PROGRAM = """
x = tf.constant(X)
w = tf.constant(W)
a = tf.vectorized_map(lambda r: tf.reduce_sum(r * w), x)
b = tf.vectorized_map(lambda t: (t[0] * 2.0, t[1] + 1), (x, tf.range(4)))
c = tf.vectorized_map(lambda r: w, x)
d = tf.vectorized_map(lambda e: {"s": tf.reduce_sum(e["p"]), "q": e["p"][:2]}, {"p": x})
grad = tf.gradients(tf.reduce_sum(a) + tf.reduce_sum(d["q"] ** 2), x)[0]
shapes = [a.shape.as_list(), b[0].shape.as_list(), b[1].shape.as_list(), c.shape.as_list(),
          d["q"].shape.as_list()]
with tf.Session() as sess:
    va, vb, vc, vd, vg = sess.run([a, b, c, d, grad])
result = [shapes, va, vb[0], vb[1], vc, vd["s"], vd["q"], vg]
"""


def _ours():
    scope = {"tf": tf, "X": X, "W": W}
    with tf.Graph().as_default():
        exec(PROGRAM, scope)  # noqa: S102 - the program text shared with the oracle
    return scope["result"]


def test_against_numpy():
    shapes, a, b0, b1, c, s, q, g = _ours()
    assert shapes == [[4], [4, 3], [4], [4, 3], [4, 2]]
    np.testing.assert_allclose(a, X @ W)
    np.testing.assert_allclose(b0, X * 2)
    np.testing.assert_array_equal(b1, np.arange(1, 5))
    np.testing.assert_allclose(c, np.tile(W, (4, 1)))
    np.testing.assert_allclose(s, X.sum(1))
    np.testing.assert_allclose(q, X[:, :2])
    want = np.tile(W, (4, 1))
    want[:, :2] += 2 * X[:, :2]
    np.testing.assert_allclose(g, want)


def test_unknown_batch_and_errors():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        y = tf.vectorized_map(lambda r: r * 2.0, x)
        assert y.shape.as_list() == [None, 3]
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run(y, {x: X}), X * 2)
            assert sess.run(y, {x: np.zeros((0, 3), np.float32)}).shape == (0, 3)
        with pytest.raises(ValueError, match="at least 1-D"):
            tf.vectorized_map(lambda r: r, tf.constant(1.0))
        with pytest.raises(TypeError):
            tf.vectorized_map(3, x)


@pytest.mark.oracle
def test_against_tensorflow():
    theirs = run_tf(f"X = np.array({X.tolist()!r}, np.float32)\n"
                    f"W = np.array({W.tolist()!r}, np.float32)\n" + PROGRAM)
    ours = _ours()
    assert ours[0] == theirs[0]
    for a, b in zip(ours[1:], theirs[1:], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)
