"""QuantizedAvgPool and QuantizedReluX (tf.nn.quantized_avg_pool, tf.nn.quantized_relu_x):
integers against TensorFlow (one oracle program; TF 2.21's CPU build registers no
QuantizedReluX kernel, so that op is checked against NumPy only) and against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests.oracle import run_tf

pytestmark = pytest.mark.timeout(60)

PROGRAM = """
rng = np.random.RandomState(4)
xu = rng.randint(0, 256, (2, 7, 6, 3)).astype(np.uint8)
xs = rng.randint(-128, 128, (1, 5, 5, 2)).astype(np.int8)
outs = []
for ksize, strides, padding in (([1, 3, 3, 1], [1, 2, 2, 1], "SAME"),
                                ([1, 2, 3, 1], [1, 1, 2, 1], "VALID"),
                                ([1, 4, 4, 1], [1, 3, 1, 1], "SAME")):
    outs += list(tf.nn.quantized_avg_pool(tf.constant(xu, tf.quint8), -1.0, 2.0, ksize,
                                          strides, padding))
    outs.append(tf.nn.quantized_avg_pool(tf.constant(xs, tf.qint8), -1.0, 1.0, ksize,
                                         strides, padding)[0])
with tf.Session() as s:
    values = s.run(outs)
result = []
for v in values:
    v = np.asarray(v)
    if v.dtype.names:
        v = v.view(v.dtype[0])
    result.append(v.tolist())
"""


def _here():
    scope = {"tf": tf, "np": np}
    with tf.Graph().as_default():
        exec(PROGRAM, scope)  # noqa: S102 - the test's own program
    return scope["result"]


@pytest.mark.oracle
def test_against_tensorflow():
    # TF's integer average pool rounds on some CPUs and truncates on others (a Zen 3
    # without AVX-512: 27 of 72 means one lower); tensorflux rounds (checked against NumPy
    # below), so the integers agree within one and the ranges exactly.
    for i, (got, want) in enumerate(zip(_here(), run_tf(PROGRAM), strict=True)):
        got, want = np.asarray(got), np.asarray(want)
        assert got.shape == want.shape, f"output {i}"
        if got.dtype.kind == "f":  # an output range
            np.testing.assert_array_equal(got, want, err_msg=f"output {i}")
        else:
            np.testing.assert_allclose(got.astype(np.int64), want.astype(np.int64), rtol=0,
                                       atol=1, err_msg=f"output {i}")


def test_avg_pool_is_the_rounded_mean_of_the_integers():
    x = np.random.RandomState(1).randint(-128, 128, (1, 5, 4, 2)).astype(np.int8)
    with tf.Graph().as_default(), tf.Session() as s:
        out, lo, hi = s.run(list(tf.nn.quantized_avg_pool(tf.constant(x, tf.qint8), -1.0, 1.0,
                                                          [1, 2, 2, 1], [1, 2, 2, 1], "VALID")))
    sums = x[:, :4].astype(np.int64).reshape(1, 2, 2, 2, 2, 2).sum(axis=(2, 4))
    np.testing.assert_array_equal(np.asarray(out).astype(np.int64), np.rint(sums / 4))
    assert (lo, hi) == (-1.0, 1.0)


def test_relu_x_clamps_to_zero_and_max_value():
    x = np.arange(0, 256, 15).astype(np.uint8)
    with tf.Graph().as_default(), tf.Session() as s:
        out, lo, hi = s.run(list(tf.nn.quantized_relu_x(tf.constant(x, tf.quint8), 0.5,
                                                        -1.0, 1.0)))
    # TF's FloatToQuantized: v * 127.5 rounded, minus round(-1 * 127.5) = -128.
    zero, cap = 128, 192  # 0.0 and 0.5 in [-1, 1]
    np.testing.assert_array_equal(np.asarray(out), np.clip(x, zero, cap))
    assert (lo, hi) == (-1.0, 1.0)


def test_errors():
    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.constant(np.zeros((1, 4, 4, 2), np.uint8), tf.quint8)
        with pytest.raises(tf.errors.UnimplementedError, match="Depth window"):
            s.run(tf.nn.quantized_avg_pool(x, 0.0, 1.0, [1, 2, 2, 2], [1, 1, 1, 1],
                                           "VALID")[0])
        with pytest.raises(ValueError):
            tf.nn.quantized_relu_x(x, [1.0, 2.0], 0.0, 1.0)
