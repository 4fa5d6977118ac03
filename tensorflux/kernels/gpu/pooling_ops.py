"""GPU kernels of MaxPool, AvgPool and their gradients (ops/pooling_ops.py): one
elementwise pass per window tap over strided slices of the padded input, with the CPU
kernels' geometry (`_PoolGeometry`: windows larger than the input cost the input's size)
and their rules: max ignores padding, averages count only input elements, and a max's
gradient goes to the first tap holding the maximum.
"""

from __future__ import annotations

import numpy as np

from tensorflux.kernels import determinism
from tensorflux.kernels.cpu._nn_common import _invalid, _sizes
from tensorflux.kernels.cpu.pooling_ops import _avg_counts, _PoolGeometry
from tensorflux.kernels.gpu import _fused, backend
from tensorflux.kernels.gpu._common import FLOATS, hybrid


def _nhwc(x, geom):
    return x.transpose(0, 2, 3, 1) if geom.data_format == "NCHW" else x


def _from_nhwc(x, geom):
    xp = backend.xp()
    return xp.ascontiguousarray(x.transpose(0, 3, 1, 2)) if geom.data_format == "NCHW" \
        else x


def _padded(x, pads, value):
    if not any(b or a for b, a in pads):
        return x
    shape = [x.shape[0]] + [n + b + a for n, (b, a) in zip(x.shape[1:], pads, strict=True)]
    out = backend.xp().full(shape, value, dtype=x.dtype)
    out[(slice(None),) + tuple(slice(b, b + n) for n, (b, _) in
                               zip(x.shape[1:], pads, strict=True))] = x
    return out


def _crop(dxp, pads, shape):
    return dxp[(slice(None),) + tuple(slice(b, b + n) for (b, _), n in
                                      zip(pads, shape[1:], strict=True))]


def _max_pool(node):
    geom = _PoolGeometry(node)

    def compute(ctx, x):
        x = _nhwc(backend.to_device(x), geom)
        if x.ndim != 4:
            raise _invalid(f"input must be 4-dimensional, got {list(x.shape)}")
        out_shape, pads, ks = geom.resolve(x.shape)
        xp = backend.xp()
        if 0 in out_shape:
            return _from_nhwc(xp.zeros(out_shape, x.dtype), geom)
        if ks[2] == 1 and geom.s[2] == 1:
            xc = xp.ascontiguousarray(x)
            y = xp.empty(out_shape, dtype=x.dtype)
            if _fused.run("pool_max", xc, x.shape[1], x.shape[2], x.shape[3], out_shape[1],
                          out_shape[2], ks[0], ks[1], geom.s[0], geom.s[1], pads[0][0],
                          pads[1][0], y) is not None:
                return _from_nhwc(y, geom)
        xpad = _padded(x, pads, -np.inf)
        out = None
        for index in geom.taps(out_shape, ks):
            out = xpad[index].copy() if out is None else xp.fmax(out, xpad[index])
        return _from_nhwc(out, geom)

    return compute


def _max_pool_grad(node):
    geom = _PoolGeometry(node)

    def compute(ctx, x, y, dy):
        x, y, dy = (_nhwc(backend.to_device(v), geom) for v in (x, y, dy))
        out_shape, pads, ks = geom.resolve(x.shape)
        if tuple(dy.shape) != tuple(out_shape):
            raise _invalid(f"Expected grad shape to be {list(out_shape)}, but got "
                           f"{list(dy.shape)}")
        xp = backend.xp()
        if ks[2] == 1 and geom.s[2] == 1 and 0 not in out_shape:
            routed = _fused_route(x, dy, out_shape, pads, ks, geom)
            if routed is not None:
                return _from_nhwc(routed, geom)
        xpad = _padded(x, pads, -np.inf)
        dxp = xp.zeros(xpad.shape, dtype=dy.dtype)
        open_ = xp.ones(out_shape, dtype=bool)
        zero = dy.dtype.type(0)
        for index in geom.taps(out_shape, ks):
            hit = (xpad[index] == y) & open_
            dxp[index] += xp.where(hit, dy, zero)
            open_ &= ~hit
        return _from_nhwc(_crop(dxp, pads, x.shape), geom)

    return compute


def _fused_route(x, dy, out_shape, pads, ks, geom):
    """MaxPoolGrad in one CUDA pass (each window adds its gradient at its first maximum,
    atomically) or, for other dtypes and sizes and with TF_DETERMINISTIC_OPS, two
    (first-max tap per window, then a gather per input element, in a fixed order); None
    without them."""
    xp = backend.xp()
    x, dy = xp.ascontiguousarray(x), xp.ascontiguousarray(dy)
    n, h, w, c = x.shape
    oh, ow = out_shape[1], out_shape[2]
    (pt, _), (pl, _) = pads[0], pads[1]
    if x.dtype in (np.float32, np.float64) and x.size < 2 ** 31 and dy.dtype == x.dtype \
            and not determinism.op_determinism_required():  # (atomic adds: any order)
        dx = xp.zeros(x.shape, dtype=dy.dtype)
        if _fused.run("pool_scatter", dy, x, h, w, c, oh, ow, ks[0], ks[1], geom.s[0],
                      geom.s[1], pt, pl, dx) is not None:
            return dx
    arg = xp.empty(out_shape, dtype=np.int32)
    if _fused.run("pool_argmax", x, h, w, c, oh, ow, ks[0], ks[1], geom.s[0], geom.s[1],
                  pt, pl, arg) is None:
        return None
    dx = xp.empty(x.shape, dtype=dy.dtype)
    if _fused.run("pool_route", dy, arg, h, w, c, oh, ow, ks[0], ks[1], geom.s[0],
                  geom.s[1], pt, pl, dx) is None:
        return None
    return dx


def _avg_pool(node):
    geom = _PoolGeometry(node)

    def compute(ctx, x):
        x = _nhwc(backend.to_device(x), geom)
        if x.ndim != 4:
            raise _invalid(f"input must be 4-dimensional, got {list(x.shape)}")
        out_shape, pads, ks = geom.resolve(x.shape)
        xp = backend.xp()
        if 0 in out_shape:
            return _from_nhwc(xp.zeros(out_shape, x.dtype), geom)
        xpad = _padded(x, pads, 0)
        acc = None
        for index in geom.taps(out_shape, ks):
            acc = xpad[index].copy() if acc is None else acc + xpad[index]
        counts = _avg_counts(geom, ks, x.shape, out_shape, pads).astype(x.dtype)
        return _from_nhwc(acc / backend.to_device(counts), geom)

    return compute


def _avg_pool_grad(node):
    geom = _PoolGeometry(node)

    def compute(ctx, orig_input_shape, grad):
        shape = _sizes(backend.to_host(orig_input_shape), "orig_input_shape")
        if geom.data_format == "NCHW":
            shape = [shape[0], shape[2], shape[3], shape[1]]
        g = _nhwc(backend.to_device(grad), geom)
        out_shape, pads, ks = geom.resolve(shape)
        if tuple(g.shape) != tuple(out_shape):
            raise _invalid(f"Expected grad shape to be {list(out_shape)}, but got "
                           f"{list(g.shape)}")
        xp = backend.xp()
        padded = [shape[0]] + [n + b + a for n, (b, a) in zip(shape[1:], pads, strict=True)]
        dxp = xp.zeros(padded, dtype=g.dtype)
        counts = _avg_counts(geom, ks, shape, out_shape, pads).astype(g.dtype)
        share = g / backend.to_device(counts)
        for index in geom.taps(out_shape, ks):
            dxp[index] += share
        return _from_nhwc(_crop(dxp, pads, shape), geom)

    return compute


hybrid("MaxPool", _max_pool, {"T": FLOATS}, expensive=True)
hybrid("MaxPoolGrad", _max_pool_grad, {"T": FLOATS}, expensive=True)
hybrid("AvgPool", _avg_pool, {"T": FLOATS}, expensive=True)
hybrid("AvgPoolGrad", _avg_pool_grad, {"T": FLOATS}, expensive=True)
