"""GPU kernels of Conv2D and its two gradients (ops/conv_ops.py), by GEMM: the windows of
the padded input are gathered into one matrix (im2col, a strided view copied once), and
the convolution is one matrix product through cuBLAS; the filter gradient is the product
of the same matrix with the output gradient; the input gradient is one product giving
every tap's contribution, added back tap by tap into the padded input (col2im).

The geometry (strides, dilations, SAME/VALID/EXPLICIT padding) is the CPU kernels'
(`_ConvGeometry`), so both devices agree on every shape and error.
"""

from __future__ import annotations

from tensorflux.kernels.cpu._nn_common import _invalid, _sizes
from tensorflux.kernels.cpu.conv_ops import _ConvGeometry
from tensorflux.kernels.gpu import _fused, backend, cudnn
from tensorflux.kernels.gpu._common import FLOATS, hybrid


def _nhwc(x, g: _ConvGeometry):
    return x.transpose(0, 2, 3, 1) if g.data_format == "NCHW" else x


def _from_nhwc(x, g: _ConvGeometry):
    return backend.xp().ascontiguousarray(x.transpose(0, 3, 1, 2)) \
        if g.data_format == "NCHW" else x


def _padded(x, pads):
    (pt, pb), (pl, pr) = pads
    if not (pt or pb or pl or pr):
        return backend.xp().ascontiguousarray(x)
    n, h, w, c = x.shape
    out = backend.xp().zeros((n, h + pt + pb, w + pl + pr, c), dtype=x.dtype)
    out[:, pt:pt + h, pl:pl + w, :] = x
    return out


def _pointwise(kh, kw, pads, g: _ConvGeometry) -> bool:
    """A 1x1 convolution with stride 1 and no padding: a plain matrix product."""
    return kh == kw == 1 and g.sh == g.sw == 1 and not any(b or a for b, a in pads)


def _columns(xp_, kh, kw, oh, ow, g: _ConvGeometry):
    """(N*oh*ow, kh*kw*C) windows of the padded NHWC input."""
    n, _, _, c = xp_.shape
    if kh == kw == 1 and g.sh == g.sw == 1:
        return xp_.reshape(n * oh * ow, c)
    s0, s1, s2, s3 = xp_.strides
    view = backend.as_strided(xp_, (n, oh, ow, kh, kw, c),
                              (s0, s1 * g.sh, s2 * g.sw, s1 * g.dh, s2 * g.dw, s3))
    return view.reshape(n * oh * ow, kh * kw * c)


def _symmetric(x, pads):
    """(input padded by the asymmetric part of `pads`, the symmetric pads left for cuDNN)."""
    (pt, pb), (pl, pr) = pads
    ph, pw = min(pt, pb), min(pl, pr)
    extra = [(pt - ph, pb - ph), (pl - pw, pr - pw)]
    if any(b or a for b, a in extra):
        x = _padded(x, extra)
    return backend.xp().ascontiguousarray(x), (ph, pw)


def _krsc(w):
    return backend.xp().ascontiguousarray(w.transpose(3, 0, 1, 2))


def _check(x, w):
    if x.ndim != 4 or w.ndim != 4:
        raise _invalid(f"input and filter must be 4-dimensional, got {list(x.shape)} and "
                       f"{list(w.shape)}")
    if x.shape[3] != w.shape[2]:
        raise _invalid(f"input depth must be evenly divisible by filter depth: "
                       f"{x.shape[3]} vs {w.shape[2]} (grouped convolutions are not "
                       "implemented on the GPU)")


def _conv2d(node):
    g = _ConvGeometry(node)

    def compute(ctx, x, w):
        x, w = _nhwc(backend.to_device(x), g), backend.to_device(w)
        _check(x, w)
        kh, kw, c, f = w.shape
        (oh, ow), pads = g.resolve(x.shape[1], x.shape[2], kh, kw)
        if cudnn.available():
            xs, sym = _symmetric(x, pads)
            y = cudnn.forward(xs, _krsc(w), (x.shape[0], oh, ow, f), sym, (g.sh, g.sw),
                              (g.dh, g.dw))
            if y is not None:
                return _from_nhwc(y, g)
        cols = _columns(_padded(x, pads), kh, kw, oh, ow, g)
        y = (cols @ w.reshape(kh * kw * c, f)).reshape(x.shape[0], oh, ow, f)
        return _from_nhwc(y, g)

    return compute


def _conv2d_backprop_filter(node):
    g = _ConvGeometry(node)

    def compute(ctx, x, filter_sizes, dy):
        kh, kw, c, f = _sizes(backend.to_host(filter_sizes), "filter_sizes")
        x, dy = _nhwc(backend.to_device(x), g), _nhwc(backend.to_device(dy), g)
        (oh, ow), pads = g.resolve(x.shape[1], x.shape[2], kh, kw)
        if dy.shape[1:3] != (oh, ow):
            raise _invalid(f"Conv2DBackpropFilter: out_backprop has spatial size "
                           f"{list(dy.shape[1:3])}, expected {[oh, ow]}")
        if cudnn.available():
            xs, sym = _symmetric(x, pads)
            dw = cudnn.backward_filter(xs, backend.xp().ascontiguousarray(dy),
                                       (f, kh, kw, c), sym, (g.sh, g.sw), (g.dh, g.dw))
            if dw is not None:
                return backend.xp().ascontiguousarray(dw.transpose(1, 2, 3, 0))
        cols = _columns(_padded(x, pads), kh, kw, oh, ow, g)
        dw = cols.T @ dy.reshape(-1, f)
        return dw.reshape(kh, kw, c, f)

    return compute


def _conv2d_backprop_input(node):
    g = _ConvGeometry(node)

    def compute(ctx, input_sizes, w, dy):
        shape = _sizes(backend.to_host(input_sizes), "input_sizes")
        if g.data_format == "NCHW":
            shape = [shape[0], shape[2], shape[3], shape[1]]
        n, h, wd, c = shape
        w, dy = backend.to_device(w), _nhwc(backend.to_device(dy), g)
        kh, kw, _, f = w.shape
        (oh, ow), pads = g.resolve(h, wd, kh, kw)
        if dy.shape[1:3] != (oh, ow):
            raise _invalid(f"Conv2DBackpropInput: out_backprop has spatial size "
                           f"{list(dy.shape[1:3])}, expected {[oh, ow]}")
        (pt, pb), (pl, pr) = pads
        xp = backend.xp()
        if cudnn.available():
            ph, pw = min(pt, pb), min(pl, pr)
            padded = (n, h + pt + pb - 2 * ph, wd + pl + pr - 2 * pw, c)
            dxs = cudnn.backward_data(_krsc(w), xp.ascontiguousarray(dy), padded, (ph, pw),
                                      (g.sh, g.sw), (g.dh, g.dw))
            if dxs is not None:
                top, left = pt - ph, pl - pw
                return _from_nhwc(dxs[:, top:top + h, left:left + wd, :], g)
        dcols = dy.reshape(-1, f) @ w.reshape(kh * kw * c, f).T
        if _pointwise(kh, kw, pads, g):
            return _from_nhwc(dcols.reshape(n, h, wd, c), g)
        out = xp.empty((n, h, wd, c), dtype=dy.dtype)
        if _fused.run("col2im", dcols, h, wd, c, oh, ow, kh, kw, g.sh, g.sw, g.dh, g.dw,
                      pt, pl, out) is not None:
            return _from_nhwc(out, g)
        dcols = dcols.reshape(n, oh, ow, kh, kw, c)
        dx = xp.zeros((n, h + pt + pb, wd + pl + pr, c), dtype=dy.dtype)
        span_h, span_w = g.sh * (oh - 1) + 1, g.sw * (ow - 1) + 1
        for i in range(kh):
            for j in range(kw):
                r, s = i * g.dh, j * g.dw
                dx[:, r:r + span_h:g.sh, s:s + span_w:g.sw, :] += dcols[:, :, :, i, j, :]
        return _from_nhwc(dx[:, pt:pt + h, pl:pl + wd, :], g)

    return compute


hybrid("Conv2D", _conv2d, {"T": FLOATS}, expensive=True)
hybrid("Conv2DBackpropFilter", _conv2d_backprop_filter, {"T": FLOATS}, expensive=True)
hybrid("Conv2DBackpropInput", _conv2d_backprop_input, {"T": FLOATS}, expensive=True)
