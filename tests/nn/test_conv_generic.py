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


DILATED_POOLS = """
rng = np.random.RandomState(0)
x2 = tf.constant(rng.rand(2, 9, 8, 3).astype(np.float32))
x1 = tf.constant(rng.rand(2, 11, 3).astype(np.float32))
x3 = tf.constant(rng.rand(1, 6, 7, 5, 2).astype(np.float32))
ops = []
for kind in ("MAX", "AVG"):
    ops += [tf.nn.pool(x2, [2, 3], kind, "VALID", dilation_rate=[2, 2]),
            tf.nn.pool(x2, [3, 2], kind, "VALID", dilation_rate=[1, 3]),
            tf.nn.pool(x1, [3], kind, "VALID", dilation_rate=[2]),
            tf.nn.pool(x3, [2, 2, 2], kind, "VALID", dilation_rate=[2, 1, 2])]
pooled = tf.nn.pool(x2, [2, 2], "MAX", "VALID", dilation_rate=[2, 2])
ops.append(tf.gradients(tf.reduce_sum(pooled ** 2), x2)[0])
with tf.Session() as s:
    result = [v.tolist() for v in s.run(ops)]
"""


def _dilated_pools():
    ns = {"tf": tf, "np": np}
    with tf.Graph().as_default():
        exec(DILATED_POOLS, ns)  # noqa: S102 - our own program text
    return ns["result"]


def test_dilated_pooling_takes_every_rate_th_input():
    got = _dilated_pools()
    x = np.random.RandomState(0).rand(2, 9, 8, 3).astype(np.float32)
    # MAX over rows {i, i+2} and columns {j, j+2, j+4}
    want = np.max([x[:, i:i + 7, j:j + 4] for i in (0, 2) for j in (0, 2, 4)], axis=0)
    np.testing.assert_array_equal(got[0], want)
    assert np.asarray(got[4]).shape == (2, 7, 4, 3)
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="'SAME' padding is not implemented"):
            tf.nn.pool(tf.zeros([1, 8, 8, 1]), [2, 2], "MAX", "SAME", dilation_rate=[2, 2])
        with pytest.raises(ValueError, match="`strides > 1` not supported"):
            tf.nn.pool(tf.zeros([1, 8, 8, 1]), [2, 2], "AVG", "VALID", dilation_rate=[2, 2],
                       strides=[2, 2])


@pytest.mark.oracle
def test_dilated_pooling_against_tensorflow():
    for got, want in zip(_dilated_pools(), run_tf(DILATED_POOLS), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
