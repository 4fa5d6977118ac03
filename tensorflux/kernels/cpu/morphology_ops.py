"""CPU kernels of Dilation2D and its gradients (ops/morphology_ops.py): one pass per
filter tap over strided views of the input padded with the dtype's lowest value (padding
never wins a max); the gradients go to the first tap (row-major) reaching the maximum, as
TensorFlow's kernels route them."""

from __future__ import annotations

import numpy as np

from tensorflux.kernels import interrupt
from tensorflux.kernels.cpu._nn_common import _invalid, _pad, _window
from tensorflux.kernels.cpu.pooling_ops import _lowest
from tensorflux.kernels.registry import kernel_factory


class _Geometry:
    def __init__(self, node):
        a = node.attrs
        self.s = a["strides"][1:3]
        self.r = a["rates"][1:3]
        self.padding = a["padding"]

    def resolve(self, x, f):
        if x.ndim != 4 or f.ndim != 3:
            raise _invalid(f"input must be 4-dimensional and filter 3-dimensional, got "
                           f"{list(x.shape)} and {list(f.shape)}")
        if x.shape[3] != f.shape[2]:
            raise _invalid(f"input and filter must have the same depth: {x.shape[3]} vs "
                           f"{f.shape[2]}")
        oh, pt, pb = _window(x.shape[1], f.shape[0], self.s[0], self.r[0], self.padding)
        ow, pl, pr = _window(x.shape[2], f.shape[1], self.s[1], self.r[1], self.padding)
        return (oh, ow), [(pt, pb), (pl, pr)]

    def taps(self, f, out_hw, pads):
        """(i, j, row slice, column slice) into the padded input for each filter tap."""
        (oh, ow), (sh, sw), (rh, rw) = out_hw, self.s, self.r
        for i in range(f.shape[0]):
            for j in range(f.shape[1]):
                yield i, j, slice(i * rh, i * rh + (oh - 1) * sh + 1, sh), \
                    slice(j * rw, j * rw + (ow - 1) * sw + 1, sw)


def _forward(geom, x, f):
    """(max over taps of x + f, index of the first tap reaching it, pads, output size)."""
    out_hw, pads = geom.resolve(x, f)
    xp = _pad(x, pads + [(0, 0)], _lowest(x.dtype))
    best = np.full((x.shape[0],) + out_hw + (x.shape[3],), _lowest(x.dtype), dtype=x.dtype)
    which = np.zeros(best.shape, dtype=np.int64)
    for i, j, rows, cols in geom.taps(f, out_hw, pads):
        interrupt.check()
        val = xp[:, rows, cols, :] + f[i, j]
        better = val > best
        best = np.where(better, val, best)
        which = np.where(better, i * f.shape[1] + j, which)
    return best, which, pads, out_hw


@kernel_factory("Dilation2D", expensive=True)
def _dilation2d(node):
    geom = _Geometry(node)

    def compute(ctx, x, f):
        return _forward(geom, x, f)[0]

    return compute


@kernel_factory("Dilation2DBackpropInput", expensive=True)
def _dilation2d_backprop_input(node):
    geom = _Geometry(node)

    def compute(ctx, x, f, dy):
        _, which, pads, out_hw = _forward(geom, x, f)
        if dy.shape != which.shape:
            raise _invalid(f"out_backprop has shape {list(dy.shape)}, expected "
                           f"{list(which.shape)}")
        (pt, pb), (pl, pr) = pads
        dxp = np.zeros((x.shape[0], x.shape[1] + pt + pb, x.shape[2] + pl + pr, x.shape[3]),
                       dtype=dy.dtype)
        for i, j, rows, cols in geom.taps(f, out_hw, pads):
            dxp[:, rows, cols, :] += np.where(which == i * f.shape[1] + j, dy, 0)
        return dxp[:, pt:pt + x.shape[1], pl:pl + x.shape[2], :]

    return compute


@kernel_factory("Dilation2DBackpropFilter", expensive=True)
def _dilation2d_backprop_filter(node):
    geom = _Geometry(node)

    def compute(ctx, x, f, dy):
        _, which, pads, out_hw = _forward(geom, x, f)
        if dy.shape != which.shape:
            raise _invalid(f"out_backprop has shape {list(dy.shape)}, expected "
                           f"{list(which.shape)}")
        df = np.zeros(f.shape, dtype=dy.dtype)
        for i, j, _, _ in geom.taps(f, out_hw, pads):
            df[i, j] = np.where(which == i * f.shape[1] + j, dy, 0).sum(axis=(0, 1, 2))
        return df

    return compute
