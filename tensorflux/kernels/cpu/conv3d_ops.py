"""CPU kernels of Conv3D, its backprops, and the 3-D pools with their gradients.

Convolutions are im2col + one matrix product: the windows of the padded input, a strided
view (kernels/cpu/_windows_nd.py), become the rows of a (N*od*oh*ow, kd*kh*kw*C) matrix
times the filter (kd*kh*kw*C, F). The filter gradient is that matrix transposed times
out_backprop; the input gradient is out_backprop times the filter transposed, each tap's
columns added back where the tap read (col2im). Max pooling takes the max over the window
axes of the view padded with -inf; its gradient goes to every input that equals its
window's max (as TF's CPU MaxPool3DGrad does). Average pooling divides by the number of
window elements inside the input. half and bfloat16 compute in float32.
"""

from __future__ import annotations

import math

import numpy as np

from tensorflux.kernels import interrupt
from tensorflux.kernels.cpu import _windows_nd as win
from tensorflux.kernels.cpu._nn_common import _checked, _invalid, _narrow, _widen
from tensorflux.kernels.registry import kernel_factory


def _sizes5(sizes, what):
    sizes = [int(s) for s in np.reshape(sizes, -1)]
    if len(sizes) != 5:
        raise _invalid(f"{what} must specify 5 dimensions, got {len(sizes)}")
    return sizes


def _to_last_shape(shape, fmt):
    return [shape[0], shape[2], shape[3], shape[4], shape[1]] if fmt == "NCDHW" else shape


class _Conv3D:
    """A Conv3D-family node's strides, dilations, padding and data format."""

    def __init__(self, node):
        a = node.attrs
        self.fmt = a.get("data_format", "NDHWC")
        self.strides = win.spatial_attr(a["strides"], self.fmt, "strides")
        self.dilations = win.spatial_attr(a.get("dilations") or [1] * 5, self.fmt,
                                          "dilations")
        self.padding = a["padding"]

    def geometry(self, x_shape, w_shape) -> win.WindowGeometry:
        if len(x_shape) != 5 or len(w_shape) != 5:
            raise _invalid(f"input and filter must be 5-dimensional: {list(x_shape)}, "
                           f"{list(w_shape)}")
        if x_shape[-1] != w_shape[3]:
            raise _invalid(f"Input depth must be equal to filter depth: {x_shape[-1]} vs "
                           f"{w_shape[3]}")
        return win.WindowGeometry(x_shape[1:4], w_shape[:3], self.strides, self.dilations,
                                  self.padding)


def _check_dy(dy, g: win.WindowGeometry, n):
    if list(dy.shape[1:4]) != g.out or dy.shape[0] != n:
        raise _invalid(f"Size of out_backprop doesn't match computed: actual = "
                       f"{list(dy.shape[:4])}, computed = {[n] + g.out}")


@kernel_factory("Conv3D", expensive=True)
@_checked
def _conv3d(node):
    c = _Conv3D(node)

    def compute(ctx, x, w):
        if x.ndim != 5 or w.ndim != 5:
            raise _invalid("input and filter must be 5-dimensional")
        xl = _widen(win.to_channels_last(x, c.fmt))
        g = c.geometry(xl.shape, w.shape)
        k = int(np.prod(w.shape[:4]))
        w2 = _widen(w).reshape(k, -1)
        view = win.patches(xl, g)
        out = np.empty((xl.shape[0], *g.out, w.shape[4]), np.result_type(xl, w2))
        for b in win.blocks(xl.shape[0], g.out[0], int(np.prod(g.out)) * k * xl.itemsize):
            out[b] = (view[b].reshape(-1, k) @ w2).reshape(out[b].shape)
        return win.from_channels_last(_narrow(out, x.dtype), c.fmt)

    return compute


@kernel_factory("Conv3DBackpropInputV2", expensive=True)
@_checked
def _conv3d_backprop_input(node):
    c = _Conv3D(node)

    def compute(ctx, input_sizes, w, dy):
        shape = _to_last_shape(_sizes5(input_sizes, "input_sizes"), c.fmt)
        dyl = _widen(win.to_channels_last(dy, c.fmt))
        g = c.geometry(shape, w.shape)
        _check_dy(dyl, g, shape[0])
        w2t = _widen(w).reshape(-1, w.shape[4]).T
        acc = win.padded_zeros(shape, g, np.result_type(dyl, w2t))
        per_item = int(np.prod(g.out)) * w2t.shape[1] * acc.itemsize
        for b in win.blocks(shape[0], g.out[0], per_item):
            part = dyl[b]
            cols = (part.reshape(-1, w.shape[4]) @ w2t).reshape(
                *part.shape[:-1], *w.shape[:4])
            win.scatter_taps_into(acc, cols, g, b)
        out = win.cropped(acc, shape, g)
        return win.from_channels_last(_narrow(out, dy.dtype), c.fmt)

    return compute


@kernel_factory("Conv3DBackpropFilterV2", expensive=True)
@_checked
def _conv3d_backprop_filter(node):
    c = _Conv3D(node)

    def compute(ctx, x, filter_sizes, dy):
        w_shape = _sizes5(filter_sizes, "filter_sizes")
        xl = _widen(win.to_channels_last(x, c.fmt))
        dyl = _widen(win.to_channels_last(dy, c.fmt))
        g = c.geometry(xl.shape, w_shape)
        _check_dy(dyl, g, xl.shape[0])
        k = int(np.prod(w_shape[:4]))
        view = win.patches(xl, g)
        out = np.zeros((k, w_shape[4]), np.result_type(xl, dyl))
        for b in win.blocks(xl.shape[0], g.out[0], int(np.prod(g.out)) * k * xl.itemsize):
            out += view[b].reshape(-1, k).T @ dyl[b].reshape(-1, w_shape[4])
        return _narrow(out.reshape(w_shape), dy.dtype)

    return compute


# ---- 3-D pools ----------------------------------------------------------------------------


class _Pool3D:
    def __init__(self, node):
        a = node.attrs
        self.fmt = a.get("data_format", "NDHWC")
        self.ksize = win.spatial_attr(a["ksize"], self.fmt, "ksize")
        self.strides = win.spatial_attr(a["strides"], self.fmt, "strides")
        if any(k <= 0 for k in self.ksize):
            raise _invalid(f"Sliding window ksize must be positive: {self.ksize}")
        self.padding = a["padding"]

    def geometry(self, shape) -> win.WindowGeometry:
        """The windows over `shape` (channels last), cut to the taps that ever read the
        input: a tap that reads padding for every output changes no max, no average (which
        counts input elements only) and routes no gradient, so a window larger than its
        input costs the input's size, not the window's (as the 2-D pools,
        pooling_ops._PoolGeometry.resolve; TF answers such windows at once)."""
        if len(shape) != 5:
            raise _invalid(f"tensor_in must be 5-dimensional, got shape {list(shape)}")
        g = win.WindowGeometry(shape[1:4], self.ksize, self.strides, [1, 1, 1], self.padding)
        for axis, n in enumerate(shape[1:4]):
            o, k, s = g.out[axis], g.ksize[axis], g.strides[axis]
            b = g.pads[axis][0]
            lo = max(0, b - (o - 1) * s) if o > 0 else 0
            hi = max(min(k, b + n), lo + 1)
            if (lo, hi) != (0, k):
                k, b = hi - lo, b - lo
                g.ksize[axis] = k
                g.pads[axis] = (b, max(0, (o - 1) * s + k - b - n))
        return g


def _check_pooled(t, g: win.WindowGeometry, n, c, what):
    if list(t.shape) != [n, *g.out, c]:
        raise _invalid(f"{what} must have shape {[n, *g.out, c]} (channels last), got "
                       f"{list(t.shape)}")


_WINDOW_AXES = (4, 5, 6)


def _window_reduce(view, reduce, dtype):
    """`reduce(view, axis=_WINDOW_AXES)` of a windows view (N, O1, O2, O3, K1, K2, K3, C),
    in blocks of (batch item, rows of O1, columns of O2) of about interrupt.CHUNK_FLOPS / 8
    taps, checking the step between blocks (kernels/interrupt.py)."""
    n, o1, o2 = view.shape[:3]
    budget = interrupt.CHUNK_FLOPS / 8  # taps per block (strided reads: ~ns each)
    per_cell = math.prod(view.shape[3:])  # taps of one (item, row, column) line
    cols = max(1, min(o2, int(budget // max(1, per_cell))))
    rows = max(1, int(budget // max(1, per_cell * o2))) if cols == o2 else 1
    out = np.empty(view.shape[:4] + view.shape[-1:], dtype)
    for b in range(n):
        for r in interrupt.polled(range(0, o1, rows), every=1):
            for q in range(0, o2, cols):
                out[b, r:r + rows, q:q + cols] = reduce(view[b, r:r + rows, q:q + cols],
                                                        axis=(3, 4, 5))
                if cols < o2:
                    interrupt.check()
    return out


@kernel_factory("MaxPool3D", expensive=True)
@_checked
def _max_pool3d(node):
    p = _Pool3D(node)

    def compute(ctx, x):
        xl = _widen(win.to_channels_last(x, p.fmt))
        g = p.geometry(xl.shape)
        out = _window_reduce(win.patches(xl, g, fill=-np.inf), np.max, xl.dtype)
        return win.from_channels_last(_narrow(out, x.dtype), p.fmt)

    return compute


@kernel_factory("MaxPool3DGrad", expensive=True)
@_checked
def _max_pool3d_grad(node):
    p = _Pool3D(node)

    def compute(ctx, x, y, dy):
        xl = _widen(win.to_channels_last(x, p.fmt))
        g = p.geometry(xl.shape)
        yl = _widen(win.to_channels_last(y, p.fmt))
        dyl = _widen(win.to_channels_last(dy, p.fmt))
        _check_pooled(yl, g, xl.shape[0], xl.shape[-1], "orig_output")
        _check_pooled(dyl, g, xl.shape[0], xl.shape[-1], "grad")
        view = win.patches(xl, g, fill=-np.inf)
        at = (slice(None),) * 4 + (None, None, None)
        out = np.empty(xl.shape, dyl.dtype)
        per_item = int(np.prod(g.out)) * int(np.prod(g.ksize)) * xl.shape[-1] * 8
        for b in win.batch_chunks(xl.shape[0], per_item):
            routed = np.where(view[b] == yl[b][at], dyl[b][at], 0).astype(dyl.dtype)
            out[b] = win.scatter_taps(routed, (routed.shape[0],) + xl.shape[1:], g)
        return win.from_channels_last(_narrow(out, dy.dtype), p.fmt)

    return compute


@kernel_factory("MaxPool3DGradGrad", expensive=True)
@_checked
def _max_pool3d_grad_grad(node):
    """The adjoint of MaxPool3DGrad: per window, the sum of the input-shaped `grad` over
    the positions that hold the window's max."""
    p = _Pool3D(node)

    def compute(ctx, x, y, gg):
        xl = _widen(win.to_channels_last(x, p.fmt))
        g = p.geometry(xl.shape)
        yl = _widen(win.to_channels_last(y, p.fmt))
        _check_pooled(yl, g, xl.shape[0], xl.shape[-1], "orig_output")
        if gg.shape != x.shape:
            raise _invalid(f"grad must have the shape of orig_input {list(x.shape)}, got "
                           f"{list(gg.shape)}")
        at = (slice(None),) * 4 + (None, None, None)
        mask = win.patches(xl, g, fill=-np.inf) == yl[at]
        values = win.patches(_widen(win.to_channels_last(gg, p.fmt)), g)
        out = np.where(mask, values, 0).sum(axis=_WINDOW_AXES)
        return win.from_channels_last(_narrow(out, gg.dtype), p.fmt)

    return compute


@kernel_factory("AvgPool3D", expensive=True)
@_checked
def _avg_pool3d(node):
    p = _Pool3D(node)

    def compute(ctx, x):
        xl = _widen(win.to_channels_last(x, p.fmt))
        g = p.geometry(xl.shape)
        sums = _window_reduce(win.patches(xl, g), np.sum, xl.dtype)
        out = sums / win.valid_counts(xl.shape, g)[None, ..., None]
        return win.from_channels_last(_narrow(out, x.dtype), p.fmt)

    return compute


@kernel_factory("AvgPool3DGrad", expensive=True)
@_checked
def _avg_pool3d_grad(node):
    p = _Pool3D(node)

    def compute(ctx, orig_input_shape, dy):
        shape = _to_last_shape(_sizes5(orig_input_shape, "orig_input_shape"), p.fmt)
        dyl = _widen(win.to_channels_last(dy, p.fmt))
        g = p.geometry(shape)
        _check_pooled(dyl, g, shape[0], shape[-1], "grad")
        share = dyl / win.valid_counts(shape, g)[None, ..., None]
        cols = np.broadcast_to(share[(slice(None),) * 4 + (None, None, None)],
                               share.shape[:4] + tuple(g.ksize) + share.shape[4:])
        out = win.scatter_taps(cols, shape, g)
        return win.from_channels_last(_narrow(out, dy.dtype), p.fmt)

    return compute
