"""CPU kernels of the neural-network ops (tensorflux/ops/nn_ops.py): activations and their
gradients, softmax and the cross-entropies, BiasAdd, L2Loss, LRN and InTopK. Convolutions
are in conv_ops.py, pools in pooling_ops.py; the precision rule and the window geometry
they share in _nn_common.py. No kernel writes into its inputs but Relu, ReluGrad and
BiasAdd, into an input the executor donates (kernels/buffers.py, "donated inputs").
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from tensorflux.kernels import buffers, interrupt, intra_op
from tensorflux.kernels.cpu import native
from tensorflux.kernels.cpu._nn_common import _LOW_PRECISION, _invalid, _narrow, _widen
from tensorflux.kernels.cpu.gather_ops import _top_k_by_rows
from tensorflux.kernels.cpu.math_ops import _ADD_KERNEL as _last_axis_add
from tensorflux.kernels.cpu.reduction_ops import _sum as _leading_sum
from tensorflux.kernels.registry import kernel, kernel_factory

_SELU_SCALE = 1.0507009873554804934193349852946
_SELU_ALPHA = 1.6732632423543772848170429916717


# ---- elementwise activations and their gradients -----------------------------------------


def _relu_into(out, x):
    np.maximum(x, np.zeros((), x.dtype), out=out)


def _relu_grad_into(out, g, x):
    np.multiply(g, np.greater(x, 0), out=out, dtype=g.dtype)


# Relu, ReluGrad and BiasAdd write into an input the executor donates (kernels/buffers.py,
# "donated inputs").


@kernel("Relu", reuses_inputs=(0,))
def _relu(ctx, x, donated=()):
    parts = intra_op.workers(ctx) if x.size >= intra_op.MIN_ELEMENTS else 1
    into = buffers.donated_output((x,), donated, x.shape, x.dtype) if donated else None
    out = native.relu(x, parts, into)
    if out is not None:
        return out
    out = np.empty(x.shape, x.dtype) if into is None else into
    return intra_op.split_elementwise(_relu_into, out, x, parts=parts)


@kernel("ReluGrad", reuses_inputs=(0, 1))
def _relu_grad(ctx, g, x, donated=()):
    if g.shape != x.shape:
        raise _invalid(f"gradients and features must have the same shape: "
                       f"{list(g.shape)} vs {list(x.shape)}")
    parts = intra_op.workers(ctx)
    into = buffers.donated_output((g, x), donated, g.shape, g.dtype) if donated else None
    out = native.relu_grad(g, x, parts, into)
    if out is not None:
        return out
    out = np.empty(g.shape, g.dtype) if into is None else into
    return intra_op.split_elementwise(_relu_grad_into, out, g, x, parts=parts)


@kernel("Relu6")
def _relu6(ctx, x):
    return np.minimum(np.maximum(x, np.zeros((), x.dtype)), np.asarray(6, x.dtype))


@kernel("Relu6Grad")
def _relu6_grad(ctx, g, x):
    return g * ((x > 0) & (x < 6)).astype(g.dtype)


@kernel("Elu")
def _elu(ctx, x):
    xf = _widen(x)
    return _narrow(np.where(xf < 0, np.expm1(np.minimum(xf, 0)), xf), x.dtype)


@kernel("EluGrad")
def _elu_grad(ctx, g, y):
    gf, yf = _widen(g), _widen(y)
    return _narrow(np.where(yf < 0, gf * (yf + 1), gf), g.dtype)


@kernel("Selu")
def _selu(ctx, x):
    xf = _widen(x)
    neg = (_SELU_SCALE * _SELU_ALPHA) * np.expm1(np.minimum(xf, 0))
    return _narrow(np.where(xf < 0, neg, _SELU_SCALE * xf), x.dtype)


@kernel("SeluGrad")
def _selu_grad(ctx, g, y):
    gf, yf = _widen(g), _widen(y)
    out = np.where(yf < 0, gf * (yf + _SELU_SCALE * _SELU_ALPHA), gf * _SELU_SCALE)
    return _narrow(out, g.dtype)


@kernel("Softplus")
def _softplus(ctx, x):
    # TF's thresholds: above -threshold softplus(x) == x and below threshold it is exp(x),
    # both to the input type's machine epsilon.
    threshold = np.log(float(ml_dtypes.finfo(x.dtype).eps)) + 2.0
    xf = _widen(x)
    with np.errstate(over="ignore"):
        e = np.exp(xf)
        mid = np.log1p(e)
    out = np.where(xf > -threshold, xf, np.where(xf < threshold, e, mid))
    return _narrow(out, x.dtype)


@kernel("SoftplusGrad")
def _softplus_grad(ctx, g, x):
    gf, xf = _widen(g), _widen(x)
    with np.errstate(over="ignore"):
        return _narrow(gf / (np.exp(-xf) + 1), g.dtype)


def _alpha_as(alpha: float, dtype) -> np.ndarray:
    """The float attr `alpha` as TF's kernels use it: a float32 cast to T (so float64 results
    use float32(alpha), not the attr's decimal value), widened to the compute precision."""
    return _widen(np.asarray(np.float32(alpha)).astype(dtype))


@kernel_factory("LeakyRelu")
def _leaky_relu(node):
    alpha = node.attrs["alpha"]

    def compute(ctx, x):
        xf = _widen(x)
        return _narrow(np.where(xf > 0, xf, xf * _alpha_as(alpha, x.dtype)), x.dtype)

    return compute


@kernel_factory("LeakyReluGrad")
def _leaky_relu_grad(node):
    alpha = node.attrs["alpha"]

    def compute(ctx, g, x):
        gf = _widen(g)
        return _narrow(np.where(x > 0, gf, gf * _alpha_as(alpha, g.dtype)), g.dtype)

    return compute


# ---- softmax and cross entropy ---------------------------------------------------------


def _shifted_exp(x):
    """(x - max, exp(x - max), sum of exp) over the last axis, in compute precision."""
    xf = _widen(x)  # the ufuncs' reduce: what np.max and np.sum call, without their wrappers
    shifted = xf - np.maximum.reduce(xf, axis=-1, keepdims=True)
    e = np.exp(shifted)
    return shifted, e, np.add.reduce(e, axis=-1, keepdims=True)


@kernel("Softmax")
def _softmax(ctx, x):
    if x.size == 0:
        return x.copy()
    _, e, s = _shifted_exp(x)
    e /= s
    return _narrow(e, x.dtype)


@kernel("LogSoftmax")
def _log_softmax(ctx, x):
    if x.size == 0:
        return x.copy()
    shifted, _, s = _shifted_exp(x)
    shifted -= np.log(s)
    return _narrow(shifted, x.dtype)


@kernel("SoftmaxCrossEntropyWithLogits")
def _softmax_xent(ctx, features, labels):
    if features.ndim != 2 or labels.ndim != 2:
        raise _invalid(f"logits and labels must be either 2-dimensional, or broadcasted to be "
                       f"2-dimensional: logits={features.shape} labels={labels.shape}")
    try:
        f, l = np.broadcast_arrays(features, labels)
    except ValueError:
        raise _invalid(f"logits and labels must be broadcastable: logits_size=["
                       f"{','.join(map(str, features.shape))}] labels_size=["
                       f"{','.join(map(str, labels.shape))}]") from None
    dtype = features.dtype
    if f.shape[1] == 0:
        return np.zeros(f.shape[0], dtype), np.zeros(f.shape, dtype)
    shifted, e, s = _shifted_exp(f)
    lf = _widen(l)
    loss = np.sum(lf * (np.log(s) - shifted), axis=1)
    backprop = e / s - lf
    return _narrow(loss, dtype), _narrow(backprop, dtype)


@kernel("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_softmax_xent(ctx, features, labels):
    if features.ndim != 2 or labels.ndim != 1 or labels.shape[0] != features.shape[0]:
        raise _invalid(f"logits and labels must have the same first dimension, got logits "
                       f"shape {list(features.shape)} and labels shape {list(labels.shape)}")
    batch, classes = features.shape
    done = native.sparse_xent(features, labels)  # small inputs: one pass in C
    if done is not None and done[2] < 0:
        return done[0], done[1]
    bad = (labels < 0) | (labels >= classes)
    if bad.any():
        first = labels[int(np.argmax(bad))]
        values = " ".join(str(int(v)) for v in labels.reshape(-1))
        raise _invalid(f"Received a label value of {first} which is outside the valid range "
                       f"of [0, {classes}).  Label values: {values}")
    dtype = features.dtype
    if classes == 0:
        return np.zeros(batch, dtype), np.zeros(features.shape, dtype)
    shifted, e, s = _shifted_exp(features)
    rows = np.arange(batch)
    loss = np.log(s[:, 0]) - shifted[rows, labels]
    e /= s
    e[rows, labels] -= 1
    return _narrow(loss, dtype), _narrow(e, dtype)


# ---- BiasAdd, L2Loss, LRN, InTopK --------------------------------------------------------


def _channel_axis(data_format: str, ndim: int) -> int:
    return 1 if data_format.startswith("NC") and ndim >= 3 else ndim - 1


@kernel_factory("BiasAdd", reuses_inputs=(0,))
def _bias_add(node):
    data_format = node.attrs.get("data_format", "NHWC")

    def compute(ctx, value, bias, donated=()):
        axis = _channel_axis(data_format, value.ndim)
        if bias.ndim != 1 or value.ndim < 2 or bias.shape[0] != value.shape[axis]:
            raise _invalid(f"Must provide as many biases as the last dimension of the input "
                           f"tensor: {list(bias.shape)} vs. {list(value.shape)}")
        if axis == value.ndim - 1 and value.dtype == bias.dtype:
            # NHWC: x + bias, tiled and split
            return _last_axis_add(ctx, value, bias, donated)
        b = bias.reshape((-1,) + (1,) * (value.ndim - 1 - axis))
        out = buffers.donated_output((value,), donated, value.shape, value.dtype) \
            if donated else None
        out = np.empty(value.shape, value.dtype) if out is None else out
        return intra_op.split_elementwise(lambda o, v: np.add(v, b, out=o, dtype=value.dtype),
                                          out, value, parts=intra_op.workers(ctx))

    return compute


@kernel_factory("BiasAddGrad")
def _bias_add_grad(node):
    data_format = node.attrs.get("data_format", "NHWC")

    def compute(ctx, g):
        axis = _channel_axis(data_format, g.ndim)
        axes = tuple(a for a in range(g.ndim) if a != axis)
        if axis == g.ndim - 1 and g.dtype in (np.float32, np.float64):
            return _leading_sum(g, axes, False)  # ones @ rows: one BLAS gemv
        if g.dtype.kind == "f" or g.dtype.kind == "c" or g.dtype in _LOW_PRECISION:
            return _narrow(np.sum(_widen(g), axis=axes), g.dtype)
        return np.sum(g, axis=axes, dtype=g.dtype)

    return compute


@kernel("L2Loss")
def _l2_loss(ctx, t):
    tf_ = _widen(t).reshape(-1)
    return _narrow(np.dot(tf_, tf_) * 0.5, t.dtype)[()]


def _depth_window_sum(a: np.ndarray, radius: int) -> np.ndarray:
    """sum of a[..., d - radius : d + radius + 1] for each d (zeros beyond the edges)."""
    depth = a.shape[-1]
    out = a.copy()
    for off in range(1, min(radius, depth - 1) + 1):
        out[..., off:] += a[..., :-off]
        out[..., :-off] += a[..., off:]
    return out


def _positions(a: np.ndarray) -> np.ndarray:
    """A 4-D NHWC tensor as (positions, depth) rows: LRN normalizes each position's depth
    vector by itself, so its kernels run in blocks of positions, the step checked between
    them (one 1024^2 x 32 image took 1.1 s in one call), with the values of one call."""
    return a.reshape(-1, a.shape[-1])


def _lrn_attrs(node):
    a = node.attrs
    return a["depth_radius"], a["bias"], a["alpha"], a["beta"]


def _check_radius(radius: int) -> None:
    """TF's kernels take depth_radius in [0, INT_MAX) (from a GraphDef it may be anything)."""
    if not 0 <= radius < 2**31 - 1:
        raise _invalid(f"depth_radius = {radius} larger than int max")


@kernel_factory("LRN")
def _lrn(node):
    radius, bias, alpha, beta = _lrn_attrs(node)

    def compute(ctx, x):
        _check_radius(radius)
        if x.ndim != 4:
            raise _invalid(f"input must be 4-dimensional, got {list(x.shape)}")
        out = np.empty(x.shape, x.dtype)
        if x.size == 0:
            return out
        rows, out_rows = _positions(x), out.reshape(-1, x.shape[-1])
        for lo, hi in interrupt.spans(rows.shape[0], rows.shape[1], ctx):
            xf = _widen(rows[lo:hi])
            norm = bias + alpha * _depth_window_sum(xf * xf, radius)
            out_rows[lo:hi] = _narrow(xf * norm ** -beta, x.dtype)
        return out

    return compute


@kernel_factory("LRNGrad")
def _lrn_grad(node):
    radius, bias, alpha, beta = _lrn_attrs(node)

    def compute(ctx, g, x, y):
        _check_radius(radius)
        if not (g.ndim == x.ndim == y.ndim == 4) or not (g.shape == x.shape == y.shape):
            raise _invalid("input_grads, input_image, and out_image should have the same "
                           "shape")
        out = np.empty(g.shape, g.dtype)
        if g.size == 0:
            return out
        g_rows, x_rows, y_rows = _positions(g), _positions(x), _positions(y)
        out_rows = out.reshape(-1, g.shape[-1])
        for lo, hi in interrupt.spans(g_rows.shape[0], g_rows.shape[1], ctx):
            gf, xf, yf = _widen(g_rows[lo:hi]), _widen(x_rows[lo:hi]), _widen(y_rows[lo:hi])
            norm = bias + alpha * _depth_window_sum(xf * xf, radius)
            # dx_j = g_j N_j^-beta - 2 alpha beta x_j sum_{i in window(j)} g_i y_i / N_i
            dx = gf * norm ** -beta
            dx -= (2 * alpha * beta) * xf * _depth_window_sum(gf * yf / norm, radius)
            out_rows[lo:hi] = _narrow(dx, g.dtype)
        return out

    return compute


@kernel("InTopKV2")
def _in_top_k(ctx, predictions, targets, k):
    if predictions.ndim != 2:
        raise _invalid(f"predictions must be 2-dimensional, got {list(predictions.shape)}")
    if targets.ndim != 1 or targets.shape[0] != predictions.shape[0]:
        raise _invalid("First dimension of predictions " f"{predictions.shape[0]} must match "
                       f"length of targets {targets.shape[0] if targets.ndim else 0}")
    batch, classes = predictions.shape
    valid = (targets >= 0) & (targets < classes)
    target_pred = predictions[np.arange(batch), np.where(valid, targets, 0)]
    more = np.sum(predictions > target_pred[:, None], axis=1)
    finite = np.isfinite(predictions).all(axis=1) if classes else np.ones(batch, bool)
    return valid & finite & (more < int(k))



# ---- ApproxTopK: exact on CPU, as TensorFlow's (its TopK kernel) -------------------------


@kernel_factory("ApproxTopK")
def _approx_top_k(node):
    k, axis = node.attrs["k"], node.attrs["reduction_dimension"]
    largest = node.attrs["is_max_k"]

    def compute(ctx, x):
        if x.ndim < 1:
            raise _invalid(f"input must be >= 1-D, got shape {list(x.shape)}")
        if not -x.ndim <= axis < x.ndim:
            raise _invalid(f"Invalid reduction dimension: {axis}. Must be within the range "
                           f"of [{-x.ndim}, {x.ndim - 1}]")
        dim = axis % x.ndim
        if x.shape[dim] < k:
            raise _invalid(f"input must have at least k columns. Had {x.shape[dim]}, needed "
                           f"{k}")
        rows = np.moveaxis(x, dim, -1)
        key = np.ascontiguousarray(rows if largest else np.negative(rows))
        idx = _top_k_by_rows(ctx, key, k)
        values = np.take_along_axis(rows, idx, axis=-1)
        return (np.ascontiguousarray(np.moveaxis(values, -1, dim)),
                np.ascontiguousarray(np.moveaxis(idx, -1, dim)).astype(np.int32))

    return compute
