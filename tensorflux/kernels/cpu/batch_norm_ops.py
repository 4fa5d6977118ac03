"""CPU kernels of the fused batch norms and their gradients (contract in
tensorflux/ops/batch_norm_ops.py). Statistics are reduced over every axis but the
channel axis, in float32 for half and bfloat16 data (float64 data stays float64).

Channel-last float32/float64 data (NHWC, NDHWC: the layout of every CPU model) takes a
chunked path (`_rows_stats`, `_rows_normalize`, `_rows_backward`): the data seen as a
(rows, C) matrix is cut into cache-sized row blocks that the intra-op threads claim, each
pass over a block keeps its temporaries in cache, and the per-channel sums are summed per
group of blocks, then over the groups, in an order fixed by the sizes and the thread count
(intra_op.parallel_sum). Same formulas as the general path (the normalized value as
(x - mean) * (inv * scale) + offset), up to the order of the sums, except that the variance
comes from one pass over shifted data (`_rows_stats`) rather than two.

With the C extension (native.py `bn_sums`, `bn_rows`) each of these is one pass over the
rows: the per-channel sums run in float32 over blocks of 32 rows, added into float64 per
chunk and over chunks in chunk order (closer to the exact sums than the NumPy path's float32
running sums, and the same on any number of threads), and the elementwise passes
(normalize, dx) give the NumPy passes' values bit for bit. ResNet-50's 56x56x64 layer:
forward 3.5 -> 0.6 ms, gradient 4.5 -> 0.9 ms of CPU.

_FusedBatchNormEx and _FusedBatchNormGradEx (activation_mode "Relu", made by the graph
optimizer) fold a ReLU into these passes: the forward's normalize pass writes
max(y, 0) (the Relu kernel's operation: NaN stays NaN), or max(y + side_input, 0) with a
side input (AddV2 then Relu: a residual block's tail), the gradient's passes read
dy * (relu_y > 0) (the ReluGrad kernel's product) where they read dy; the values are the
unfused kernels' bit for bit, and a Relu pass and a ReluGrad pass over the activations are
saved per layer. Other layouts and types apply the Relu and ReluGrad kernels' operations
around the unfused code.

Channel-first float32/float64 data (NCHW, NCDHW) takes the same C loops in their
channel-first form (native.py `bn_cf_sums`, `bn_cf_rows`: N * C rows of H * W elements, one
channel per row; `_planes_*`): the same formulas and elementwise operations, the sums in
another order (per row over 16 lanes, into float64). The general path's reductions over axes
(0, 2, 3) took 4-5x the channel-last time: a (64, 16, 32, 32) float32 forward
1.24 -> 0.3 ms, its gradient 2.8 -> 0.6 ms (the step figures in benchmarks/programs/
nchw_resnet.py).
"""

from __future__ import annotations

import numpy as np

from tensorflux.kernels import intra_op
from tensorflux.kernels.cpu import native
from tensorflux.kernels.cpu._nn_common import _invalid, _narrow, _widen
from tensorflux.kernels.registry import kernel_factory


def _layout(data_format: str, ndim: int):
    """(reduction axes, shape that broadcasts a per-channel vector) of `data_format`."""
    if len(data_format) != ndim:
        raise _invalid(f"input must be {len(data_format)}-dimensional for data_format "
                       f"{data_format}, got shape rank {ndim}")
    c = 1 if data_format[1] == "C" else ndim - 1
    bshape = [1] * ndim
    bshape[c] = -1
    return tuple(i for i in range(ndim) if i != c), bshape, c


def _vec(v, channels, what):
    v = np.asarray(v)
    if v.shape != (channels,):
        raise _invalid(f"{what} must have shape [{channels}], got {list(v.shape)}")
    return v.astype(np.float32) if v.dtype != np.float64 else v


def _fast(c: int, *arrays) -> bool:
    """Whether the chunked channel-last path takes these arrays."""
    return (c == arrays[0].ndim - 1 and arrays[0].size > 0
            and all(a.dtype == arrays[0].dtype and a.dtype in (np.float32, np.float64)
                    and a.flags.c_contiguous for a in arrays))


def _channel_sums(ctx, fn, rows: int, channels: int, dtype, count: int):
    """`count` per-channel sums: `fn(lo, hi, sums)` adds row block [lo, hi)'s into `sums`
    (count, C); blocks run on the intra-op threads, summed in a fixed order
    (intra_op.parallel_sum: the same bits whichever thread ran which block)."""
    return intra_op.parallel_sum(fn, rows, intra_op.row_grain(rows, rows * channels),
                                 intra_op.workers(ctx),
                                 lambda: np.zeros((count, channels), dtype))


def _scratch(channels: int, dtype):
    """A per-thread scratch block getter: `get(k)` is a (k, C) array, reused across blocks
    (a fresh cache-sized temporary per block would be a fresh mapping of pages each time)."""
    state, _ = intra_op.per_thread(lambda: [np.empty((0, channels), dtype)])

    def get(k):
        box = state()
        if box[0].shape[0] < k:
            box[0] = np.empty((k, channels), dtype)
        return box[0][:k]

    return get


def _rows_stats(ctx, x2):
    """(mean, biased variance) per channel of `x2` (rows, C) in one pass: the sums of
    x - x0 and of its squares, x0 the first row (a shift near the mean keeps the
    difference of the two sums from cancelling)."""
    rows, channels = x2.shape
    x0 = x2[0].copy()
    sums = native.bn_sums(0, x2, x2, x0, intra_op.workers(ctx))
    if sums is not None:  # one pass in C, the sums in float64
        shift = sums[0] / rows
        var = np.maximum(sums[1] / rows - shift * shift, 0)
        return (x0 + shift).astype(x2.dtype), var.astype(x2.dtype)
    scratch = _scratch(channels, x2.dtype)

    def add_sums(lo, hi, acc):
        d = np.subtract(x2[lo:hi], x0, out=scratch(hi - lo))
        acc[0] += np.add.reduce(d, axis=0)
        np.multiply(d, d, out=d)
        acc[1] += np.add.reduce(d, axis=0)

    s1, s2 = _channel_sums(ctx, add_sums, rows, channels, x2.dtype, 2)
    shift = s1 / rows
    return x0 + shift, np.maximum(s2 / rows - shift * shift, 0)


def _relu_inplace(y):
    """max(y, 0) into y (the Relu kernel's operation)."""
    if native.relu(y, 1, y) is None:
        np.maximum(y, np.zeros((), y.dtype), out=y)
    return y


def _relu_masked(dy, relu_y):
    """dy * (relu_y > 0) (the ReluGrad kernel's product), a new array."""
    if dy.shape != relu_y.shape:
        raise _invalid(f"y_backprop and y must have the same shape: {list(dy.shape)} vs "
                       f"{list(relu_y.shape)}")
    out = native.relu_grad(dy, relu_y, 1)
    if out is None:
        out = np.multiply(dy, np.greater(relu_y, 0), dtype=dy.dtype)
    return out


def _rows_normalize(ctx, x2, m, a, offset, relu=False, side2=None):
    """(x2 - m) * a + offset, per row block (+ side2, then max(., 0) with `relu`)."""
    y = np.empty_like(x2)
    if side2 is not None:
        if relu and native.bn_rows(6, x2, x2, y, m, a, offset, offset, intra_op.workers(ctx),
                                   side2):
            return y
        y = np.add(_rows_normalize(ctx, x2, m, a, offset), side2)
        return _relu_inplace(y) if relu else y
    if native.bn_rows(3 if relu else 0, x2, x2, y, m, a, offset, offset,
                      intra_op.workers(ctx)):
        return y
    if relu:
        return _relu_inplace(_rows_normalize(ctx, x2, m, a, offset))

    def work(lo, hi):
        out = y[lo:hi]
        np.subtract(x2[lo:hi], m, out=out)
        out *= a
        out += offset

    intra_op.parallel_rows(work, x2.shape[0], x2.size, intra_op.workers(ctx))
    return y


def _first(c: int, *arrays) -> bool:
    """Whether the channel-first native path takes these arrays (NCHW, NCDHW)."""
    x = arrays[0]
    return (c == 1 and x.ndim >= 3 and x.size > 0 and native.available()
            and all(type(a) is np.ndarray and a.dtype == x.dtype
                    and a.dtype in (np.float32, np.float64) and a.shape == x.shape
                    and a.flags.c_contiguous for a in arrays))


def _planes_stats(ctx, x):
    """(mean, biased variance) per channel of channel-first `x`, one pass (as
    `_rows_stats`, the shift each channel's first element)."""
    count = x.size // x.shape[1]
    x0 = np.ascontiguousarray(x.reshape(x.shape[0], x.shape[1], -1)[0, :, 0])
    sums = native.bn_cf_sums(0, x, x, x0, intra_op.workers(ctx))
    shift = sums[0] / count
    var = np.maximum(sums[1] / count - shift * shift, 0)
    return (x0 + shift).astype(x.dtype), var.astype(x.dtype)


def _planes_normalize(ctx, x, m, a, offset, relu=False, side=None):
    """`_rows_normalize` of channel-first `x` (the same kinds of bn_rows)."""
    y = np.empty_like(x)
    parts = intra_op.workers(ctx)
    if side is not None:
        if relu:
            native.bn_cf_rows(6, x, x, y, m, a, offset, offset, parts, side)
            return y
        native.bn_cf_rows(0, x, x, y, m, a, offset, offset, parts)
        return np.add(y, side)
    native.bn_cf_rows(3 if relu else 0, x, x, y, m, a, offset, offset, parts)
    return y


def _planes_backward(ctx, dy, x, scale, m, inv, training: bool, relu_y=None):
    """`_rows_backward` of channel-first `dy`, `x` (`relu_y` a fused ReLU's output)."""
    count = x.size // x.shape[1]
    parts = intra_op.workers(ctx)
    sums = native.bn_cf_sums(1 if relu_y is None else 2, x, dy, m, parts, relu_y)
    d_offset, centred = sums.astype(x.dtype)
    d_scale = centred * inv
    k1 = scale * inv
    k2, k3 = k1 * inv * d_scale / count, k1 * d_offset / count
    dx = np.empty_like(x)
    kind = (1 if training else 2) + (3 if relu_y is not None else 0)
    native.bn_cf_rows(kind, x, dy, dx, m, k1, k2, k3, parts, relu_y)
    return dx, d_scale, d_offset


def _forward(node, ctx, x, scale, offset, mean, variance, *side_inputs):
    a = node.attrs
    data_format = a.get("data_format", "NHWC")
    relu = _activation(node)
    if len(side_inputs) > 1:
        raise _invalid("at most one side input is supported")
    side = side_inputs[0] if side_inputs else None
    axes, bshape, c = _layout(data_format, x.ndim)
    eps, factor = float(a.get("epsilon", 1e-4)), float(a.get("exponential_avg_factor", 1.0))
    channels = x.shape[c]
    xw = _widen(x)
    scale, offset = _vec(scale, channels, "scale"), _vec(offset, channels, "offset")
    fast = _fast(c, xw)
    first = not fast and _first(c, xw)
    if fast or first:
        scale, offset = scale.astype(xw.dtype), offset.astype(xw.dtype)
    if a.get("is_training", True):
        n = x.size // max(channels, 1)
        if fast:
            m, v = _rows_stats(ctx, xw.reshape(-1, channels))
        elif first:
            m, v = _planes_stats(ctx, xw)
        else:
            m = xw.mean(axis=axes) if n else np.full(channels, np.nan, np.float32)
            v = xw.var(axis=axes) if n else np.full(channels, np.nan, np.float32)
        corrected = v * n / (n - 1) if n > 1 else np.zeros_like(v)
        batch_mean, batch_var = m, corrected
        if factor != 1.0:
            batch_mean = (1 - factor) * _vec(mean, channels, "mean") + factor * m
            batch_var = (1 - factor) * _vec(variance, channels, "variance") + factor * corrected
        use_m, use_v, saved = m, v, (m, v)
    else:
        use_m, use_v = _vec(mean, channels, "mean"), _vec(variance, channels, "variance")
        batch_mean, batch_var, saved = use_m, use_v, (use_m, use_v)
    inv = 1.0 / np.sqrt(use_v + eps)
    if first and (side is None or _first(c, xw, side)):
        y = _planes_normalize(ctx, xw, use_m.astype(xw.dtype), (inv * scale).astype(xw.dtype),
                              offset, relu, side)
        relu = side = None
    elif first:
        y = _planes_normalize(ctx, xw, use_m.astype(xw.dtype), (inv * scale).astype(xw.dtype),
                              offset)
    elif fast and (side is None or (side.shape == x.shape and side.dtype == xw.dtype
                                  and side.flags.c_contiguous)):
        y = _rows_normalize(ctx, xw.reshape(-1, channels), use_m.astype(xw.dtype),
                            (inv * scale).astype(xw.dtype), offset, relu,
                            None if side is None else side.reshape(-1, channels))
        y = y.reshape(x.shape)
        relu = side = None
    elif fast:
        y = _rows_normalize(ctx, xw.reshape(-1, channels), use_m.astype(xw.dtype),
                            (inv * scale).astype(xw.dtype), offset).reshape(x.shape)
    else:
        y = (xw - use_m.reshape(bshape)) * (inv * scale).reshape(bshape) \
            + offset.reshape(bshape)
    y = _narrow(y, x.dtype)
    if side is not None:  # (AddV2's sum, broadcasting as it does)
        y = np.add(y, side)
    if relu:
        y = _relu_inplace(y if y.flags.writeable and y.flags.c_contiguous else y.copy())
    u = np.float32
    outs = [y, batch_mean.astype(u), batch_var.astype(u),
            saved[0].astype(u), saved[1].astype(u)]
    if node.op in ("FusedBatchNormV3", "_FusedBatchNormEx"):
        outs.append(np.zeros(0, u))
    return outs


def _activation(node) -> bool:
    """Whether a ReLU is fused in (the Ex ops' activation_mode)."""
    mode = node.attrs.get("activation_mode", "Identity")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode not in ("Identity", "Relu"):
        raise _invalid(f"activation_mode {mode!r} is not supported (Identity or Relu)")
    return mode == "Relu"


@kernel_factory("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3", "_FusedBatchNormEx",
                expensive=True)
def _fused_batch_norm(node):
    return lambda ctx, *inputs: _forward(node, ctx, *inputs)


def _rows_backward(ctx, dy2, x2, scale, m, inv, training: bool, relu2=None):
    """(dx, d_scale, d_offset) of the channel-last path: one pass for the two per-channel
    sums (of dy and of dy * (x - mean)), one for dx. With `relu2` (a fused ReLU's output),
    dy * (relu2 > 0) is read for dy."""
    rows, channels = x2.shape
    parts = intra_op.workers(ctx)
    scratch = _scratch(channels, x2.dtype)
    if relu2 is not None:
        sums = native.bn_sums(2, x2, dy2, m, parts, relu2)
        if sums is None:
            return _rows_backward(ctx, _relu_masked(dy2, relu2), x2, scale, m, inv, training)
    else:
        sums = native.bn_sums(1, x2, dy2, m, parts)
    if sums is not None:  # one pass in C, the sums in float64
        d_offset, centred = sums.astype(x2.dtype)
    else:
        def add_sums(lo, hi, acc):
            d = np.subtract(x2[lo:hi], m, out=scratch(hi - lo))
            acc[0] += np.add.reduce(dy2[lo:hi], axis=0)
            np.multiply(d, dy2[lo:hi], out=d)
            acc[1] += np.add.reduce(d, axis=0)

        d_offset, centred = _channel_sums(ctx, add_sums, rows, channels, x2.dtype, 2)
    d_scale = centred * inv
    k1 = scale * inv
    # dx = k1 * dy - k2 * (x - mean) - k3 in training, k1 * dy at inference.
    k2, k3 = k1 * inv * d_scale / rows, k1 * d_offset / rows
    dx = np.empty_like(x2)
    kind = (1 if training else 2) + (3 if relu2 is not None else 0)
    if native.bn_rows(kind, x2, dy2, dx, m, k1, k2, k3, parts, relu2):
        return dx, d_scale, d_offset
    if relu2 is not None:
        dy2 = _relu_masked(dy2, relu2)

    def work(lo, hi):
        out = dx[lo:hi]
        np.multiply(dy2[lo:hi], k1, out=out)
        if training:
            d = np.subtract(x2[lo:hi], m, out=scratch(hi - lo))
            d *= k2
            out -= d
            out -= k3

    intra_op.parallel_rows(work, rows, x2.size, parts)
    return dx, d_scale, d_offset


def _backward(node, ctx, dy, x, scale, saved_mean, saved_var, *rest):
    a = node.attrs
    data_format = a.get("data_format", "NHWC")
    relu_y = None
    if node.op == "_FusedBatchNormGradEx":
        if len(rest) != 3:
            raise _invalid("side inputs are not supported")
        if _activation(node):
            relu_y = rest[2]
            if relu_y.shape != dy.shape:
                raise _invalid(f"y_backprop and y must have the same shape: "
                               f"{list(dy.shape)} vs {list(relu_y.shape)}")
    axes, bshape, c = _layout(data_format, x.ndim)
    channels = x.shape[c]
    eps = float(a.get("epsilon", 1e-4))
    dyw, xw = _widen(dy), _widen(x)
    scale = _vec(scale, channels, "scale")
    m, v = _vec(saved_mean, channels, "mean"), _vec(saved_var, channels, "variance")
    inv = 1.0 / np.sqrt(v + eps)
    u = np.float32
    if relu_y is not None and not (relu_y.dtype == dy.dtype and (
            _fast(c, dyw, xw, relu_y) or _first(c, dyw, xw, relu_y))):
        dyw, relu_y = _widen(_relu_masked(dy, relu_y)), None
    if _fast(c, dyw, xw):
        t = xw.dtype
        dx, d_scale, d_offset = _rows_backward(
            ctx, dyw.reshape(-1, channels), xw.reshape(-1, channels), scale.astype(t),
            m.astype(t), inv.astype(t), a.get("is_training", True),
            None if relu_y is None else relu_y.reshape(-1, channels))
        return [_narrow(dx.reshape(x.shape), x.dtype), d_scale.astype(u),
                d_offset.astype(u), np.zeros(0, u), np.zeros(0, u)]
    if _first(c, dyw, xw):
        t = xw.dtype
        dx, d_scale, d_offset = _planes_backward(
            ctx, dyw, xw, scale.astype(t), m.astype(t), inv.astype(t),
            a.get("is_training", True), relu_y)
        return [_narrow(dx, x.dtype), d_scale.astype(u), d_offset.astype(u), np.zeros(0, u),
                np.zeros(0, u)]
    dx, d_scale, d_offset = general_backward(dyw, xw, scale, m, inv, axes, bshape,
                                             a.get("is_training", True))
    return [_narrow(dx, x.dtype), d_scale.astype(u), d_offset.astype(u), np.zeros(0, u),
            np.zeros(0, u)]


def general_backward(dyw, xw, scale, m, inv, axes, bshape, training: bool):
    """(dx, d_scale, d_offset) from array methods and operators only, so that NumPy and
    CuPy arrays both serve (the GPU kernel's path; here any layout and dtype)."""
    x_hat = (xw - m.reshape(bshape)) * inv.reshape(bshape)
    d_offset = dyw.sum(axis=axes)
    d_scale = (dyw * x_hat).sum(axis=axes)
    if training:
        n = max(xw.size // max(m.size, 1), 1)
        dx = (scale * inv).reshape(bshape) / n * (
            n * dyw - d_offset.reshape(bshape) - x_hat * d_scale.reshape(bshape))
    else:
        dx = dyw * (scale * inv).reshape(bshape)
    return dx, d_scale, d_offset


@kernel_factory("FusedBatchNormGrad", "FusedBatchNormGradV2", "FusedBatchNormGradV3",
                "_FusedBatchNormGradEx", expensive=True)
def _fused_batch_norm_grad(node):
    return lambda ctx, *inputs: _backward(node, ctx, *inputs)
