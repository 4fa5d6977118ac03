"""tf.nn.with_space_to_batch: dilated convolution and pooling through SpaceToBatchND,
against TensorFlow (one oracle program) and against tf.nn.convolution's own dilation."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_tf

pytestmark = pytest.mark.timeout(60)

PROGRAM = """
rng = np.random.RandomState(3)
x = tf.constant(rng.randn(2, 7, 8, 3).astype(np.float32))
w = tf.constant(rng.randn(3, 3, 3, 2).astype(np.float32))
conv = lambda v, n, p: tf.nn.conv2d(v, w, [1, 1, 1, 1], p)
pool = lambda v, n, p: tf.nn.max_pool(v, [1, 2, 2, 1], [1, 1, 1, 1], p)
outs = [tf.nn.with_space_to_batch(x, [2, 2], "SAME", conv, filter_shape=[3, 3]),
        tf.nn.with_space_to_batch(x, [2, 3], "VALID", conv),
        tf.nn.with_space_to_batch(x, [3, 2], "SAME", pool, filter_shape=[2, 2]),
        tf.nn.with_space_to_batch(x, [1, 1], "SAME", conv, filter_shape=[3, 3]),
        tf.nn.with_space_to_batch(tf.transpose(x, [0, 3, 1, 2]), [2, 3], "SAME",
                                  lambda v, n, p: v * 2.0 + 1.0, filter_shape=[1, 1],
                                  data_format="NCHW"),
        tf.nn.with_space_to_batch(tf.reshape(x, [2, 7, 2, 4, 3]), [2, 2], "VALID",
                                  lambda v, n, p: v - 1.0, spatial_dims=[1, 3])]
outs.append(tf.gradients(tf.reduce_sum(outs[0] * outs[0]), x)[0])
with tf.Session() as s:
    result = [v.tolist() for v in s.run(outs)]
"""


def _here():
    scope = {"tf": tf, "np": np}
    with tf.Graph().as_default():
        exec(PROGRAM, scope)  # noqa: S102 - the test's own program
    return scope["result"]


@pytest.mark.oracle
def test_against_tensorflow():
    for i, (got, want) in enumerate(zip(_here(), run_tf(PROGRAM), strict=True)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=f"output {i}")


def test_equals_dilated_convolution():
    rng = np.random.RandomState(0)
    xv, wv = rng.randn(1, 9, 6, 2), rng.randn(2, 3, 2, 2)
    with tf.Graph().as_default(), tf.Session() as s:
        x, w = tf.constant(xv), tf.constant(wv)
        for padding in ("SAME", "VALID"):
            got = tf.nn.with_space_to_batch(
                x, [3, 2], padding, lambda v, n, p: tf.nn.conv2d(v, w, [1, 1, 1, 1], p),
                filter_shape=[2, 3])
            want = tf.nn.convolution(x, w, padding, dilation_rate=[3, 2])
            a, b = s.run([got, want])
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


def test_bad_arguments():
    with tf.Graph().as_default():
        x = tf.zeros([1, 4, 4, 1])
        ident = lambda v, n, p: v  # noqa: E731
        with pytest.raises(ValueError, match="filter_shape"):
            tf.nn.with_space_to_batch(x, [2, 2], "SAME", ident)
        with pytest.raises(ValueError, match="padding"):
            tf.nn.with_space_to_batch(x, [2, 2], "FULL", ident)
        with pytest.raises(ValueError, match="rank"):
            tf.nn.with_space_to_batch(x, [[2, 2]], "VALID", ident)
        with pytest.raises(ValueError, match="positive"):
            tf.nn.with_space_to_batch(x, [0, 2], "VALID", ident)
