"""GPU kernels of DepthwiseConv2dNative and its backprops (ops/nn_ops.py), tap by tap:
for each of the kh * kw filter taps, one elementwise pass over a strided slice of the
padded NHWC input (forward and filter gradient: a multiply, and a sum over positions for
the filter) or over the output gradient (input gradient: added back where the tap read).
The geometry, shapes and errors are the CPU kernels' (kernels/cpu/depthwise_conv_ops.py);
half floats compute in float32 as there.
"""

from __future__ import annotations

import numpy as np

from tensorflux.kernels.cpu._nn_common import _invalid, _sizes
from tensorflux.kernels.cpu.depthwise_conv_ops import _check_dy, _Depthwise
from tensorflux.kernels.gpu import backend
from tensorflux.kernels.gpu._common import FLOATS, hybrid


def _last(x, d: _Depthwise):
    x = x.transpose(0, 2, 3, 1) if d.fmt == "NCHW" else x
    return x.astype(np.float32) if x.dtype == np.float16 else x


def _from_last(x, d: _Depthwise, dtype):
    x = x.astype(dtype, copy=False)
    return backend.xp().ascontiguousarray(x.transpose(0, 3, 1, 2)) if d.fmt == "NCHW" else x


def _padded(x, g):
    (pt, pb), (pl, pr) = g.pads
    if not (pt or pb or pl or pr):
        return x
    n, h, w, c = x.shape
    out = backend.xp().zeros((n, h + pt + pb, w + pl + pr, c), dtype=x.dtype)
    out[:, pt:pt + h, pl:pl + w, :] = x
    return out


def _tap(g, i: int, j: int):
    """The slice of the padded input that filter tap (i, j) reads for every output."""
    (sh, sw), (dh, dw), (oh, ow) = g.strides, g.dilations, g.out
    r, s = i * dh, j * dw
    return (slice(None), slice(r, r + sh * (oh - 1) + 1, sh),
            slice(s, s + sw * (ow - 1) + 1, sw), slice(None))


def _depthwise(node):
    d = _Depthwise(node)

    def compute(ctx, x, w):
        x, w = backend.to_device(x), backend.to_device(w)
        if x.ndim != 4 or w.ndim != 4:
            raise _invalid("input and filter must be 4-dimensional")
        xl = _last(x, d)
        g = d.geometry(xl.shape, w.shape)
        kh, kw, c, m = w.shape
        ww = w.astype(xl.dtype, copy=False)
        xp_ = _padded(xl, g)
        out = backend.xp().zeros((xl.shape[0], *g.out, c, m), dtype=xl.dtype)
        if out.size:
            for i in range(kh):
                for j in range(kw):
                    out += xp_[_tap(g, i, j)][..., None] * ww[i, j]
        return _from_last(out.reshape(*out.shape[:3], c * m), d, x.dtype)

    return compute


def _depthwise_backprop_input(node):
    d = _Depthwise(node)

    def compute(ctx, input_sizes, w, dy):
        shape = d.shape_to_last(_sizes(backend.to_host(input_sizes), "input_sizes"))
        w, dy = backend.to_device(w), backend.to_device(dy)
        dyl = _last(dy, d)
        g = d.geometry(shape, w.shape)
        _check_dy(dyl, g, shape[0], w.shape[2], w.shape[3])
        kh, kw, c, m = w.shape
        dy5, ww = dyl.reshape(*dyl.shape[:3], c, m), w.astype(dyl.dtype, copy=False)
        (pt, pb), (pl, pr) = g.pads
        n, h, wd, _ = shape
        acc = backend.xp().zeros((n, h + pt + pb, wd + pl + pr, c), dtype=dyl.dtype)
        if dy5.size:
            for i in range(kh):
                for j in range(kw):
                    acc[_tap(g, i, j)] += (dy5 * ww[i, j]).sum(axis=-1)
        return _from_last(acc[:, pt:pt + h, pl:pl + wd, :], d, dy.dtype)

    return compute


def _depthwise_backprop_filter(node):
    d = _Depthwise(node)

    def compute(ctx, x, filter_sizes, dy):
        kh, kw, c, m = _sizes(backend.to_host(filter_sizes), "filter_sizes")
        x, dy = backend.to_device(x), backend.to_device(dy)
        xl, dyl = _last(x, d), _last(dy, d)
        g = d.geometry(xl.shape, (kh, kw, c, m))
        _check_dy(dyl, g, xl.shape[0], c, m)
        dy5 = dyl.reshape(-1, c, m)
        xp_ = _padded(xl, g)
        out = backend.xp().zeros((kh, kw, c, m), dtype=xl.dtype)
        if dy5.size:
            for i in range(kh):
                for j in range(kw):
                    cols = xp_[_tap(g, i, j)].reshape(-1, c, 1)
                    out[i, j] = (cols * dy5).sum(axis=0)
        return out.astype(dy.dtype, copy=False)

    return compute


hybrid("DepthwiseConv2dNative", _depthwise, {"T": FLOATS}, expensive=True)
hybrid("DepthwiseConv2dNativeBackpropInput", _depthwise_backprop_input, {"T": FLOATS},
       expensive=True)
hybrid("DepthwiseConv2dNativeBackpropFilter", _depthwise_backprop_filter, {"T": FLOATS},
       expensive=True)
