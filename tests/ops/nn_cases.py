"""Shared pieces of the neural-network op tests (tests/ops/test_nn_ops.py, test_conv_ops.py,
test_pooling_ops.py): independent NumPy references (explicit loops for convolution, pooling
and LRN on tiny shapes), input makers, labels, and the conv/pool case builders."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tensorflux as tf
from tests.op_test_util import OpCase, away_from, check_gradient, check_value

F16, BF16 = np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)

# ---- independent NumPy references ---------------------------------------------------------


def _f64(a):
    return np.asarray(a, dtype=np.float64)


def _geometry(size, k, stride, dilation, padding, pair=(0, 0)):
    """(out, pad_before) of one windowed dimension, straight from TF's documented formulas."""
    eff = (k - 1) * dilation + 1
    if padding == "VALID":
        return int(np.ceil((size - eff + 1) / stride)), 0
    if padding == "SAME":
        out = int(np.ceil(size / stride))
        return out, max((out - 1) * stride + eff - size, 0) // 2
    return (size + pair[0] + pair[1] - eff) // stride + 1, pair[0]


def ref_conv(x, w, strides=(1, 1), padding="SAME", dilations=(1, 1), pads=((0, 0), (0, 0))):
    """NHWC convolution by explicit loops (grouped when C is a multiple of w's depth)."""
    xd, wd = _f64(x), _f64(w)
    n, h, wdt, c = x.shape
    kh, kw, ci, f = w.shape
    groups, fg = c // ci, f // (c // ci)
    oh, pt = _geometry(h, kh, strides[0], dilations[0], padding, pads[0])
    ow, pl = _geometry(wdt, kw, strides[1], dilations[1], padding, pads[1])
    out = np.zeros((n, oh, ow, f))
    for i in range(oh):
        for j in range(ow):
            for a in range(kh):
                for b in range(kw):
                    r = i * strides[0] + a * dilations[0] - pt
                    s = j * strides[1] + b * dilations[1] - pl
                    if 0 <= r < h and 0 <= s < wdt:
                        for g in range(groups):
                            out[:, i, j, g * fg:(g + 1) * fg] += \
                                xd[:, r, s, g * ci:(g + 1) * ci] @ wd[a, b, :, g * fg:(g + 1) * fg]
    return out.astype(x.dtype)


def ref_conv_input_grad(shape, w, dy, strides=(1, 1), padding="SAME", dilations=(1, 1),
                        pads=((0, 0), (0, 0))):
    n, h, wdt, c = shape
    kh, kw, _, _ = w.shape
    oh, pt = _geometry(h, kh, strides[0], dilations[0], padding, pads[0])
    ow, pl = _geometry(wdt, kw, strides[1], dilations[1], padding, pads[1])
    dx = np.zeros(shape)
    for i in range(oh):
        for j in range(ow):
            for a in range(kh):
                for b in range(kw):
                    r = i * strides[0] + a * dilations[0] - pt
                    s = j * strides[1] + b * dilations[1] - pl
                    if 0 <= r < h and 0 <= s < wdt:
                        dx[:, r, s, :] += _f64(dy)[:, i, j, :] @ _f64(w)[a, b].T
    return dx.astype(dy.dtype)


def ref_conv_filter_grad(x, kshape, dy, strides=(1, 1), padding="SAME", dilations=(1, 1),
                         pads=((0, 0), (0, 0))):
    n, h, wdt, c = x.shape
    kh, kw = kshape[:2]
    oh, pt = _geometry(h, kh, strides[0], dilations[0], padding, pads[0])
    ow, pl = _geometry(wdt, kw, strides[1], dilations[1], padding, pads[1])
    dw = np.zeros(kshape)
    for i in range(oh):
        for j in range(ow):
            for a in range(kh):
                for b in range(kw):
                    r = i * strides[0] + a * dilations[0] - pt
                    s = j * strides[1] + b * dilations[1] - pl
                    if 0 <= r < h and 0 <= s < wdt:
                        dw[a, b] += _f64(x)[:, r, s, :].T @ _f64(dy)[:, i, j, :]
    return dw.astype(x.dtype)


def _pool_windows(shape, k, s, padding, pads=((0, 0), (0, 0))):
    """Yields (i, j, rows, cols) of each window: the input indices inside the input."""
    _, h, w, _ = shape
    oh, pt = _geometry(h, k[0], s[0], 1, padding, pads[0])
    ow, pl = _geometry(w, k[1], s[1], 1, padding, pads[1])
    for i in range(oh):
        for j in range(ow):
            rows = [r for r in range(i * s[0] - pt, i * s[0] - pt + k[0]) if 0 <= r < h]
            cols = [c for c in range(j * s[1] - pl, j * s[1] - pl + k[1]) if 0 <= c < w]
            yield i, j, rows, cols, (oh, ow)


def ref_pool(x, k, s, padding, kind, pads=((0, 0), (0, 0))):
    out = None
    for i, j, rows, cols, (oh, ow) in _pool_windows(x.shape, k, s, padding, pads):
        if out is None:
            out = np.zeros((x.shape[0], oh, ow, x.shape[3]))
        win = _f64(x)[:, rows][:, :, cols]
        out[:, i, j] = win.max(axis=(1, 2)) if kind == "max" else win.mean(axis=(1, 2))
    return out.astype(x.dtype)


def ref_max_pool_grad(x, g, k, s, padding):
    """Each window's gradient to its first maximum in row-major order."""
    dx = np.zeros(x.shape)
    for i, j, rows, cols, _ in _pool_windows(x.shape, k, s, padding):
        for n in range(x.shape[0]):
            for c in range(x.shape[3]):
                best = None
                for r in rows:
                    for q in cols:
                        if best is None or x[n, r, q, c] > x[n, best[0], best[1], c]:
                            best = (r, q)
                dx[n, best[0], best[1], c] += g[n, i, j, c]
    return dx.astype(g.dtype)


def ref_avg_pool_grad(shape, g, k, s, padding):
    dx = np.zeros(shape)
    for i, j, rows, cols, _ in _pool_windows(shape, k, s, padding):
        share = _f64(g)[:, i, j] / (len(rows) * len(cols))
        for r in rows:
            for q in cols:
                dx[:, r, q] += share
    return dx.astype(g.dtype)


def ref_lrn(x, r, bias, alpha, beta):
    xd = _f64(x)
    out = np.zeros(x.shape)
    depth = x.shape[-1]
    for d in range(depth):
        lo, hi = max(0, d - r), min(depth, d + r + 1)
        out[..., d] = xd[..., d] / (bias + alpha * np.sum(xd[..., lo:hi] ** 2, -1)) ** beta
    return out.astype(x.dtype)


def ref_softmax(x, axis=-1):
    xd = _f64(x)
    e = np.exp(xd - xd.max(axis, keepdims=True))
    return (e / e.sum(axis, keepdims=True)).astype(x.dtype)


def ref_log_softmax(x, axis=-1):
    xd = _f64(x)
    m = xd.max(axis, keepdims=True)
    return (xd - m - np.log(np.exp(xd - m).sum(axis, keepdims=True))).astype(x.dtype)


def ref_xent(logits, labels):
    lp = _f64(ref_log_softmax(_f64(logits)))
    return (-(_f64(labels) * lp).sum(-1)).astype(logits.dtype)


def ref_selu(x):
    scale, alpha = 1.0507009873554805, 1.6732632423543772
    xd = _f64(x)
    return (scale * np.where(xd > 0, xd, alpha * (np.exp(xd) - 1))).astype(x.dtype)


def _to_nchw(fn):
    """A NHWC reference applied to NCHW arrays (4-D inputs transposed in, output back)."""
    def wrapped(*arrays):
        ins = [a.transpose(0, 2, 3, 1) if a.ndim == 4 else a for a in arrays]
        return fn(*ins).transpose(0, 3, 1, 2)
    return wrapped


def _distinct(rng, shape, dtype):
    """A permutation of 0.1-spaced values: no near ties (max pool finite differences)."""
    n = int(np.prod(shape))
    return (rng.permutation(n).reshape(shape) * 0.1 - n * 0.05).astype(dtype)


def _relu6_make(rng, shape, dtype):
    v = rng.uniform(-3, 9, size=shape)
    v = np.where(np.abs(v) < 0.2, 0.3, v)
    return np.where(np.abs(v - 6) < 0.2, 6.3, v).astype(dtype)


def _kinked(rng, shape, dtype):
    return away_from(rng, shape, dtype, 0.0, 0.2)


def _distribution(rng, shape, dtype):
    """Rows summing to 1 (labels of softmax cross entropy, whose backprop assumes it)."""
    v = rng.uniform(0.05, 1, shape)
    return (v / v.sum(-1, keepdims=True)).astype(dtype)


def ref_lrn_grad(g, x):
    """d/dx of sum(g * lrn(x)), differentiated by hand over the same windows."""
    r, bias, alpha, beta = 1, 1.0, 0.5, 0.75
    gd, xd = _f64(g), _f64(x)
    depth = x.shape[-1]
    norm = np.stack([bias + alpha * (xd[..., max(0, d - r):d + r + 1] ** 2).sum(-1)
                     for d in range(depth)], -1)
    dx = np.zeros(x.shape)
    for i in range(depth):  # output i depends on inputs j in its window
        for j in range(max(0, i - r), min(depth, i + r + 1)):
            term = -2 * alpha * beta * xd[..., i] * xd[..., j] * norm[..., i] ** (-beta - 1)
            if i == j:
                term = term + norm[..., i] ** -beta
            dx[..., j] += gd[..., i] * term
    return dx.astype(g.dtype)


LABELS_2x5 = np.array([3, 0])

LABELS_2x3 = np.array([[1, 4, 0], [2, 2, 3]])

SOFT_LABELS = np.array([[0.1, 0.2, 0.3, 0.4, 0.0], [0.5, 0.0, 0.0, 0.25, 0.25]])

def _conv_case(name, xs, ws, strides=(1, 1), padding="SAME", dilations=(1, 1), nchw=False,
               explicit=None, grad=True):
    fmt = "NCHW" if nchw else "NHWC"
    tf_strides = [1, 1, *strides] if nchw else [1, *strides, 1]
    tf_dil = [1, 1, *dilations] if nchw else [1, *dilations, 1]
    pad_arg = padding
    pads = ((0, 0), (0, 0))
    if explicit is not None:
        pads = explicit
        pad_arg = [[0, 0], [0, 0], *map(list, explicit)] if nchw else \
            [[0, 0], *map(list, explicit), [0, 0]]
        padding = "EXPLICIT"
    ref = lambda x, w: ref_conv(x, w, strides, padding, dilations, pads)  # noqa: E731
    if nchw:
        ref = lambda x, w: ref_conv(x.transpose(0, 2, 3, 1), w, strides, padding,  # noqa: E731
                                    dilations, pads).transpose(0, 3, 1, 2)
    return OpCase(name, lambda x, w: tf.nn.conv2d(x, w, tf_strides, pad_arg, data_format=fmt,
                                                  dilations=tf_dil),
                  ref, shapes=[xs, ws], grad=grad)


def _pool_case(name, kind, shape, k, s, padding, nchw=False, grad=True):
    fn = tf.nn.max_pool if kind == "max" else tf.nn.avg_pool
    fmt = "NCHW" if nchw else "NHWC"
    ksize = [1, 1, *k] if nchw else [1, *k, 1]
    strides = [1, 1, *s] if nchw else [1, *s, 1]
    ref = lambda x: ref_pool(x, k, s, padding, kind)  # noqa: E731
    return OpCase(name, lambda x: fn(x, ksize, strides, padding, data_format=fmt),
                  _to_nchw(ref) if nchw else ref, shapes=[shape], grad=grad, make=_distinct)


# Cases also checked in float16 and bfloat16 (by name, over every nn-family table).
LOW_PRECISION_CASES = {"relu", "relu6", "elu", "selu", "softplus", "leaky_relu", "softmax",
                       "log_softmax", "bias_add", "l2_loss", "lrn", "softmax_xent_raw",
                       "sparse_xent_raw", "conv_same", "conv_same_s2", "max_pool_2x2",
                       "avg_pool_same", "max_pool_grad", "avg_pool_grad", "relu_grad",
                       "conv_backprop_input", "conv_backprop_filter"}


F32_ONLY = {"lrn", "lrn_defaults", "lrn_grad"}  # LRN has no float64 kernel in TF

def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def table_tests(cases: list):
    """The table-driven tests of one nn family's `CASES`: values against NumPy (float32 and
    float64, half types for `LOW_PRECISION_CASES`) and finite-difference gradients. A test
    module binds them: `test_value, test_value_low_precision, test_gradient =
    table_tests(CASES)`."""
    by_name = {c.name: c for c in cases}
    assert len(by_name) == len(cases), "case names must be unique"

    @pytest.mark.parametrize("case", cases, ids=lambda c: c.name)
    @pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
    def test_value(case, dtype):
        if case.name in F32_ONLY and dtype == np.float64:
            pytest.skip("float32 only")
        check_value(case, dtype)

    @pytest.mark.parametrize("name", sorted(LOW_PRECISION_CASES & by_name.keys()))
    @pytest.mark.parametrize("dtype", [F16, BF16], ids=["f16", "bf16"])
    def test_value_low_precision(name, dtype):
        check_value(by_name[name], dtype)

    @pytest.mark.parametrize("case", [c for c in cases if c.grad], ids=lambda c: c.name)
    @pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
    def test_gradient(case, dtype):
        if case.name in F32_ONLY and dtype == np.float64:
            pytest.skip("float32 only")
        check_gradient(case, dtype)

    return test_value, test_value_low_precision, test_gradient
