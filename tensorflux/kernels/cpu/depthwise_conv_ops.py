"""CPU kernels of DepthwiseConv2dNative and its backprops.

The windows of the padded NHWC input are a strided view (N, oh, ow, kh, kw, C)
(kernels/cpu/_windows_nd.py); the forward output is one contraction of that view with the
filter over the taps, per channel (`einsum` "nhwijc,ijcm->nhwcm"), the filter gradient the
contraction of the view with out_backprop over the positions, and the input gradient
out_backprop contracted with the filter into per-tap values added back where each tap read
(col2im). NCHW data is transposed in and out; half and bfloat16 compute in float32.
"""

from __future__ import annotations

import numpy as np

from tensorflux.kernels.cpu import _windows_nd as win
from tensorflux.kernels.cpu._nn_common import (
    _checked,
    _explicit_pairs,
    _invalid,
    _narrow,
    _sizes,
    _widen,
)
from tensorflux.kernels.registry import kernel_factory


class _Depthwise:
    def __init__(self, node):
        a = node.attrs
        self.fmt = a.get("data_format", "NHWC")
        self.strides = win.spatial_attr(a["strides"], self.fmt, "strides")
        self.dilations = win.spatial_attr(a.get("dilations") or [1] * 4, self.fmt,
                                          "dilations")
        self.padding = a["padding"]
        self.explicit = _explicit_pairs(a, (2, 3) if self.fmt == "NCHW" else (1, 2))

    def geometry(self, x_shape, w_shape) -> win.WindowGeometry:
        if len(x_shape) != 4 or len(w_shape) != 4:
            raise _invalid(f"input and filter must be 4-dimensional: {list(x_shape)}, "
                           f"{list(w_shape)}")
        if x_shape[3] != w_shape[2]:
            raise _invalid(f"input and filter must have the same depth: {x_shape[3]} vs "
                           f"{w_shape[2]}")
        return win.WindowGeometry(x_shape[1:3], w_shape[:2], self.strides, self.dilations,
                                  self.padding, self.explicit)

    def to_last(self, x):
        return _widen(win.to_channels_last(x, self.fmt))

    def shape_to_last(self, s):
        return [s[0], s[2], s[3], s[1]] if self.fmt == "NCHW" else s


def _per_item(g, w_shape, itemsize) -> int:
    """Bytes of the temporaries of one batch item (its patches and products)."""
    kh, kw, c, m = w_shape
    return int(np.prod(g.out)) * (kh * kw * c + c * m) * itemsize * 2


def _check_dy(dy, g, n, c, m):
    if list(dy.shape) != [n, *g.out, c * m]:
        raise _invalid(f"out_backprop has shape {list(dy.shape)}, expected "
                       f"{[n, *g.out, c * m]}")


@kernel_factory("DepthwiseConv2dNative", expensive=True)
@_checked
def _depthwise(node):
    d = _Depthwise(node)

    def compute(ctx, x, w):
        if x.ndim != 4 or w.ndim != 4:
            raise _invalid("input and filter must be 4-dimensional")
        xl = d.to_last(x)
        g = d.geometry(xl.shape, w.shape)
        view, ww = win.patches(xl, g), _widen(w)
        out = np.empty((xl.shape[0], *g.out, w.shape[2], w.shape[3]), np.result_type(xl, ww))
        for b in win.blocks(xl.shape[0], g.out[0], _per_item(g, w.shape, xl.itemsize)):
            out[b] = np.einsum("nhwijc,ijcm->nhwcm", view[b], ww, optimize=True)
        out = out.reshape(*out.shape[:3], -1)
        return win.from_channels_last(_narrow(out, x.dtype), d.fmt)

    return compute


@kernel_factory("DepthwiseConv2dNativeBackpropInput", expensive=True)
@_checked
def _depthwise_backprop_input(node):
    d = _Depthwise(node)

    def compute(ctx, input_sizes, w, dy):
        shape = d.shape_to_last(_sizes(input_sizes, "input_sizes"))
        dyl = d.to_last(dy)
        g = d.geometry(shape, w.shape)
        _check_dy(dyl, g, shape[0], w.shape[2], w.shape[3])
        c, m = w.shape[2], w.shape[3]
        dy5, ww = dyl.reshape(*dyl.shape[:3], c, m), _widen(w)
        acc = win.padded_zeros(shape, g, np.result_type(dy5, ww))
        for b in win.blocks(shape[0], g.out[0], _per_item(g, w.shape, acc.itemsize)):
            cols = np.einsum("nhwcm,ijcm->nhwijc", dy5[b], ww, optimize=True)
            win.scatter_taps_into(acc, cols, g, b)
        out = win.cropped(acc, shape, g)
        return win.from_channels_last(_narrow(out, dy.dtype), d.fmt)

    return compute


@kernel_factory("DepthwiseConv2dNativeBackpropFilter", expensive=True)
@_checked
def _depthwise_backprop_filter(node):
    d = _Depthwise(node)

    def compute(ctx, x, filter_sizes, dy):
        kh, kw, c, m = _sizes(filter_sizes, "filter_sizes")
        xl, dyl = d.to_last(x), d.to_last(dy)
        g = d.geometry(xl.shape, (kh, kw, c, m))
        _check_dy(dyl, g, xl.shape[0], c, m)
        view, dy5 = win.patches(xl, g), dyl.reshape(*dyl.shape[:3], c, m)
        out = np.zeros((kh, kw, c, m), np.result_type(xl, dy5))
        for b in win.blocks(xl.shape[0], g.out[0], _per_item(g, (kh, kw, c, m), xl.itemsize)):
            out += np.einsum("nhwijc,nhwcm->ijcm", view[b], dy5[b], optimize=True)
        return _narrow(out, dy.dtype)

    return compute
