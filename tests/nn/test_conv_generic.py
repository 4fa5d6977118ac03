"""tf.nn.convolution / pool (rank-generic), atrous and transposed convolutions, against
TensorFlow 1's values (one oracle run) and against the specific ops they stand for."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_tf

pytestmark = pytest.mark.timeout(120)

PROGRAM = """
rng = np.random.RandomState(0)
x1 = rng.randn(2, 9, 3).astype(np.float32); w1 = rng.randn(3, 3, 4).astype(np.float32)
x2 = rng.randn(2, 8, 7, 3).astype(np.float32); w2 = rng.randn(3, 3, 3, 4).astype(np.float32)
x3 = rng.randn(1, 5, 6, 4, 2).astype(np.float32); w3 = rng.randn(2, 2, 2, 2, 3).astype(np.float32)
y2 = rng.randn(2, 8, 7, 4).astype(np.float32); y1 = rng.randn(2, 9, 4).astype(np.float32)
outs = [
    tf.nn.convolution(x1, w1, "SAME", strides=[2]),
    tf.nn.convolution(x2, w2, "VALID", dilation_rate=[2, 1]),
    tf.nn.convolution(x3, w3, "SAME", strides=[1, 2, 1]),
    tf.nn.pool(x1, [3], "MAX", "SAME", strides=[2]),
    tf.nn.pool(x2, [2, 3], "AVG", "VALID", strides=[2, 1]),
    tf.nn.pool(x3, [2, 2, 2], "MAX", "SAME", strides=[2, 2, 2]),
    tf.nn.atrous_conv2d(x2, w2, 2, "SAME"),
    tf.nn.atrous_conv2d_transpose(y2, w2, [2, 8, 7, 3], 2, "SAME"),
    tf.nn.conv1d_transpose(y1, w1, [2, 9, 3], 1, "SAME"),
    tf.nn.conv_transpose(y2, w2, [2, 8, 7, 3], [1, 1], "SAME"),
    tf.nn.depthwise_conv2d_backprop_input([2, 8, 7, 3], tf.ones([3, 3, 3, 2]),
                                          tf.ones([2, 8, 7, 6]), [1, 1, 1, 1], "SAME"),
]
with tf.Session() as s:
    result = [v.tolist() for v in s.run(outs)]
"""


def _here():
    scope = {"tf": tf, "np": np}
    with tf.Graph().as_default():
        exec(PROGRAM, scope)  # noqa: S102 - the test's own program
    return scope["result"]


def test_generic_forms_equal_the_specific_ops():
    rng = np.random.RandomState(0)
    x2 = rng.randn(2, 8, 7, 3).astype(np.float32)
    w2 = rng.randn(3, 3, 3, 4).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as s:
        a, b = s.run([tf.nn.convolution(x2, w2, "SAME", strides=[1, 2]),
                      tf.nn.conv2d(x2, w2, [1, 1, 2, 1], "SAME")])
        np.testing.assert_allclose(a, b, rtol=1e-6)
        a, b = s.run([tf.nn.atrous_conv2d(x2, w2, 2, "VALID"),
                      tf.nn.conv2d(x2, w2, [1, 1, 1, 1], "VALID", dilations=[1, 2, 2, 1])])
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert len(_here()) == 11


def test_bad_arguments():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="pooling_type"):
            tf.nn.pool(tf.zeros([1, 4, 4, 1]), [2, 2], "MIN", "SAME")
        with pytest.raises(ValueError, match="rank"):
            tf.nn.convolution(tf.zeros([4, 4]), tf.zeros([2, 2]), "SAME")


@pytest.mark.oracle
def test_against_tensorflow():
    for got, want in zip(_here(), run_tf(PROGRAM), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
