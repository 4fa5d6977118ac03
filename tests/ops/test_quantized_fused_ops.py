"""The fused eight-bit ops (QuantizedConv2DWithBias[AndRelu]AndRequantize,
QuantizedMatMulWithBias[AndRelu]AndRequantize): equal to the bit to the unfused steps they
stand for -- QuantizedConv2D / QuantizedMatMul, the bias added to the qint32 sum in NumPy,
Requantize, QuantizedRelu -- on every product path of the C extension this CPU runs and on
the NumPy path. No timing here."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tensorflux.kernels.cpu import _qnative
from tensorflux.kernels.cpu._qmath import _float_to_quantized
from tensorflux.ops import quantization_ops as qo
from tensorflux.ops import quantized_fused_ops as fo

pytestmark = pytest.mark.timeout(60)


def _paths():
    """(name, forced default path) of every way the kernels run here: NumPy, then each C
    product path this CPU has."""
    ways = [("numpy", None)]
    best = _qnative.best_path()
    if best is not None:
        ways += [(p, v) for p, v in _qnative.PATHS.items() if v <= _qnative.PATHS[best]]
    return ways


def _run(build):
    with tf.Graph().as_default(), tf.Session() as sess:
        return sess.run(build())


def _unfused(acc, acc_lo, acc_hi, bias, bias_t, out_lo, out_hi, relu):
    """The unfused steps after the product: + bias (wrapping int32), Requantize, Relu."""
    if bias_t == tf.qint32:
        bias_q = bias.astype(np.int32)
    else:
        bias_q = np.array([_float_to_quantized(float(v), acc_lo, acc_hi, np.int32)
                           for v in bias], np.int32)
    with np.errstate(over="ignore"):
        summed = (acc.astype(np.int32) + bias_q).astype(np.int32)

    def build():
        out = qo.requantize(tf.constant(summed, tf.qint32), acc_lo, acc_hi, out_lo, out_hi,
                            tf.quint8)
        return qo.quantized_relu(*out) if relu else out

    return _run(build)


def _bias(rng, n, bias_t):
    if bias_t == tf.qint32:
        return rng.integers(-40000, 40000, n).astype(np.int32)
    return rng.normal(0, 2.0, n).astype(np.float32)


# (batch, h, w, c, kh, kw, f, stride, padding, input range, filter range, output range)
CONV_CASES = [
    (3, 8, 8, 1, 3, 3, 16, 1, "SAME", (0.0, 1.2), (-0.9, 0.7), (0.0, 6.0)),
    (2, 8, 8, 16, 3, 3, 32, 2, "SAME", (0.0, 4.0), (-0.3, 0.5), (-2.0, 9.0)),
    (2, 7, 5, 3, 2, 3, 5, 1, "VALID", (-1.0, 2.0), (-0.5, 0.7), (-3.0, 3.0)),
    (70, 6, 6, 2, 3, 3, 7, 1, "SAME", (0.0, 1.0), (-1.0, 1.0), (0.0, 4.0)),  # many chunks
    (1, 9, 9, 4, 1, 1, 3, 3, "VALID", (-0.2, 0.9), (0.0, 0.4), (0.0, 1.0)),
]


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("relu", [True, False])
@pytest.mark.parametrize("bias_t", [tf.float32, tf.qint32])
def test_fused_conv2d_equals_the_unfused_ops(monkeypatch, case, relu, bias_t):
    n, h, w, c, kh, kw, f, s, padding, rx, rw, ro = case
    rng = np.random.default_rng(n * h + f)
    x = rng.integers(0, 256, (n, h, w, c)).astype(np.uint8)
    wt = rng.integers(0, 256, (kh, kw, c, f)).astype(np.uint8)
    bias = _bias(rng, f, bias_t)
    strides = [1, s, s, 1]

    def product():
        return qo.quantized_conv2d(tf.constant(x, tf.quint8), tf.constant(wt, tf.quint8),
                                   *rx, *rw, strides, padding)

    acc, acc_lo, acc_hi = _run(product)
    want = _unfused(acc, acc_lo, acc_hi, bias, bias_t, *ro, relu)
    _check_every_path(monkeypatch, want, ro, lambda: fo.quantized_conv2d_with_bias_and_requantize(
        tf.constant(x, tf.quint8), tf.constant(wt, tf.quint8), tf.constant(bias, bias_t),
        *rx, *rw, *ro, strides, padding, relu=relu))


def _check_every_path(monkeypatch, want, out_range, fused):
    """The fused op (`fused()` builds it) on the NumPy path and every C product path gives
    `want`'s quint8 values, shape and the requested output range."""
    for name, way in _paths():
        with monkeypatch.context() as m:
            if way is None:
                m.setattr(_qnative, "_mod", None)
            else:
                m.setattr(_qnative, "_DEFAULT_PATH", way)
            got = _run(fused)
        assert got[0].dtype == np.uint8 and got[0].shape == want[0].shape, name
        np.testing.assert_array_equal(got[0], want[0], err_msg=name)
        assert (got[1], got[2]) == (np.float32(out_range[0]), np.float32(out_range[1]))


# (m, k, n, transpose_b, a range, b range, output range)
MATMUL_CASES = [
    (1024, 512, 64, False, (0.0, 3.0), (-0.2, 0.3), (0.0, 8.0)),
    (33, 50, 7, True, (-1.0, 2.0), (-0.5, 0.7), (-4.0, 5.0)),
    (5, 3, 1, False, (0.0, 1.0), (0.0, 1.0), (-1.0, 1.0)),
]


@pytest.mark.parametrize("case", MATMUL_CASES)
@pytest.mark.parametrize("relu", [True, False])
@pytest.mark.parametrize("bias_t", [tf.float32, tf.qint32])
def test_fused_matmul_equals_the_unfused_ops(monkeypatch, case, relu, bias_t):
    m_, k, n, tb, ra, rb, ro = case
    rng = np.random.default_rng(m_ + k)
    a = rng.integers(0, 256, (m_, k)).astype(np.uint8)
    b = rng.integers(0, 256, (n, k) if tb else (k, n)).astype(np.uint8)
    bias = _bias(rng, n, bias_t)

    def product():
        return qo.quantized_mat_mul(tf.constant(a, tf.quint8), tf.constant(b, tf.quint8),
                                    *ra, *rb, transpose_b=tb)

    acc, acc_lo, acc_hi = _run(product)
    want = _unfused(acc, acc_lo, acc_hi, bias, bias_t, *ro, relu)
    _check_every_path(monkeypatch, want, ro, lambda: fo.quantized_mat_mul_with_bias_and_requantize(
        tf.constant(a, tf.quint8), tf.constant(b, tf.quint8), tf.constant(bias, bias_t),
        *ra, *rb, *ro, relu=relu, transpose_b=tb))


@pytest.mark.parametrize("build,error", [
    # a bias of the wrong length
    (lambda: fo.quantized_conv2d_with_bias_and_requantize(
        tf.constant(np.zeros((1, 4, 4, 2), np.uint8), tf.quint8),
        tf.constant(np.zeros((3, 3, 2, 3), np.uint8), tf.quint8),
        tf.placeholder_with_default(np.zeros(4, np.float32), [None]), 0.0, 1.0, -1.0, 1.0,
        0.0, 1.0, [1, 1, 1, 1], "SAME"), tf.errors.InvalidArgumentError),
    # an output type without a kernel
    (lambda: fo.quantized_mat_mul_with_bias_and_requantize(
        tf.constant(np.zeros((2, 2), np.uint8), tf.quint8),
        tf.constant(np.zeros((2, 2), np.uint8), tf.quint8), tf.constant([0.0, 0.0]),
        0.0, 1.0, 0.0, 1.0, 0.0, 1.0, Toutput=tf.qint8), tf.errors.UnimplementedError),
])
def test_fused_ops_refuse_what_they_cannot_compute(build, error):
    with pytest.raises(error):
        _run(build)
