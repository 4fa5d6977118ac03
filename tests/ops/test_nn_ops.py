"""Tests of the neural-network ops (tensorflux/ops/nn_ops.py, nn_impl.py) and their CPU
kernels: one record per op configuration against an independent NumPy reference (explicit
loops for convolution, pooling and LRN on tiny shapes), finite-difference gradients in
float32 and float64, static shape inference, TF's errors, and an oracle comparison with
TensorFlow on the same inputs.
"""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest

import tensorflux as tf
from tensorflux.framework.op_def_library import apply_op
from tests import oracle
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


def ref_conv_filter_grad(x, kshape, dy, strides=(1, 1), padding="SAME", dilations=(1, 1)):
    n, h, wdt, c = x.shape
    kh, kw = kshape[:2]
    oh, pt = _geometry(h, kh, strides[0], dilations[0], padding)
    ow, pl = _geometry(wdt, kw, strides[1], dilations[1], padding)
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


# ---- the table ---------------------------------------------------------------------------

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


CASES = [
    OpCase("relu", tf.nn.relu, lambda x: np.maximum(x, 0), shapes=[(3, 4)], make=_kinked),
    OpCase("relu6", tf.nn.relu6, lambda x: np.clip(x, 0, 6), shapes=[(3, 4)],
           make=_relu6_make),
    OpCase("elu", tf.nn.elu, lambda x: np.where(x > 0, x, np.expm1(_f64(x))).astype(x.dtype),
           shapes=[(3, 4)], make=_kinked),
    OpCase("selu", tf.nn.selu, ref_selu, shapes=[(3, 4)], make=_kinked),
    OpCase("softplus", tf.nn.softplus,
           lambda x: np.log1p(np.exp(_f64(x))).astype(x.dtype), shapes=[(3, 4)]),
    OpCase("softplus_large", lambda x: tf.nn.softplus(x * 20.0),
           lambda x: np.logaddexp(0, _f64(x) * 20).astype(x.dtype), shapes=[(3, 4)],
           grad=False),
    OpCase("leaky_relu", tf.nn.leaky_relu, lambda x: np.where(x > 0, x, 0.2 * _f64(x))
           .astype(x.dtype), shapes=[(3, 4)], make=_kinked),
    OpCase("leaky_relu_0.3", lambda x: tf.nn.leaky_relu(x, alpha=0.3),
           lambda x: np.where(x > 0, x, 0.3 * _f64(x)).astype(x.dtype), shapes=[(3, 4)],
           make=_kinked),
    OpCase("softmax", tf.nn.softmax, ref_softmax, shapes=[(3, 5)]),
    OpCase("softmax_rank3", tf.nn.softmax, ref_softmax, shapes=[(2, 3, 4)]),
    OpCase("softmax_axis0", lambda x: tf.nn.softmax(x, axis=0),
           lambda x: ref_softmax(x, 0), shapes=[(3, 4)], unknown_shapes=False),
    OpCase("softmax_dim1", lambda x: tf.nn.softmax(x, dim=1),
           lambda x: ref_softmax(x, 1), shapes=[(2, 3, 4)], unknown_shapes=False),
    OpCase("log_softmax", tf.nn.log_softmax, ref_log_softmax, shapes=[(3, 5)]),
    OpCase("log_softmax_axis0", lambda x: tf.nn.log_softmax(x, axis=0),
           lambda x: ref_log_softmax(x, 0), shapes=[(3, 4)], unknown_shapes=False),
    OpCase("bias_add", tf.nn.bias_add, lambda x, b: (x + b).astype(x.dtype),
           shapes=[(2, 3, 4), (4,)]),
    OpCase("bias_add_nchw", lambda x, b: tf.nn.bias_add(x, b, data_format="NCHW"),
           lambda x, b: (x + b.reshape(3, 1, 1)).astype(x.dtype), shapes=[(2, 3, 2, 2), (3,)]),
    OpCase("bias_add_grad", lambda g: apply_op("BiasAddGrad", out_backprop=g),
           lambda g: _f64(g).sum(axis=(0, 1)).astype(g.dtype), shapes=[(2, 3, 4)]),
    OpCase("bias_add_grad_nchw",
           lambda g: apply_op("BiasAddGrad", out_backprop=g, data_format="NCHW"),
           lambda g: _f64(g).sum(axis=(0, 2, 3)).astype(g.dtype), shapes=[(2, 3, 2, 2)]),
    OpCase("l2_loss", tf.nn.l2_loss, lambda x: np.asarray((_f64(x) ** 2).sum() / 2, x.dtype),
           shapes=[(3, 4)]),
    OpCase("lrn", lambda x: tf.nn.lrn(x, 2, 1.5, 0.3, 0.75),
           lambda x: ref_lrn(x, 2, 1.5, 0.3, 0.75), shapes=[(2, 2, 3, 7)]),
    OpCase("lrn_defaults", tf.nn.local_response_normalization,
           lambda x: ref_lrn(x, 5, 1.0, 1.0, 0.5), shapes=[(1, 2, 2, 12)]),
    OpCase("softmax_xent_v2",
           lambda l, x: tf.nn.softmax_cross_entropy_with_logits_v2(labels=l, logits=x),
           lambda l, x: ref_xent(x, l), shapes=[(2, 5), (2, 5)], make=_distribution),
    OpCase("softmax_xent_tf1",
           lambda x: tf.nn.softmax_cross_entropy_with_logits(labels=SOFT_LABELS, logits=x),
           lambda x: ref_xent(x, SOFT_LABELS), shapes=[(2, 5)]),
    OpCase("softmax_xent_axis0",
           lambda x: tf.nn.softmax_cross_entropy_with_logits_v2(labels=SOFT_LABELS.T, logits=x,
                                                                axis=0),
           lambda x: ref_xent(x.T, SOFT_LABELS), shapes=[(5, 2)], unknown_shapes=False),
    OpCase("softmax_xent_rank3",
           lambda x: tf.nn.softmax_cross_entropy_with_logits_v2(
               labels=np.stack([SOFT_LABELS] * 3), logits=x),
           lambda x: ref_xent(x, np.stack([SOFT_LABELS] * 3)), shapes=[(3, 2, 5)]),
    OpCase("softmax_xent_raw",  # both outputs: exercises the second-order term
           lambda x, l: list(apply_op("SoftmaxCrossEntropyWithLogits", features=x, labels=l)),
           lambda x, l: [ref_xent(x, l), (_f64(ref_softmax(x)) - l).astype(x.dtype)],
           shapes=[(2, 5), (2, 5)], make=_distribution,
           grad_inputs=[0]),  # TF's labels gradient ignores the backprop output
    OpCase("sparse_xent",
           lambda x: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=LABELS_2x5,
                                                                    logits=x),
           lambda x: ref_xent(x, np.eye(5)[LABELS_2x5]), shapes=[(2, 5)]),
    OpCase("sparse_xent_int32_rank3",
           lambda x: tf.nn.sparse_softmax_cross_entropy_with_logits(
               labels=LABELS_2x3.astype(np.int32), logits=x),
           lambda x: ref_xent(x, np.eye(5)[LABELS_2x3]), shapes=[(2, 3, 5)]),
    OpCase("sparse_xent_raw",
           lambda x: list(apply_op("SparseSoftmaxCrossEntropyWithLogits", features=x,
                                   labels=LABELS_2x5)),
           lambda x: [ref_xent(x, np.eye(5)[LABELS_2x5]),
                      (_f64(ref_softmax(x)) - np.eye(5)[LABELS_2x5]).astype(x.dtype)],
           shapes=[(2, 5)]),
    # Conv2D: padding, strides, dilations, formats, explicit padding, groups.
    _conv_case("conv_same", (2, 5, 5, 3), (3, 3, 3, 2)),
    _conv_case("conv_valid", (2, 5, 6, 3), (3, 2, 3, 2), padding="VALID"),
    _conv_case("conv_same_s2", (1, 5, 6, 2), (3, 3, 2, 2), strides=(2, 2)),
    _conv_case("conv_valid_s23", (1, 7, 8, 2), (2, 3, 2, 3), strides=(2, 3), padding="VALID"),
    _conv_case("conv_dilated", (1, 6, 6, 2), (2, 2, 2, 2), dilations=(2, 2)),
    _conv_case("conv_dilated_valid", (1, 6, 7, 2), (2, 3, 2, 2), dilations=(2, 1),
               padding="VALID"),
    _conv_case("conv_nchw", (2, 3, 4, 5), (3, 3, 3, 2), nchw=True),
    _conv_case("conv_explicit", (1, 4, 5, 2), (3, 3, 2, 2), explicit=((1, 2), (0, 1))),
    _conv_case("conv_1x1", (2, 3, 3, 4), (1, 1, 4, 3)),
    _conv_case("conv_grouped", (1, 4, 4, 4), (2, 2, 2, 4), padding="VALID"),
    _conv_case("conv_big_batch", (40, 4, 4, 2), (3, 3, 2, 2), grad=False),
    OpCase("conv_backprop_input",
           lambda w, dy: tf.nn.conv2d_backprop_input([2, 5, 6, 3], w, dy, [1, 2, 2, 1],
                                                     "SAME"),
           lambda w, dy: ref_conv_input_grad((2, 5, 6, 3), w, dy, (2, 2), "SAME"),
           shapes=[(3, 3, 3, 2), (2, 3, 3, 2)]),
    OpCase("conv_backprop_input_dilated",
           lambda w, dy: tf.nn.conv2d_backprop_input([1, 5, 5, 2], w, dy, [1, 1, 1, 1],
                                                     "VALID", dilations=[1, 2, 2, 1]),
           lambda w, dy: ref_conv_input_grad((1, 5, 5, 2), w, dy, (1, 1), "VALID", (2, 2)),
           shapes=[(2, 2, 2, 3), (1, 3, 3, 3)]),
    OpCase("conv_transpose",
           lambda x, w: tf.nn.conv2d_transpose(x, w, [1, 4, 4, 2], [1, 2, 2, 1]),
           lambda x, w: ref_conv_input_grad((1, 4, 4, 2), w, x, (2, 2), "SAME"),
           shapes=[(1, 2, 2, 3), (3, 3, 2, 3)]),
    OpCase("conv_backprop_filter",
           lambda x, dy: tf.nn.conv2d_backprop_filter(x, [3, 2, 3, 2], dy, [1, 1, 1, 1],
                                                      "VALID"),
           lambda x, dy: ref_conv_filter_grad(x, (3, 2, 3, 2), dy, (1, 1), "VALID"),
           shapes=[(2, 4, 4, 3), (2, 2, 3, 2)]),
    OpCase("conv_backprop_filter_s2",
           lambda x, dy: tf.nn.conv2d_backprop_filter(x, [3, 3, 2, 2], dy, [1, 2, 2, 1],
                                                      "SAME"),
           lambda x, dy: ref_conv_filter_grad(x, (3, 3, 2, 2), dy, (2, 2), "SAME"),
           shapes=[(1, 5, 5, 2), (1, 3, 3, 2)]),
    # Pools.
    _pool_case("max_pool_2x2", "max", (2, 4, 6, 3), (2, 2), (2, 2), "VALID"),
    _pool_case("max_pool_same_odd", "max", (1, 5, 5, 2), (2, 2), (2, 2), "SAME"),
    _pool_case("max_pool_3x3_s1", "max", (1, 4, 5, 2), (3, 3), (1, 1), "SAME"),
    _pool_case("max_pool_3x3_s2_valid", "max", (1, 7, 6, 2), (3, 3), (2, 2), "VALID"),
    _pool_case("max_pool_nchw", "max", (1, 2, 4, 4), (2, 2), (2, 2), "VALID", nchw=True),
    OpCase("max_pool_explicit",
           lambda x: tf.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1],
                                    [[0, 0], [1, 0], [0, 1], [0, 0]]),
           lambda x: ref_pool(x, (2, 2), (2, 2), "EXPLICIT", "max", ((1, 0), (0, 1))),
           shapes=[(1, 3, 3, 2)], make=_distinct),
    # Windows larger than the input: the kernels read only the taps that reach it.
    _pool_case("max_pool_window_over_input", "max", (1, 4, 5, 2), (9, 300), (1, 2), "SAME"),
    _pool_case("avg_pool_window_over_input", "avg", (1, 4, 5, 2), (300, 7), (2, 1), "SAME"),
    _pool_case("avg_pool_2x2", "avg", (2, 4, 6, 3), (2, 2), (2, 2), "VALID"),
    _pool_case("avg_pool_same", "avg", (1, 5, 5, 2), (3, 3), (2, 2), "SAME"),
    _pool_case("avg_pool_3x3_s1", "avg", (1, 4, 4, 2), (3, 3), (1, 1), "SAME"),
    _pool_case("avg_pool_nchw", "avg", (1, 2, 5, 4), (2, 2), (2, 1), "VALID", nchw=True),
    OpCase("max_pool_grad",
           lambda x, g: apply_op("MaxPoolGrad", orig_input=x, orig_output=tf.nn.max_pool(
               x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME"), grad=g, ksize=[1, 3, 3, 1],
               strides=[1, 2, 2, 1], padding="SAME"),
           lambda x, g: ref_max_pool_grad(x, g, (3, 3), (2, 2), "SAME"),
           shapes=[(1, 5, 4, 2), (1, 3, 2, 2)], grad_inputs=[1], make=_distinct),
    OpCase("avg_pool_grad",
           lambda g: apply_op("AvgPoolGrad", orig_input_shape=[1, 5, 4, 2], grad=g,
                              ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME"),
           lambda g: ref_avg_pool_grad((1, 5, 4, 2), g, (3, 3), (2, 2), "SAME"),
           shapes=[(1, 3, 2, 2)]),
    # Backward ops as ops (their own gradients are the second-order rules).
    OpCase("relu_grad", lambda g, x: apply_op("ReluGrad", gradients=g, features=x),
           lambda g, x: (g * (x > 0)).astype(g.dtype), shapes=[(3, 4), (3, 4)], make=_kinked),
    OpCase("relu6_grad", lambda g, x: apply_op("Relu6Grad", gradients=g, features=x),
           lambda g, x: (g * ((x > 0) & (x < 6))).astype(g.dtype), shapes=[(3, 4), (3, 4)],
           make=_relu6_make),
    OpCase("leaky_relu_grad",
           lambda g, x: apply_op("LeakyReluGrad", gradients=g, features=x, alpha=0.1),
           lambda g, x: np.where(x > 0, g, _f64(g) * 0.1).astype(g.dtype),
           shapes=[(3, 4), (3, 4)], make=_kinked),
    OpCase("elu_grad", lambda g, y: apply_op("EluGrad", gradients=g, outputs=y),
           lambda g, y: np.where(y < 0, _f64(g) * (_f64(y) + 1), g).astype(g.dtype),
           shapes=[(3, 4), (3, 4)], make=_kinked),
    OpCase("selu_grad", lambda g, y: apply_op("SeluGrad", gradients=g, outputs=y),
           lambda g, y: np.where(y < 0, _f64(g) * (_f64(y) + 1.0507009873554805 *
                                                   1.6732632423543772),
                                 _f64(g) * 1.0507009873554805).astype(g.dtype),
           shapes=[(3, 4), (3, 4)], make=_kinked),
    OpCase("softplus_grad", lambda g, x: apply_op("SoftplusGrad", gradients=g, features=x),
           lambda g, x: (_f64(g) / (1 + np.exp(-_f64(x)))).astype(g.dtype),
           shapes=[(3, 4), (3, 4)]),
    OpCase("lrn_grad",
           lambda g, x: apply_op("LRNGrad", input_grads=g, input_image=x,
                                 output_image=tf.nn.lrn(x, 1, 1.0, 0.5, 0.75), depth_radius=1,
                                 bias=1.0, alpha=0.5, beta=0.75),
           ref_lrn_grad, shapes=[(1, 2, 2, 4), (1, 2, 2, 4)], grad=False),
    # Compositions (tensorflux/nn/nn_impl.py).
    OpCase("sigmoid_xent",
           lambda z, x: tf.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x),
           lambda z, x: (np.maximum(x, 0) - _f64(x) * z + np.log1p(np.exp(-np.abs(_f64(x)))))
           .astype(x.dtype), shapes=[(3, 4), (3, 4)],
           make=lambda rng, s, d: away_from(rng, s, d, 0.0, 0.1) * 3),
    OpCase("weighted_xent",
           lambda z, x: tf.nn.weighted_cross_entropy_with_logits(z, x, 2.0),
           lambda z, x: ((1 - _f64(z)) * x + (1 + _f64(z)) * np.log1p(np.exp(-_f64(x))))
           .astype(x.dtype), shapes=[(3, 4), (3, 4)]),
    OpCase("l2_normalize", lambda x: tf.nn.l2_normalize(x, 1),
           lambda x: (_f64(x) / np.linalg.norm(_f64(x), axis=1, keepdims=True))
           .astype(x.dtype), shapes=[(3, 4)]),
    OpCase("moments", lambda x: list(tf.nn.moments(x, [0, 1])),
           lambda x: [_f64(x).mean((0, 1)).astype(x.dtype), _f64(x).var((0, 1)).astype(x.dtype)],
           shapes=[(3, 2, 4)]),
    OpCase("xw_plus_b", tf.nn.xw_plus_b,
           lambda x, w, b: (_f64(x) @ w + b).astype(x.dtype), shapes=[(3, 4), (4, 5), (5,)]),
    OpCase("batch_normalization",
           lambda x, m, v, o, s: tf.nn.batch_normalization(x, m, v, o, s, 1e-3),
           lambda x, m, v, o, s: ((_f64(x) - m) * s / np.sqrt(_f64(v) + 1e-3) + o)
           .astype(x.dtype), shapes=[(3, 4), (4,), (4,), (4,), (4,)],
           make=lambda rng, s, d: rng.uniform(0.5, 2.0, s).astype(d)),
]

LOW_PRECISION_CASES = {"relu", "relu6", "elu", "selu", "softplus", "leaky_relu", "softmax",
                       "log_softmax", "bias_add", "l2_loss", "lrn", "softmax_xent_raw",
                       "sparse_xent_raw", "conv_same", "conv_same_s2", "max_pool_2x2",
                       "avg_pool_same", "max_pool_grad", "avg_pool_grad", "relu_grad",
                       "conv_backprop_input", "conv_backprop_filter"}
_BY_NAME = {c.name: c for c in CASES}


F32_ONLY = {"lrn", "lrn_defaults", "lrn_grad"}  # LRN has no float64 kernel in TF


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_value(case, dtype):
    if case.name in F32_ONLY and dtype == np.float64:
        pytest.skip("float32 only")
    check_value(case, dtype)


@pytest.mark.parametrize("name", sorted(LOW_PRECISION_CASES))
@pytest.mark.parametrize("dtype", [F16, BF16], ids=["f16", "bf16"])
def test_value_low_precision(name, dtype):
    check_value(_BY_NAME[name], dtype)


GRAD_CASES = [c for c in CASES if c.grad]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_gradient(case, dtype):
    if case.name in F32_ONLY and dtype == np.float64:
        pytest.skip("float32 only")
    check_gradient(case, dtype)


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


@pytest.fixture(autouse=True)
def _fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


# ---- integer and special values ----------------------------------------------------------


def test_integer_activations_and_conv():
    x = np.array([[-3, 0, 2, 9]], np.int32)
    assert _run(tf.nn.relu(x)).dtype == np.int32
    np.testing.assert_array_equal(_run(tf.nn.relu(x)), [[0, 0, 2, 9]])
    np.testing.assert_array_equal(_run(tf.nn.relu6(x.astype(np.int64))), [[0, 0, 2, 6]])
    c = tf.nn.conv2d(np.ones((1, 3, 3, 1), np.int32), np.ones((2, 2, 1, 1), np.int32),
                     [1, 1, 1, 1], "VALID")
    out = _run(c)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out.reshape(2, 2), [[4, 4], [4, 4]])
    m = _run(tf.nn.max_pool(np.arange(16, dtype=np.int64).reshape(1, 4, 4, 1), 2, 2, "VALID"))
    np.testing.assert_array_equal(m.reshape(2, 2), [[5, 7], [13, 15]])
    assert tf.nn.leaky_relu(tf.constant([1, -2])).dtype == tf.float32


def test_nan_semantics():
    nan = np.nan
    r = _run([tf.nn.relu([nan, -1.0, 2.0]), tf.nn.relu6([nan, 7.0]), tf.nn.elu([nan]),
              tf.nn.leaky_relu([nan, -1.0])])
    np.testing.assert_array_equal(r[0], [nan, 0, 2])
    np.testing.assert_array_equal(r[1], [nan, 6])
    assert np.isnan(r[2][0])
    np.testing.assert_allclose(r[3], [nan, -0.2])
    # MaxPool ignores NaN, as TF's comparisons do.
    x = np.array([1, nan, 2, 3], np.float32).reshape(1, 2, 2, 1)
    assert _run(tf.nn.max_pool(x, 2, 2, "VALID")).item() == 3.0


def test_max_pool_grad_routes_ties_to_first():
    x = np.array([[1, 1, 0, 0], [1, 1, 0, 0], [2, 1, 3, 3], [1, 2, 3, 3]],
                 np.float32).reshape(1, 4, 4, 1)
    xt = tf.constant(x)
    y = tf.nn.max_pool(xt, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    (dx,) = tf.gradients(y, xt, tf.reshape(tf.constant([1.0, 2, 3, 4]), [1, 2, 2, 1]))
    want = np.zeros((4, 4), np.float32)
    want[0, 0], want[0, 2], want[2, 0], want[2, 2] = 1, 2, 3, 4
    np.testing.assert_array_equal(_run(dx).reshape(4, 4), want)
    # TF re-derives the argmax from orig_input: a wrong orig_output does not matter.
    direct = apply_op("MaxPoolGrad", orig_input=xt, orig_output=tf.zeros([1, 2, 2, 1]),
                      grad=tf.ones([1, 2, 2, 1]), ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1],
                      padding="VALID")
    np.testing.assert_array_equal(_run(direct).reshape(4, 4), (want > 0).astype(np.float32))


_NAN_POOL_INPUT = np.array([[np.nan, 1, 0, 0], [2, 1, np.nan, np.nan], [1, 1, 2, 1],
                            [np.nan, 2, 2, 2]], np.float32).reshape(1, 4, 4, 1)
# TensorFlow 2.21's answer (tests/oracle.py) for _NAN_POOL_INPUT and grads 1, 2, 3, 4: the
# argmax scan starts at each window's first element and moves on only to a strictly
# greater one, so a NaN first element keeps the gradient and a later NaN never takes it.
_NAN_POOL_TF = ([2, 0, 2, 2], [[1, 0, 2, 0], [0, 0, 0, 0], [0, 0, 4, 0], [0, 3, 0, 0]])


@pytest.mark.parametrize("native_on", [True, False], ids=["native", "numpy"])
def test_pool_windows_far_larger_than_the_input_take_the_inputs_time(monkeypatch, native_on):
    """A SAME window of 10^6 or 2^31 - 1 taps on a 4 x 5 input is the global pool, computed
    in the input's time (it used to loop over every tap, or allocate the padded input)."""
    from tensorflux.kernels.cpu import native

    if not native_on:
        monkeypatch.setattr(native, "max_pool", lambda *a, **k: None)
        monkeypatch.setattr(native, "max_pool_grad", lambda *a, **k: None)
    x = np.random.default_rng(3).permutation(40).astype(np.float32).reshape(2, 4, 5, 1)
    xt = tf.constant(x)
    fetches = []
    for k in (10**6, 2**31 - 1):
        for fn in (tf.nn.max_pool, tf.nn.avg_pool):
            y = fn(xt, [1, k, k, 1], [1, 1, 1, 1], "SAME")
            fetches += [y, tf.gradients(y, xt)[0]]
    got = _run(fetches)
    glob = {"max": x.max(axis=(1, 2), keepdims=True), "avg": x.mean(axis=(1, 2), keepdims=True)}
    grad = {"max": (x == glob["max"]) * 20.0, "avg": np.ones_like(x)}  # 20 windows each
    for i, kind in enumerate(["max", "avg"] * 2):
        np.testing.assert_allclose(got[2 * i], np.broadcast_to(glob[kind], x.shape), rtol=1e-6)
        np.testing.assert_allclose(got[2 * i + 1], grad[kind], rtol=1e-6)


@pytest.mark.parametrize("fn", [tf.nn.max_pool, tf.nn.avg_pool])
def test_pool_attrs_out_of_int32_range_are_refused_when_built(fn):
    x = tf.zeros([1, 4, 4, 1])
    with pytest.raises(ValueError, match="Attr ksize has value 2147483648 out of range for "
                                         "an int32"):
        fn(x, [1, 2**31, 2**31, 1], [1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match="Attr strides has value 4294967296 out of range"):
        fn(x, [1, 2, 2, 1], [1, 2**32, 1, 1], "SAME")


def test_non_positive_pool_windows_fail_when_run():
    x = tf.zeros([1, 4, 4, 1])
    for y in (tf.nn.avg_pool(x, [1, 0, 2, 1], [1, 1, 1, 1], "SAME"),
              tf.nn.max_pool(x, [1, -1, 2, 1], [1, 1, 1, 1], "SAME")):
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Sliding window ksize must be positive"):
            _run(y)


def _nan_pool_code():
    return """
x = tf.constant(INPUT)
y = tf.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
dx = tf.gradients(y, x, tf.reshape(tf.constant([1.0, 2, 3, 4]), [1, 2, 2, 1]))[0]
with tf.Session() as s:
    a, b = s.run([y, dx])
result = [a.reshape(-1).tolist(), b.reshape(4, 4).tolist()]
"""


@pytest.mark.parametrize("chunked", [False, True])
def test_max_pool_grad_nan_and_inf_follow_tf(monkeypatch, chunked):
    from tensorflux.kernels import intra_op

    if chunked:  # the tiled (tap-major) path in one-image chunks, split over two threads
        monkeypatch.setattr(intra_op, "MIN_ELEMENTS", 0)
        monkeypatch.setattr(intra_op, "CHUNK_ELEMENTS", 1)
        monkeypatch.setattr(intra_op, "workers", lambda ctx=None: 2)
    x = np.concatenate([_NAN_POOL_INPUT] * 3)
    xt = tf.constant(x)
    y = tf.nn.max_pool(xt, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    g = np.tile(np.array([1.0, 2, 3, 4], np.float32).reshape(1, 2, 2, 1), (3, 1, 1, 1))
    g[2] = [[[np.inf], [-np.inf]], [[np.inf], [np.inf]]]  # unrouted: exact zeros, no NaN
    (dx,) = tf.gradients(y, xt, tf.constant(g))
    # The same windows overlapping (3x3, stride 1) take the general path.
    over = apply_op("MaxPoolGrad", orig_input=xt, orig_output=tf.zeros([3, 2, 2, 1]),
                    grad=tf.ones([3, 2, 2, 1]), ksize=[1, 3, 3, 1], strides=[1, 1, 1, 1],
                    padding="VALID")
    got_y, got_dx, got_over = _run([y, dx, over])
    want_y, want_dx = _NAN_POOL_TF
    for i in range(3):
        np.testing.assert_array_equal(got_y[i].reshape(-1), want_y)
    np.testing.assert_array_equal(got_dx[0].reshape(4, 4), want_dx)
    np.testing.assert_array_equal(got_dx[1].reshape(4, 4), want_dx)
    inf_dx = np.array(want_dx, np.float32)
    inf_dx[inf_dx == 2] = -np.inf
    inf_dx[inf_dx > 0] = np.inf
    np.testing.assert_array_equal(got_dx[2].reshape(4, 4), inf_dx)
    ones = np.ones((1, 2, 2, 1), np.float32)
    np.testing.assert_array_equal(got_over[:1],
                                  ref_max_pool_grad(x[:1], ones, (3, 3), (1, 1), "VALID"))


@pytest.mark.oracle
def test_max_pool_grad_nan_oracle():
    if not oracle.available():
        pytest.skip("no TensorFlow oracle venv")
    code = f"INPUT = np.array({_NAN_POOL_INPUT.tolist()!r}, np.float32)\n" + _nan_pool_code()
    theirs = oracle.run_tf(code.replace("nan", "np.nan").replace("np.np.nan", "np.nan"))
    assert theirs[0] == _NAN_POOL_TF[0] and theirs[1] == [list(map(float, r))
                                                          for r in _NAN_POOL_TF[1]]


def test_max_pool_grad_grad():
    x = _distinct(np.random.default_rng(3), (1, 4, 4, 2), np.float32)
    g = np.random.default_rng(4).standard_normal((1, 4, 4, 2)).astype(np.float32)
    y = tf.nn.max_pool(x, 3, 1, "SAME")
    gg = apply_op("MaxPoolGradGrad", orig_input=x, orig_output=y, grad=g, ksize=[1, 3, 3, 1],
                  strides=[1, 1, 1, 1], padding="SAME")
    # out[window] = g at the window's argmax: the linear map transposed to MaxPoolGrad.
    h = np.random.default_rng(5).standard_normal((1, 4, 4, 2)).astype(np.float32)
    mpg = ref_max_pool_grad(x, h, (3, 3), (1, 1), "SAME")
    np.testing.assert_allclose(np.sum(_run(gg) * h), np.sum(mpg * g), rtol=1e-5)


def test_in_top_k():
    p = np.array([[0.1, 0.3, 0.3, 0.2], [0.5, 0.1, 0.2, 0.2]], np.float32)
    out = _run([tf.nn.in_top_k(p, [1, 0], 1), tf.nn.in_top_k(p, [2, 3], 1),
                tf.nn.in_top_k(p, np.array([3, 3], np.int64), 2),
                tf.nn.in_top_k([[np.nan, 1.0]], [0], 1), tf.nn.in_top_k([[np.inf, 1.0]], [0], 1),
                tf.nn.in_top_k(p, [4, -1], 1)])
    want = [[True, True], [True, False], [False, True], [False], [False], [False, False]]
    for got, w in zip(out, want, strict=True):
        np.testing.assert_array_equal(got, w)
    t = tf.nn.in_top_k(p, [1, 0], 1)
    assert t.op.type == "InTopKV2" and t.name == "in_top_k_6/InTopKV2:0"
    assert t.shape.as_list() == [2]


def test_softplus_thresholds_and_softmax_stability():
    x = np.array([-100.0, -20.0, 0.0, 20.0, 100.0], np.float32)
    np.testing.assert_allclose(_run(tf.nn.softplus(x)), np.logaddexp(0, x.astype(np.float64)),
                               rtol=1e-6, atol=1e-40)  # exp(-100) is a float32 denormal
    s = _run(tf.nn.softmax(np.array([[1000.0, 1000.0, -1000.0]], np.float32)))
    np.testing.assert_allclose(s, [[0.5, 0.5, 0.0]])
    ls = _run(tf.nn.log_softmax(np.array([[1000.0, 0.0]], np.float64)))
    np.testing.assert_allclose(ls, [[0.0, -1000.0]])


def test_kernels_do_not_write_inputs():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 4, 2)).astype(np.float32)
    w = rng.standard_normal((3, 3, 2, 2)).astype(np.float32)
    xp = tf.placeholder(tf.float32, x.shape)
    wp = tf.placeholder(tf.float32, w.shape)
    y = tf.nn.max_pool(tf.nn.relu(tf.nn.conv2d(xp, wp, 1, "SAME")), 2, 2, "VALID")
    loss = tf.reduce_sum(tf.nn.softmax(tf.reshape(y, [2, -1])) * 3.0) + tf.nn.l2_loss(xp)
    grads = tf.gradients(loss, [xp, wp])
    x0, w0 = x.copy(), w.copy()
    x.flags.writeable = w.flags.writeable = False
    _run(grads, {xp: x, wp: w})
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(w, w0)


@pytest.mark.parametrize("blas_threads", [1, 2])
@pytest.mark.parametrize("strides, padding", [((1, 1), "SAME"), ((2, 2), "VALID")])
def test_conv_kernels_chunked_and_parallel(monkeypatch, blas_threads, strides, padding):
    """The batch chunking, the intra-op split and both backprop-input strategies (chosen by
    the BLAS thread count) agree with the loop references."""
    from tensorflux.kernels import intra_op
    from tensorflux.kernels.cpu import conv_ops as kernels

    monkeypatch.setattr(intra_op, "blas_threads", lambda: blas_threads)
    monkeypatch.setattr(intra_op, "MIN_FLOPS", 0)
    monkeypatch.setattr(kernels, "_CHUNK_BYTES", 1)  # one image per chunk
    rng = np.random.default_rng(2)
    x = rng.standard_normal((7, 6, 5, 3)).astype(np.float32)
    w = rng.standard_normal((3, 3, 3, 4)).astype(np.float32)
    y = ref_conv(x, w, strides, padding)
    dy = rng.standard_normal(y.shape).astype(np.float32)
    s4 = [1, *strides, 1]
    got = _run([tf.nn.conv2d(x, w, s4, padding),
                tf.nn.conv2d_backprop_input(list(x.shape), w, dy, s4, padding),
                tf.nn.conv2d_backprop_filter(x, list(w.shape), dy, s4, padding)])
    want = [y, ref_conv_input_grad(x.shape, w, dy, strides, padding),
            ref_conv_filter_grad(x, w.shape, dy, strides, padding)]
    for g, wnt in zip(got, want, strict=True):
        np.testing.assert_allclose(g, wnt, rtol=1e-4, atol=1e-4)


def test_memory_bound_kernels_split_over_threads(monkeypatch):
    from tensorflux.kernels import intra_op

    monkeypatch.setattr(intra_op, "blas_threads", lambda: 1)
    monkeypatch.setattr(intra_op, "MIN_ELEMENTS", 0)
    monkeypatch.setattr(intra_op, "MIN_FLOPS", 0)
    rng = np.random.default_rng(4)
    x = _distinct(rng, (5, 6, 4, 3), np.float32)
    g = rng.standard_normal((5, 3, 2, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    y = rng.standard_normal(x.shape).astype(np.float32)
    got = _run([tf.nn.max_pool(x, 2, 2, "VALID"),
                apply_op("MaxPoolGrad", orig_input=x, orig_output=tf.zeros([5, 3, 2, 3]),
                         grad=g, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID"),
                tf.nn.relu(x), apply_op("ReluGrad", gradients=y, features=x),
                tf.nn.bias_add(x, b), apply_op("BiasAddGrad", out_backprop=y)])
    want = [ref_pool(x, (2, 2), (2, 2), "VALID", "max"),
            ref_max_pool_grad(x, g, (2, 2), (2, 2), "VALID"), np.maximum(x, 0),
            y * (x > 0), x + b, y.sum(axis=(0, 1, 2))]
    for gv, wv in zip(got, want, strict=True):
        np.testing.assert_allclose(gv, wv, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("padding, dilations, pads, flipped", [
    ("SAME", (1, 1), None, True), ("VALID", (1, 1), None, True), ("SAME", (2, 1), None, True),
    ("EXPLICIT", (1, 1), ((1, 0), (1, 1)), True),
    ("EXPLICIT", (1, 1), ((4, 0), (0, 0)), False),  # padding past the window: scatter path
])
def test_backprop_input_as_flipped_conv(monkeypatch, workers, padding, dilations, pads,
                                        flipped):
    """Stride-1 backprop-input with many input channels is a forward conv of the padded
    out_backprop with the flipped filter; it agrees with the loop reference."""
    from tensorflux.kernels import intra_op
    from tensorflux.kernels.cpu import conv_ops as kernels

    monkeypatch.setattr(intra_op, "MIN_FLOPS", 0)
    monkeypatch.setattr(intra_op, "workers", lambda ctx=None: workers)
    monkeypatch.setattr(kernels, "_CHUNK_BYTES", 1)  # one image per chunk
    if flipped:
        def no_scatter(*args):
            raise AssertionError("expected the flipped-conv path")

        monkeypatch.setattr(kernels, "_col2im_backprop_input", no_scatter)
    rng = np.random.default_rng(5)
    c = kernels._FLIP_MIN_CHANNELS
    shape = (3, 6, 5, c)
    w = rng.standard_normal((3, 2, c, 4)).astype(np.float32)
    pads = pads or ((0, 0), (0, 0))
    oh, _ = _geometry(shape[1], 3, 1, dilations[0], padding, pads[0])
    ow, _ = _geometry(shape[2], 2, 1, dilations[1], padding, pads[1])
    dy = rng.standard_normal((3, oh, ow, 4)).astype(np.float32)
    tf_padding = padding if padding != "EXPLICIT" else [[0, 0], list(pads[0]), list(pads[1]),
                                                        [0, 0]]
    got = _run(tf.nn.conv2d_backprop_input(list(shape), w, dy, [1, 1, 1, 1], tf_padding,
                                           dilations=[1, *dilations, 1]))
    want = ref_conv_input_grad(shape, w, dy, (1, 1), padding, dilations, pads)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("shape, k, padding", [
    ((3, 6, 8, 16), (2, 2), "VALID"), ((3, 7, 9, 8), (2, 2), "VALID"),
    ((2, 7, 5, 3), (2, 2), "SAME"), ((2, 9, 6, 8), (3, 3), "VALID"),
    ((2, 4, 6, 8), (1, 3), "VALID"),
])
def test_max_pool_and_grad_in_chunks(monkeypatch, workers, shape, k, padding):
    """Pools run in cache-sized batch chunks, split over threads or not; they agree with
    the loop references (ties included) and with an unchunked run (NaNs included)."""
    from tensorflux.kernels import intra_op

    monkeypatch.setattr(intra_op, "MIN_ELEMENTS", 0)
    monkeypatch.setattr(intra_op, "CHUNK_ELEMENTS", 50)
    monkeypatch.setattr(intra_op, "workers", lambda ctx=None: workers)
    rng = np.random.default_rng(6)
    x = rng.integers(-2, 3, shape).astype(np.float32)  # many ties, zeros among them
    ks = [1, *k, 1]
    y = tf.nn.max_pool(x, ks, ks, padding)
    g = rng.standard_normal(y.shape.as_list()).astype(np.float32)
    grad = apply_op("MaxPoolGrad", orig_input=x, orig_output=y, grad=g, ksize=ks, strides=ks,
                    padding=padding)
    got_y, got_dx = _run([y, grad])
    np.testing.assert_array_equal(got_y, ref_pool(x, k, k, padding, "max"))
    np.testing.assert_array_equal(got_dx, ref_max_pool_grad(x, g, k, k, padding))
    xn = x.copy()
    xn.reshape(-1)[::7] = np.nan
    fetch = [tf.nn.max_pool(xn, ks, ks, padding),
             apply_op("MaxPoolGrad", orig_input=xn, orig_output=y, grad=g, ksize=ks,
                      strides=ks, padding=padding)]
    chunked = _run(fetch)
    monkeypatch.setattr(intra_op, "MIN_ELEMENTS", 1 << 40)
    whole = _run(fetch)
    for a, b in zip(chunked, whole, strict=True):
        np.testing.assert_array_equal(a, b)


# ---- dropout -----------------------------------------------------------------------------


def test_dropout_keep_prob_one_is_identity():
    x = tf.ones([3, 4])
    assert tf.nn.dropout(x, keep_prob=1.0) is x
    assert tf.nn.dropout(x, rate=0.0) is x
    assert tf.nn.dropout(x, keep_prob=tf.constant(1.0)) is x


def test_dropout_values_and_scale():
    x = tf.ones([200, 50])
    y = tf.nn.dropout(x, keep_prob=0.4)
    assert y.shape.as_list() == [200, 50] and y.dtype == tf.float32
    assert y.op.type == "SelectV2" and y.name.startswith("dropout/")
    v = _run(y)
    assert set(np.unique(v)) <= {0.0, np.float32(1 / 0.4)}
    assert abs(np.mean(v > 0) - 0.4) < 0.03
    (dx,) = tf.gradients(tf.reduce_sum(y), x)
    dv, yv = _run([dx, y])
    np.testing.assert_allclose(dv, yv)  # x is ones: the gradient is the scaled mask


def test_dropout_noise_shape_rate_tensor_and_seed():
    x = tf.ones([6, 40])
    v = _run(tf.nn.dropout(x, rate=0.5, noise_shape=[1, 40]))
    assert np.all(v == v[0:1])  # one decision per column
    rate = tf.placeholder(tf.float32, [])
    y = tf.nn.dropout(x, rate=rate)
    with tf.Session() as sess:
        out = sess.run(y, {rate: 0.75})
        assert set(np.unique(out)) <= {0.0, 4.0}
        assert 0 < np.mean(out > 0) < 0.5
    runs = []
    for _ in range(2):
        with tf.Graph().as_default():
            tf.set_random_seed(7)
            runs.append(_run(tf.nn.dropout(tf.ones([5, 5]), rate=0.5, seed=3)))
    np.testing.assert_array_equal(runs[0], runs[1])


@pytest.mark.parametrize("kwargs, message", [
    (dict(keep_prob=1.5), r"`rate` must be a scalar tensor or a float in the range \[0, 1\). "
                          r"Received: rate=-0.5"),
    (dict(rate=1.0), r"range \[0, 1\). Received: rate=1.0"),
    (dict(keep_prob=0.5, rate=0.5), "Cannot specify both 'keep_prob' and 'rate'."),
    (dict(), r"`rate` must be provided. Received: rate=None"),
])
def test_dropout_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        tf.nn.dropout(tf.ones([3]), **kwargs)
    with pytest.raises(ValueError, match="must be a floating point tensor"):
        tf.nn.dropout(tf.ones([3], tf.int32), keep_prob=0.5)


# ---- static shapes -----------------------------------------------------------------------


def test_conv_and_pool_static_shapes():
    x = tf.placeholder(tf.float32, [None, 8, 8, 3])
    w = tf.ones([3, 3, 3, 5])
    got = [str(tf.nn.conv2d(x, w, s, p).shape) for s in ([1, 1, 1, 1], [1, 2, 2, 1], 3)
           for p in ("SAME", "VALID")]
    # From TensorFlow 2.21 (tf.compat.v1) on the same graphs.
    assert got == ["(?, 8, 8, 5)", "(?, 6, 6, 5)", "(?, 4, 4, 5)", "(?, 3, 3, 5)",
                   "(?, 3, 3, 5)", "(?, 2, 2, 5)"]
    got = [str(tf.nn.conv2d(x, w, 1, p, dilations=2).shape) for p in ("SAME", "VALID")]
    assert got == ["(?, 8, 8, 5)", "(?, 4, 4, 5)"]
    got = tf.nn.conv2d(x, w, [1, 1, 1, 1], [[0, 0], [1, 2], [0, 1], [0, 0]])
    assert str(got.shape) == "(?, 9, 7, 5)"
    assert got.op.get_attr("explicit_paddings") == [0, 0, 1, 2, 0, 1, 0, 0]
    got = [str(tf.nn.max_pool(x, [1, 3, 3, 1], s, p).shape)
           for s in ([1, 1, 1, 1], [1, 2, 2, 1], [1, 3, 3, 1]) for p in ("SAME", "VALID")]
    assert got == ["(?, 8, 8, 3)", "(?, 6, 6, 3)", "(?, 4, 4, 3)", "(?, 3, 3, 3)",
                   "(?, 3, 3, 3)", "(?, 2, 2, 3)"]
    assert str(tf.nn.max_pool(x, 2, 2, "VALID").shape) == "(?, 4, 4, 3)"
    assert str(tf.nn.avg_pool(x, [1, 2, 2, 2], [1, 2, 2, 1], "VALID").shape) == "(?, 4, 4, 2)"
    nchw = tf.nn.conv2d(tf.ones([2, 3, 4, 4]), w, 1, "SAME", data_format="NCHW")
    assert nchw.shape.as_list() == [2, 5, 4, 4]
    unknown = tf.nn.conv2d(tf.placeholder(tf.float32), w, 1, "SAME")
    assert unknown.shape.as_list() == [None, None, None, 5]


def test_backprop_and_misc_static_shapes():
    w = tf.ones([3, 3, 3, 5])
    bi = apply_op("Conv2DBackpropInput", input_sizes=tf.placeholder(tf.int32, [4]), filter=w,
                  out_backprop=tf.ones([2, 4, 4, 5]), strides=[1, 2, 2, 1], padding="SAME")
    assert bi.shape.as_list() == [2, None, None, None]
    bi = apply_op("Conv2DBackpropInput", input_sizes=[2, 8, 8, 3], filter=w,
                  out_backprop=tf.placeholder(tf.float32), strides=[1, 2, 2, 1], padding="SAME")
    assert bi.shape.as_list() == [2, 8, 8, 3]
    bf = apply_op("Conv2DBackpropFilter", input=tf.placeholder(tf.float32, [None, 8, 8, 3]),
                  filter_sizes=tf.placeholder(tf.int32, [4]), out_backprop=tf.ones([2, 4, 4, 5]),
                  strides=[1, 2, 2, 1], padding="SAME")
    assert bf.shape.as_list() == [None] * 4
    assert tf.nn.bias_add(tf.placeholder(tf.float32, [None, 3]), tf.ones([3])).shape.as_list() \
        == [None, 3]
    assert apply_op("BiasAddGrad", out_backprop=tf.placeholder(tf.float32, [None, 2, 7])) \
        .shape.as_list() == [7]
    xe = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.placeholder(tf.int64, [None]), logits=tf.placeholder(tf.float32, [None, 10]))
    assert xe.shape.as_list() == [None]
    assert xe.name == "SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits:0"
    assert tf.nn.l2_loss(tf.ones([2, 2])).shape.as_list() == []
    assert tf.nn.softmax_cross_entropy_with_logits_v2(labels=tf.ones([4]), logits=tf.ones([4])) \
        .shape.as_list() == []
    assert tf.nn.softmax(tf.placeholder(tf.float32, [None, 3])).shape.as_list() == [None, 3]


def test_op_names_follow_tf():
    x = tf.placeholder(tf.float32, [None, 8, 8, 3])
    names = [tf.nn.relu(x).name, tf.nn.softmax(x).name, tf.nn.bias_add(x, tf.ones([3])).name,
             tf.nn.l2_loss(x).name, tf.nn.max_pool(x, 2, 2, "VALID").name,
             tf.nn.avg_pool(x, 2, 2, "VALID").name, tf.nn.lrn(x).name,
             tf.nn.local_response_normalization(x).name, tf.nn.leaky_relu(x).name,
             tf.nn.conv2d(x, tf.ones([3, 3, 3, 5]), 1, "SAME").name]
    assert names == ["Relu:0", "Softmax:0", "BiasAdd:0", "L2Loss:0", "MaxPool:0", "AvgPool:0",
                     "LRN:0", "LRN_1:0", "LeakyRelu:0", "Conv2D:0"]
    s = tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.ones([3, 4]), logits=tf.ones([3, 4]))
    assert s.name == "logistic_loss:0"


# ---- errors ------------------------------------------------------------------------------


def test_bad_padding_and_strides():
    x = tf.placeholder(tf.float32, [None, 8, 8, 3])
    w = tf.ones([3, 3, 3, 5])
    for fn, op in [(lambda p: tf.nn.conv2d(x, w, 1, p), "Conv2D"),
                   (lambda p: tf.nn.max_pool(x, 2, 2, p), "MaxPool"),
                   (lambda p: tf.nn.avg_pool(x, 2, 2, p), "AvgPool")]:
        for bad in ("FOO", "same"):
            with pytest.raises(ValueError, match=f"Attr 'padding' of '{op}' Op passed string "
                                                 f"'{bad}' not in"):
                fn(bad)
    with pytest.raises(ValueError, match=r"strides should be of length 1, 2 or 4\. Received: "
                                         r"strides=\[1, 1, 1\] of length 3"):
        tf.nn.conv2d(x, w, [1, 1, 1], "SAME")
    with pytest.raises(ValueError, match=r"ksize should be of length 1, 2 or 4"):
        tf.nn.max_pool(x, [1, 2, 2], [1, 2, 2, 1], "VALID")
    with pytest.raises(ValueError, match="'EXPLICIT' is not a valid value"):
        tf.nn.conv2d(x, w, 1, "EXPLICIT")


def test_shape_errors_at_construction():
    x = tf.placeholder(tf.float32, [None, 8, 8, 3])
    with pytest.raises(ValueError, match=r"^Depth of input \(3\) is not a multiple of input "
                                         r"depth of filter \(4\) for '\{\{node Conv2D\}\}"):
        tf.nn.conv2d(x, tf.ones([3, 3, 4, 5]), [1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match=r"^Negative dimension size caused by subtracting 3 "
                                         r"from 2 for '\{\{node Conv2D"):
        tf.nn.conv2d(tf.ones([1, 2, 2, 3]), tf.ones([3, 3, 3, 5]), 1, "VALID")
    with pytest.raises(ValueError, match=r"^Shape must be rank 4 but is rank 3"):
        tf.nn.conv2d(tf.ones([2, 2, 3]), tf.ones([3, 3, 3, 5]), 1, "VALID")
    with pytest.raises(ValueError, match=r"^Negative dimension size caused by subtracting 3 "
                                         r"from 2 for '\{\{node MaxPool"):
        tf.nn.max_pool(tf.ones([1, 2, 2, 1]), 3, 1, "VALID")
    with pytest.raises(ValueError, match=r"^Dimensions must be equal, but are 3 and 4 for "
                                         r"'\{\{node BiasAdd"):
        tf.nn.bias_add(x, tf.ones([4]))
    with pytest.raises(ValueError, match=r"^Shape must be at least rank 2 but is rank 1"):
        tf.nn.bias_add(tf.ones([3]), tf.ones([3]))
    with pytest.raises(ValueError, match=r"^Shape must be at least rank 3 but is rank 2"):
        tf.nn.bias_add(tf.ones([2, 3]), tf.ones([3]), data_format="NCHW")
    with pytest.raises(ValueError, match=r"must be of the form `N...C` or `NC...`"):
        tf.nn.bias_add(tf.ones([2, 3]), tf.ones([3]), data_format="CHW")
    with pytest.raises(ValueError, match=r"^Shape must be rank 4 but is rank 3 for "
                                         r"'\{\{node LRN\}\}"):
        tf.nn.lrn(tf.ones([2, 3, 4]))
    with pytest.raises(ValueError, match=r"^Shape must be at least rank 1 but is rank 0"):
        tf.nn.softmax(tf.constant(1.0))
    with pytest.raises(ValueError, match=r"^Shape must be rank 2 but is rank 1"):
        tf.nn.in_top_k(tf.ones([4]), [1], 1)
    with pytest.raises(ValueError, match=r"^Dimensions must be equal, but are 3 and 2"):
        tf.nn.in_top_k(tf.ones([3, 4]), [1, 2], 1)
    with pytest.raises(ValueError, match=r"^Dimensions must be equal, but are 4 and 5"):
        tf.nn.softmax_cross_entropy_with_logits_v2(labels=tf.ones([3, 5]), logits=tf.ones([3, 4]))
    with pytest.raises(ValueError, match=r"must have the same shape, received \(\(3, 4\) vs "
                                         r"\(3, 5\)\)"):
        tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.ones([3, 5]), logits=tf.ones([3, 4]))


def test_type_errors():
    with pytest.raises(TypeError, match="Value passed to parameter 'logits' has DataType int32 "
                                        "not in list of allowed values"):
        tf.nn.softmax(tf.constant([1, 2]))
    with pytest.raises(TypeError, match="parameter 't' has DataType int32"):
        tf.nn.l2_loss(tf.constant([1, 2]))
    with pytest.raises(TypeError, match="parameter 'input' has DataType float64"):
        tf.nn.lrn(tf.ones([2, 3, 4, 5], tf.float64))
    with pytest.raises(TypeError, match="'predictions' of 'InTopKV2' Op has type float64"):
        tf.nn.in_top_k(tf.ones([3, 4], tf.float64), [1, 2, 3], 1)
    with pytest.raises(TypeError, match="parameter 'labels' has DataType float32 not in list"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.ones([3]), logits=tf.ones([3, 4]))


def test_xent_argument_guards():
    lg, lb = tf.ones([3, 10]), tf.zeros([3], tf.int64)
    for fn in (tf.nn.sparse_softmax_cross_entropy_with_logits,
               tf.nn.softmax_cross_entropy_with_logits, tf.nn.sigmoid_cross_entropy_with_logits):
        name = fn.__name__
        with pytest.raises(ValueError, match=f"Only call `{name}` with named arguments"):
            fn(lb, lg)
        with pytest.raises(ValueError, match="Both labels and logits must be provided"):
            fn(labels=lb)
    with pytest.raises(ValueError, match=r"`labels.shape.rank` must equal `logits.shape.rank - "
                                         r"1`. Received: labels.shape=\(3, 2\) of rank 2"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.ones([3, 2], tf.int32),
                                                       logits=tf.ones([3, 4]))
    with pytest.raises(ValueError, match=r"`labels.shape` must equal `logits.shape` except for "
                                         r"the last dimension"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.ones([3], tf.int32),
                                                       logits=tf.ones([4, 4]))


def test_bad_label_names_node_and_session_survives():
    logits = tf.placeholder(tf.float32, [None, 10])
    labels = tf.placeholder(tf.int64, [None])
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    with tf.Session() as sess:
        for bad, first in (([1, 10, 2], 10), ([1, -1, 2], -1)):
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                sess.run(loss, {logits: np.zeros((3, 10)), labels: bad})
            msg = str(info.value)
            assert f"Received a label value of {first} which is outside the valid range of " \
                   f"[0, 10).  Label values: 1 {first} 2" in msg
            assert "SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits" \
                in msg
            assert info.value.op is None or info.value.node_name.endswith(
                "SparseSoftmaxCrossEntropyWithLogits")
        ok = sess.run(loss, {logits: np.zeros((2, 10)), labels: [1, 2]})
        np.testing.assert_allclose(ok, [np.log(10)] * 2, rtol=1e-6)


def test_runtime_errors_are_typed():
    x = tf.placeholder(tf.float32, [1, 4, 4, 3])
    y = tf.nn.conv2d(x, tf.ones([2, 2, 3, 1]), [2, 1, 1, 1], "SAME")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.UnimplementedError, match="strides in the batch and "
                                                               "depth dimensions"):
            sess.run(y, {x: np.ones((1, 4, 4, 3))})
        bad = tf.nn.conv2d(tf.placeholder(tf.float32), tf.ones([2, 2, 3, 1]), 1, "SAME")
        with pytest.raises(tf.errors.InvalidArgumentError, match="input depth must be evenly "
                                                                 "divisible by filter depth"):
            sess.run(bad, {bad.op.inputs[0]: np.ones((1, 4, 4, 4))})


# ---- TensorFlow oracle -------------------------------------------------------------------

_ORACLE_SEED = 11


def _oracle_inputs():
    rng = np.random.default_rng(_ORACLE_SEED)
    n = lambda *s: rng.standard_normal(s).round(3)  # noqa: E731
    return {
        "x": n(2, 7, 6, 3), "w": n(3, 2, 3, 4), "xc": n(2, 3, 5, 4), "w2": n(2, 2, 3, 2),
        "dy_same_s2": n(2, 4, 3, 4), "ties": rng.integers(0, 3, (2, 6, 6, 2)).astype(float),
        "gp": n(2, 3, 3, 2), "gp3": n(2, 6, 6, 2), "logits": n(4, 7),
        "soft": rng.uniform(0, 1, (4, 7)).round(3), "labels": [0, 6, 3, 3],
        "lrn_x": n(2, 3, 3, 9), "lrn_g": n(2, 3, 3, 9), "bias": n(4), "vec": n(3, 5),
    }


_ORACLE_CODE = """
inp = {k: np.array(v, np.float32) if k != "labels" else np.array(v) for k, v in
       json.loads(INPUTS).items()}
g = tf.Graph()
out = {}
with g.as_default():
    c = lambda k: tf.constant(inp[k])
    x, w = c("x"), c("w")
    out["conv_same"] = tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME")
    out["conv_valid_s2"] = tf.nn.conv2d(x, w, [1, 2, 2, 1], "VALID")
    out["conv_same_s2"] = tf.nn.conv2d(x, w, [1, 2, 2, 1], "SAME")
    out["conv_dil"] = tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME", dilations=[1, 2, 2, 1])
    out["conv_explicit"] = tf.nn.conv2d(x, w, [1, 1, 2, 1], [[0, 0], [2, 1], [1, 0], [0, 0]])
    out["conv_nchw"] = tf.nn.conv2d(c("xc"), c("w2"), [1, 1, 1, 1], "SAME", data_format="NCHW")
    dy = c("dy_same_s2")
    out["conv_bi"] = tf.nn.conv2d_backprop_input([2, 7, 6, 3], w, dy, [1, 2, 2, 1], "SAME")
    out["conv_bf"] = tf.nn.conv2d_backprop_filter(x, [3, 2, 3, 4], dy, [1, 2, 2, 1], "SAME")
    t = c("ties")
    mp = tf.nn.max_pool(t, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    out["maxpool_ties"] = mp
    out["maxpool_grad_ties"] = tf.gradients(mp, t, c("gp"))[0]
    mp3 = tf.nn.max_pool(t, [1, 3, 3, 1], [1, 1, 1, 1], "SAME")
    out["maxpool_3x3_grad_ties"] = tf.gradients(mp3, t, c("gp3"))[0]
    out["maxpool_same_s2"] = tf.nn.max_pool(x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")
    ap = tf.nn.avg_pool(x, [1, 3, 2, 1], [1, 2, 2, 1], "SAME")
    out["avgpool_same"] = ap
    out["avgpool_grad"] = tf.gradients(ap, x, tf.ones_like(ap) * 1.5)[0]
    lg = c("logits")
    out["xent"] = tf.nn.softmax_cross_entropy_with_logits_v2(labels=c("soft"), logits=lg)
    out["xent_grad"] = tf.gradients(out["xent"], lg)[0]
    sx = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=inp["labels"], logits=lg)
    out["sparse_xent"] = sx
    out["sparse_xent_grad"] = tf.gradients(sx, lg)[0]
    lx = c("lrn_x")
    l = tf.nn.lrn(lx, 3, 1.5, 0.2, 0.6)
    out["lrn"] = l
    out["lrn_grad"] = tf.gradients(l, lx, c("lrn_g"))[0]
    bias = c("bias")
    ba = tf.nn.bias_add(tf.constant(inp["vec"][None, :, :4]), bias)
    out["bias_add"] = ba
    out["bias_add_grad"] = tf.gradients(ba, bias, tf.ones_like(ba) * 2.0)[0]
    v = c("vec")
    out["selu"], out["elu"], out["softplus"] = tf.nn.selu(v), tf.nn.elu(v), tf.nn.softplus(v)
    out["leaky"], out["relu6"] = tf.nn.leaky_relu(v, 0.1), tf.nn.relu6(v * 5)
    out["l2"] = tf.nn.l2_loss(v)
    out["log_softmax"] = tf.nn.log_softmax(v)
    out["in_top_k"] = tf.nn.in_top_k(lg, [0, 6, 3, 2], 3)
    with tf.Session() as s:
        vals = s.run(out)
result = {k: np.asarray(vv) for k, vv in vals.items()}
"""


@pytest.mark.oracle
def test_matches_tensorflow():
    inp = {k: np.asarray(v).tolist() for k, v in _oracle_inputs().items()}
    ours, theirs = oracle.run_both(f"INPUTS = {json.dumps(inp)!r}\n" + _ORACLE_CODE, tf)
    oracle.assert_results_close(ours, theirs, rtol=1e-4, atol=1e-4)


# ---- semantics checked against TensorFlow 2.21 (issue 21); expected values from the oracle --


def test_leaky_relu_applies_alpha_as_float32():
    x = np.array([-1.3, 2.0, -0.7, -3.3e-5], np.float64)
    y, g = _run([tf.nn.leaky_relu(x, alpha=0.1),
                 apply_op("LeakyReluGrad", gradients=tf.constant(np.ones(4)), features=x,
                          alpha=0.1)])
    a = float(np.float32(0.1))
    assert y.tolist() == [-1.3 * a, 2.0, -0.7 * a, -3.3e-5 * a]  # -0.13000000193715097, ...
    assert g.dtype == np.float64 and g.tolist() == [a, 1.0, a, a]


def test_softmax_cross_entropy_broadcasts_labels_and_logits():
    logits = np.array([[1.0, 2, 3], [1, 1, 1]], np.float32)
    labels = np.array([[0.2, 0.3, 0.5]], np.float32)
    loss, backprop = apply_op("SoftmaxCrossEntropyWithLogits", features=logits, labels=labels)
    assert loss.shape.as_list() == [2] and backprop.shape.as_list() == [2, 3]
    loss2, _ = apply_op("SoftmaxCrossEntropyWithLogits", features=logits[:1],
                        labels=np.array([[0.2, 0.3, 0.5], [1, 0, 0]], np.float32))
    got = _run([loss, backprop, loss2])
    # Values from TF 2.21.
    np.testing.assert_allclose(got[0], [1.1076059, 1.0986123], rtol=1e-6)
    np.testing.assert_allclose(got[1], [[-0.10996943, -0.05527154, 0.16524094],
                                        [0.13333334, 0.03333333, -0.16666666]], atol=1e-6)
    np.testing.assert_allclose(got[2], [1.1076059, 2.407606], rtol=1e-6)
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 3"):
        apply_op("SoftmaxCrossEntropyWithLogits", features=np.ones((2, 3), np.float32),
                 labels=np.ones((3, 3), np.float32))
